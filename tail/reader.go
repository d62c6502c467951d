package tail

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail/internal/getrecords"
)

// Pacing. A shard serves 5 GetRecords calls per second to all its readers
// together, and every attempt counts, retries included: each reader keeps
// an awscall.Pacer for its GetRecords and one for its GetShardIterator
// (attempts at least minInterval apart, the 2 MiB a second of reads, a
// second of quiet after a throttle); a caught-up shard is polled every
// PollInterval. The lease table's own retries (saveStart, leasesync) wait
// errorBackoffMin to errorBackoffMax.
const (
	errorBackoffMin = 250 * time.Millisecond
	errorBackoffMax = 5 * time.Second
	// maxDecompressed bounds --decompress (a gzip bomb stays compressed).
	maxDecompressed = 64 << 20
)

// throttleWarnAfter: a shard throttled, or failing, this long gets a
// warning (once per run of failures): someone else is reading it hard, or
// the service is in trouble. Either way the reader keeps asking and loses
// nothing. A var for tests.
var throttleWarnAfter = time.Minute

// LatestMargin is how far before its first LATEST iterator a reader goes
// back when it must ask for a new iterator before any record arrived (and
// how far before its making a --from-tip lease says its shard starts, for
// a successor): room for a local clock ahead of the service's.
const LatestMargin = 10 * time.Second

type startPoint struct {
	kind types.ShardIteratorType
	seq  string
	ts   time.Time
}

func (s startPoint) String() string {
	switch s.kind {
	case types.ShardIteratorTypeAfterSequenceNumber, types.ShardIteratorTypeAtSequenceNumber:
		return string(s.kind) + " " + s.seq
	case types.ShardIteratorTypeAtTimestamp:
		return string(s.kind) + " " + s.ts.UTC().Format(time.RFC3339Nano)
	}
	return string(s.kind)
}

// reader reads one shard from its start to its end.
type reader struct {
	t         *Tailer
	id        string
	start     startPoint
	rng       lineage.HashRange
	haveRange bool
	// closed: a listing showed the shard closed (at the start or since);
	// set by the scheduler.
	closed atomic.Bool

	// skip: on resume inside a KPL aggregate or a CloudWatch Logs batch,
	// what of that record was delivered already.
	skip resumeSkip
	// --cwlogs: a record that is not a batch was warned about; the
	// CONTROL_MESSAGE batches skipped.
	warnedNotCWLogs bool
	controls        int64

	lastSeq string // last record received (and delivered)
	atTip   bool
	failing bool // the last call failed
	// pacer paces GetRecords; iterPacer GetShardIterator, which has a
	// budget of its own (5 calls per second per shard, apart from
	// GetRecords'), so a new reader's first GetRecords need not wait.
	pacer, iterPacer *awscall.Pacer
	rand             *rand.Rand
	// revoked: the shard's lease went to another worker. The reader may
	// still hold a page; it must record nothing more (no position, no end).
	revoked atomic.Bool
	gen     int
	// latestFrom: when a reader that starts at LATEST asked for its first
	// iterator (minus a margin). A new iterator before any record arrived
	// starts AT_TIMESTAMP there: asking for LATEST again would skip what
	// was written in between.
	latestFrom  time.Time
	askedLatest bool
	// until (Unix nanoseconds, 0 = no limit): with a lease table, nothing
	// is delivered from then on, since others may take the lease; set by
	// the scheduler.
	until atomic.Int64
	// recordStart: a leased shard read from its tip; its start is written
	// to the table before the first read (see Position.From).
	recordStart bool
	// calling: when the GetRecords in flight was sent (Unix nanoseconds;
	// 0 = none), for --idle-exit; subscribed, when the last event came.
	calling atomic.Int64
	// holding: the reader has records it fetched and has not delivered
	// yet (a page or an event on its way to stdout). Such a reader is
	// never idle, whatever its last answer said about its tip: set before
	// the call counts as answered, cleared once the page was delivered.
	holding atomic.Bool
	// endWait: a shard listed as closed whose reader is caught up without
	// reaching its end (see waitingForEnd).
	endWait endWait
}

// endWait tracks a closed shard whose reader keeps finding nothing without
// the service saying it ended: its children cannot start until it does.
type endWait struct {
	since  time.Time // the first caught-up answer since the shard closed
	warned bool
}

// endWaitWarnAfter: a closed shard caught up this long without its end is
// said once on stderr (a var for tests).
var endWaitWarnAfter = time.Minute

// waitingForEnd notes a caught-up answer for a closed shard that did not
// end it. A backend that never ends a closed shard (some emulators) would
// otherwise hold its children, and --idle-exit, back in silence: --debug
// says it at once, and after endWaitWarnAfter stderr says it once.
func (r *reader) waitingForEnd(now time.Time) {
	w := &r.endWait
	if w.since.IsZero() {
		w.since = now
		r.logf("closed, and caught up without reaching its end yet; its children wait for its end")
		return
	}
	if !w.warned && now.Sub(w.since) >= endWaitWarnAfter {
		w.warned = true
		r.t.opts.Warnf("waiting for %s to end before reading its children: it is closed, and for %s the service has answered with no records and without its end", r.id, now.Sub(w.since).Round(time.Second))
	}
}

// unanswered reports whether a GetRecords has been in flight for d: its
// answer may hold records, so the reader is not known to be at its tip.
// A subscribed reader (efo.go) awaits its next event all the time, and
// the service sends them while idle too: for it, only a silence longer
// than eventsWithin counts.
func (r *reader) unanswered(now time.Time, d time.Duration) bool {
	if r.t.opts.EFO != nil {
		d = max(d, eventsWithin)
	}
	c := r.calling.Load()
	return c != 0 && now.Sub(time.Unix(0, c)) >= d
}

// expired reports whether the reader's lease may have expired for others.
func (r *reader) expired() bool {
	u := r.until.Load()
	return u != 0 && !r.t.now().Before(time.Unix(0, u))
}

func (r *reader) logf(format string, args ...any) {
	r.t.opts.Logf("shard %s: "+format, append([]any{r.id}, args...)...)
}

func (r *reader) run(ctx context.Context) error {
	r.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	r.pacer = awscall.NewPacer(r.rand, r.t.opts.minInterval)
	r.iterPacer = awscall.NewPacer(r.rand, r.t.opts.minInterval)
	ctx = awsdebug.WithShard(ctx, r.id)
	if r.recordStart {
		if err := r.saveStart(ctx); err != nil {
			return r.stopErr(ctx, err)
		}
	}
	it, err := r.iterator(ctx)
	if err != nil {
		return r.stopErr(ctx, err)
	}
	if it == "" {
		return r.end(nil) // shard gone
	}
	var fails failureRun
	polls := 0
	ticket := &pageTicket{budget: r.t.pages}
	tctx := getrecords.WithReserve(ctx, ticket.grow)
	weight := int64(firstPageWeight)
	for {
		if err := r.wait(ctx); err != nil {
			return nil // stopping
		}
		// Room for a page like the last one, then a call slot: a reader
		// waiting for room (behind a slow stdout) holds no slot, so quiet
		// shards keep being read. Pacing counts from the call itself,
		// below, so these waits only delay; none is under a call's
		// deadline.
		if err := ticket.hold(ctx, weight); err != nil {
			return nil // stopping
		}
		if err := r.t.calls.acquire(ctx); err != nil {
			ticket.drop()
			return nil // stopping
		}
		attempt := r.t.now()
		r.pacer.Attempt(attempt)
		r.calling.Store(attempt.UnixNano())
		out, err := r.getRecords(tctx, it)
		if err == nil && len(out.Records) > 0 {
			r.holding.Store(true) // before the call counts as answered
		}
		r.calling.Store(0)
		r.t.calls.release()
		if err != nil {
			ticket.drop()
			next, done, err := r.callFailed(ctx, err, attempt, &fails)
			if done {
				return err
			}
			if next != "" {
				it = next
			}
			continue
		}
		fails = failureRun{}
		polls++

		batch, size := r.convert(out.Records)
		if r.t.opts.OnPoll != nil {
			r.t.opts.OnPoll(PollStats{ShardID: r.id, Records: len(out.Records), Bytes: size, MillisBehind: aws.ToInt64(out.MillisBehindLatest), At: attempt})
		}
		more := true
		if len(batch) > 0 {
			// A slow stdout makes this wait, holding the page: that is the
			// back-pressure, and the page is never thrown away for it.
			more, err = r.t.deliverBatch(r, batch)
		}
		r.holding.Store(false)
		ticket.drop()
		weight = int64(size)
		if err != nil {
			return err
		}
		if !more {
			return nil // --max-records reached
		}
		if len(out.Records) > 0 {
			// A copy: the page's strings share blocks, which this would keep.
			r.lastSeq = strings.Clone(aws.ToString(out.Records[len(out.Records)-1].SequenceNumber))
		}
		if out.NextShardIterator == nil {
			return r.end(out.ChildShards)
		}
		it = *out.NextShardIterator
		r.pace(out, size, attempt, polls)
	}
}

// failureRun is a reader's current run of failed calls, for the warning
// when it lasts (the waits are the pacer's).
type failureRun struct {
	failures int
	since    time.Time // the first failure of the run
	warned   bool
}

// callFailed decides what a failed GetRecords means: wait and ask again
// (throttling and transient errors, for as long as they last), a new
// iterator (next), the shard's end, or an error that stops the tail
// (done).
func (r *reader) callFailed(ctx context.Context, err error, attempt time.Time, f *failureRun) (next string, done bool, _ error) {
	// At its tip only after an answer since the last failure: a reader
	// whose calls fail does not know what it is missing.
	r.setFailing()
	if f.failures == 0 {
		f.since = attempt
	}
	f.failures++
	warn := func(format string, args ...any) {
		if !f.warned && attempt.Sub(f.since) >= throttleWarnAfter {
			f.warned = true
			r.t.opts.Warnf(format, append([]any{r.id, attempt.Sub(f.since).Round(time.Second)}, args...)...)
		}
	}
	verdict := awscall.OnRead(err)
	switch {
	case ctx.Err() != nil:
		return "", true, nil
	case verdict == awscall.Throttle:
		// Never drop: wait and ask again with the same iterator.
		warn("shard %s has been throttled for %s: other consumers share its 5 GetRecords calls and 2 MiB per second; tail keeps asking and loses nothing")
		d := r.pacer.Throttled(attempt)
		r.logf("throttled, retrying in %s", d.Round(time.Millisecond))
	case verdict == awscall.Renew:
		r.logf("iterator expired; resuming after %s", nonEmpty(r.lastSeq, "the start"))
		it, err := r.iterator(ctx)
		if err != nil {
			return "", true, r.stopErr(ctx, err)
		}
		if it == "" {
			return "", true, r.end(nil)
		}
		return it, false, nil
	case verdict == awscall.Gone:
		if err := r.notFound(ctx); err != nil {
			return "", true, err
		}
		return "", true, r.end(nil)
	case verdict == awscall.Retry:
		// Retried for as long as it lasts: giving up would end the tail
		// with records unread.
		warn("shard %s: GetRecords has failed for %s (%v); tail keeps asking and loses nothing", err)
		d := r.pacer.Failed(attempt)
		r.logf("GetRecords failed (%v), retrying in %s", err, d.Round(time.Millisecond))
	default:
		return "", true, fmt.Errorf("shard %s: %w", r.id, err)
	}
	return "", false, nil
}

// pace sets when the next call may start after an answer, and whether
// the reader is at its tip.
func (r *reader) pace(out *kinesis.GetRecordsOutput, size int, attempt time.Time, polls int) {
	behind := aws.ToInt64(out.MillisBehindLatest) > 0
	switch {
	case len(out.Records) > 0:
		// Catching up: next call as soon as the quotas allow.
		r.pacer.Answered(attempt, size)
		r.setTip(false)
		r.endWait.since = time.Time{} // progress
	case behind:
		// Empty but behind: data lies further on; keep going.
		r.pacer.Answered(attempt, 0)
		r.setTip(false)
	default:
		if polls == 1 {
			// The first call no longer waits the pacing floor after
			// GetShardIterator; when it finds nothing (a child opened a
			// moment before its first record), look again when it used to
			// be made, so a reader is never later than before.
			r.pacer.Answered(attempt, 0)
		} else {
			r.pacer.Idle(attempt, r.t.opts.PollInterval)
		}
		// A shard known to be closed is not "at its tip" until it ends.
		closed := r.closed.Load()
		if closed {
			r.waitingForEnd(attempt)
		}
		r.setTip(!closed)
	}
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// notFound decides what a ResourceNotFound for the shard means. A
// closed shard can be trimmed by retention while it is read: that is its
// end, with no children to wait for (as the KCL takes it). An open shard
// cannot be: the stream was deleted, re-created, or the wrong one is
// asked; recording SHARD_END for it would skip it for good, so that is an
// error. A shard the reader last knew open may have been resharded and
// trimmed since the last listing merged (listings failing, or far apart):
// a listing now whose shards name it as a parent says so.
func (r *reader) notFound(ctx context.Context) error {
	if r.closed.Load() {
		r.logf("shard not found (trimmed by retention); treating it as read")
		return nil
	}
	if shards, err := r.t.list(ctx); err == nil && trimmedParent(shards, r.id) {
		r.closed.Store(true)
		r.logf("shard not found, and listed shards name it as a parent: closed and trimmed by retention since the last listing; treating it as read")
		return nil
	}
	return fmt.Errorf("shard %s of stream %s was not found although it was open: was the stream deleted or re-created?", r.id, r.t.streamLabel())
}

// trimmedParent reports whether id is absent from shards while one of
// them names it as a parent: the lineage's trimmed shard.
func trimmedParent(shards []types.Shard, id string) bool {
	g, err := lineage.Build(shards)
	if err != nil {
		return false
	}
	s := g.Shard(id)
	return s != nil && s.State == lineage.StateTrimmed
}

// saveStart writes to the lease table where a leased shard read from its
// tip starts, before anything is read: the moment of its first iterator,
// less the margin for a local clock ahead of the service's. Whoever takes
// the lease next reads AT_TIMESTAMP from there (records of up to that
// margin before our start included) instead of from their own tip, which
// would skip what arrived in between. A failing table is retried while
// the lease lasts.
func (r *reader) saveStart(ctx context.Context) error {
	r.latestFrom = r.t.now().Add(-LatestMargin).UTC().Truncate(time.Millisecond)
	p := Position{From: r.latestFrom}
	for attempt := 1; ; attempt++ {
		if r.expired() {
			return errLeaseExpired
		}
		cctx, cancel := context.WithTimeout(ctx, r.t.opts.Leases.LeaseDuration()/5)
		err := r.t.opts.Leases.Checkpoint(cctx, r.id, p)
		cancel()
		switch {
		case err == nil:
			r.t.lease.startSaved(r.id, p)
			return nil
		case errors.Is(err, ErrLeaseLost):
			return errLeaseExpired // the next sync tells whose it is
		case ctx.Err() != nil:
			return ctx.Err()
		}
		d := backoff(r.rand, errorBackoffMin, errorBackoffMax, attempt)
		r.logf("recording the start in the lease table failed (retrying in %s): %v", d.Round(time.Millisecond), err)
		if err := awscall.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// stopErr turns an error into the reader's result: nothing when stopping.
func (r *reader) stopErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// setTip reports an answer: at the shard's tip or not.
func (r *reader) setTip(at bool) {
	if r.atTip != at || r.failing {
		r.atTip, r.failing = at, false
		r.t.send(tipEvent{id: r.id, gen: r.gen, atTip: at})
	}
}

// setFailing reports a failed call: not at the tip until an answer.
func (r *reader) setFailing() {
	if !r.failing {
		r.atTip, r.failing = false, true
		r.t.send(tipEvent{id: r.id, gen: r.gen, failing: true})
	}
}

// end records SHARD_END (every record was delivered before this) and tells
// the scheduler, which saves it before any child starts.
func (r *reader) end(children []types.ChildShard) error {
	if !r.t.markEnd(r) {
		return nil
	}
	r.t.send(endEvent{id: r.id, gen: r.gen, children: children})
	return nil
}

// wait sleeps until the pacer allows the next attempt.
func (r *reader) wait(ctx context.Context) error {
	return awscall.Sleep(ctx, r.pacer.Until(r.t.now()))
}

func (r *reader) getRecords(ctx context.Context, it string) (*kinesis.GetRecordsOutput, error) {
	cctx, cancel := context.WithTimeout(ctx, r.t.opts.CallTimeout)
	defer cancel()
	in := &kinesis.GetRecordsInput{ShardIterator: aws.String(it), StreamARN: arnIfSet(r.t.opts.StreamARN)}
	if r.t.opts.Limit > 0 {
		in.Limit = aws.Int32(r.t.opts.Limit)
	}
	return r.t.api.GetRecords(cctx, in, awscall.Once, getrecords.Option)
}

func arnIfSet(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// iterator gets a shard iterator: after the last record received, or at the
// reader's start when nothing was received yet. "" means the shard is gone.
func (r *reader) iterator(ctx context.Context) (string, error) {
	sp := r.start
	switch {
	case r.lastSeq != "":
		sp = startPoint{kind: types.ShardIteratorTypeAfterSequenceNumber, seq: r.lastSeq}
	case sp.kind == types.ShardIteratorTypeLatest && r.askedLatest:
		// A new iterator before any record arrived: LATEST again would skip
		// what was written since the first one.
		sp = startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: r.latestFrom}
	}
	in := &kinesis.GetShardIteratorInput{
		ShardId:           aws.String(r.id),
		ShardIteratorType: sp.kind,
		StreamName:        nilIfARN(r.t.opts.StreamName, r.t.opts.StreamARN),
		StreamARN:         arnIfSet(r.t.opts.StreamARN),
	}
	switch sp.kind {
	case types.ShardIteratorTypeAfterSequenceNumber, types.ShardIteratorTypeAtSequenceNumber:
		in.StartingSequenceNumber = aws.String(sp.seq)
	case types.ShardIteratorTypeAtTimestamp:
		in.Timestamp = aws.Time(sp.ts)
	}
	var fails failureRun
	for {
		if err := awscall.Sleep(ctx, r.iterPacer.Until(r.t.now())); err != nil {
			return "", err
		}
		if err := r.t.calls.acquire(ctx); err != nil {
			return "", err
		}
		attempt := r.t.now()
		r.iterPacer.Attempt(attempt)
		if sp.kind == types.ShardIteratorTypeLatest && r.latestFrom.IsZero() {
			// The margin covers a local clock ahead of the service's.
			r.latestFrom = attempt.Add(-LatestMargin)
		}
		r.askedLatest = r.askedLatest || sp.kind == types.ShardIteratorTypeLatest
		cctx, cancel := context.WithTimeout(ctx, r.t.opts.CallTimeout)
		out, err := r.t.api.GetShardIterator(cctx, in, awscall.Once)
		cancel()
		r.t.calls.release()
		if err == nil {
			r.iterPacer.Answered(attempt, 0)
			return aws.ToString(out.ShardIterator), nil
		}
		class := awserr.Classify(err)
		verdict := awscall.OnRead(err)
		switch {
		case ctx.Err() != nil:
			return "", ctx.Err()
		case verdict == awscall.Gone:
			return "", r.notFound(ctx)
		case class.Kind == awserr.Invalid && sp.kind == types.ShardIteratorTypeAfterSequenceNumber && r.skip.seq == "":
			// AWS refuses "after" the last record of a closed shard ("has
			// reached max possible value"): ask for that record and skip it.
			r.logf("resuming after %s refused (%s); reading at it and skipping it", sp.seq, class.Message)
			sp = startPoint{kind: types.ShardIteratorTypeAtSequenceNumber, seq: sp.seq}
			in.ShardIteratorType, in.StartingSequenceNumber = sp.kind, aws.String(sp.seq)
			r.skip = resumeSkip{seq: sp.seq, sub: math.MaxInt64}
		case class.Kind == awserr.Invalid && (sp.kind == types.ShardIteratorTypeAfterSequenceNumber || sp.kind == types.ShardIteratorTypeAtSequenceNumber):
			return "", fmt.Errorf("shard %s: the service refused to resume at sequence number %s (from the checkpoint or the last record): %s", r.id, sp.seq, class.Message)
		case verdict == awscall.Throttle || verdict == awscall.Retry:
			// Retried for as long as it lasts, as GetRecords.
			if fails.failures++; fails.failures == 1 {
				fails.since = attempt
			} else if !fails.warned && attempt.Sub(fails.since) >= throttleWarnAfter {
				fails.warned = true
				r.t.opts.Warnf("shard %s: GetShardIterator has failed for %s (%v); tail keeps asking", r.id, attempt.Sub(fails.since).Round(time.Second), err)
			}
			if verdict == awscall.Throttle {
				r.iterPacer.Throttled(attempt)
			} else {
				r.iterPacer.Failed(attempt)
			}
		default:
			return "", fmt.Errorf("shard %s: %w", r.id, err)
		}
	}
}

func nilIfARN(name, arn string) *string {
	if arn != "" {
		return nil
	}
	return aws.String(name)
}

// backoff is the wait of the lease table's retries.
var backoff = awscall.Backoff
