package efo

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// API is the part of the Kinesis client a Reader uses; *kinesis.Client
// satisfies it.
type API interface {
	SubscribeToShard(ctx context.Context, in *kinesis.SubscribeToShardInput, optFns ...func(*kinesis.Options)) (*kinesis.SubscribeToShardOutput, error)
}

var _ API = (*kinesis.Client)(nil)

// Defaults of Options (docs/KINESIS-NOTES.md §8).
const (
	// A subscription lasts at most 5 minutes; its own deadline is a little
	// longer, so the service ends it first.
	DefaultSubscriptionTimeout = 5*time.Minute + 30*time.Second
	DefaultCallTimeout         = 20 * time.Second
	// The service sends events while a subscription is idle too (every
	// few seconds); a minute of silence is a stalled connection.
	DefaultIdleTimeout = time.Minute
	// After a subscription closes, the service refuses a new one of the
	// same consumer and shard for up to 5 s (kinesis-mock: 1 to 2 s).
	DefaultInUseTimeout = 30 * time.Second
	DefaultMaxFailures  = 10
	DefaultLatestMargin = 10 * time.Second
	defaultInUseBackoff = time.Second
	defaultRetryBackoff = 250 * time.Millisecond
	maxBackoff          = 5 * time.Second
)

// Options configure a Reader. ConsumerARN, ShardID and Start are required.
type Options struct {
	ConsumerARN string
	ShardID     string
	Start       Position

	// Pacer spaces the calls; share one between the readers of a process.
	// nil: the reader's own, at DefaultCallInterval.
	Pacer *Pacer
	// SubscriptionTimeout is the deadline of one subscription, stream
	// included; CallTimeout bounds the call until its first answer;
	// IdleTimeout is the longest silence between events before the
	// reader takes the connection for dead and subscribes again.
	SubscriptionTimeout, CallTimeout, IdleTimeout time.Duration
	// InUseTimeout is how long the reader keeps asking while the service
	// answers ResourceInUse before it gives up with an
	// *InUseError.
	InUseTimeout time.Duration
	// MaxFailures is how many subscriptions in a row may fail (5xx,
	// network, throttling, streams that end before any event) before the
	// reader gives up with the last error.
	MaxFailures int
	// LatestMargin: a LATEST start that must subscribe again before any
	// record came subscribes AT_TIMESTAMP of its first call minus this
	// margin (records carry the service's clock, not ours), so nothing
	// written in between is skipped. Negative: no margin.
	LatestMargin time.Duration
	// InUseBackoff and RetryBackoff are the first waits after a
	// ResourceInUse and after another failure; each doubles up
	// to 5 s. Tests shorten them.
	InUseBackoff, RetryBackoff time.Duration

	// Logf receives the debug lines: each call with its starting
	// position, and each subscription's end with its events and records.
	Logf func(format string, args ...any)
	// AwaitRoom, when set, is called after deliver answered ErrNoRoom, with
	// the subscription closed: it returns once the caller has room for an
	// event again (or with ctx's error), and the reader subscribes again
	// from where it was.
	AwaitRoom func(ctx context.Context) error
	// OnFailure, when set, is called from Run's goroutine each time a call
	// or a subscription failed (refusals included), with what failed,
	// before the reader waits to subscribe again (or gives up): until the
	// next event the caller cannot know how far the shard's tip is. A
	// clean end (the five minutes) is no failure.
	OnFailure func(err error)
}

func (o *Options) defaults() error {
	if o.ConsumerARN == "" || !strings.Contains(o.ConsumerARN, "/consumer/") {
		return fmt.Errorf("efo: %q is not a consumer ARN", o.ConsumerARN)
	}
	if o.ShardID == "" {
		return errors.New("efo: no shard id")
	}
	if err := o.Start.validate(); err != nil {
		return fmt.Errorf("efo: %w", err)
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&o.SubscriptionTimeout, DefaultSubscriptionTimeout)
	set(&o.CallTimeout, DefaultCallTimeout)
	set(&o.IdleTimeout, DefaultIdleTimeout)
	set(&o.InUseTimeout, DefaultInUseTimeout)
	set(&o.InUseBackoff, defaultInUseBackoff)
	set(&o.RetryBackoff, defaultRetryBackoff)
	if o.LatestMargin == 0 {
		o.LatestMargin = DefaultLatestMargin
	}
	if o.LatestMargin < 0 {
		o.LatestMargin = 0
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = DefaultMaxFailures
	}
	if o.Pacer == nil {
		o.Pacer = NewPacer(0)
	}
	return nil
}

// Batch is one event of a subscription, handed over as it came: its
// records (none in an idle event), how far the shard's tip is ahead, and
// the continuation to resume after.
type Batch struct {
	ShardID string
	Records []types.Record
	// MillisBehindLatest is 0 when the reader has caught up with the shard.
	MillisBehindLatest int64
	// Continuation is the event's ContinuationSequenceNumber; "" in the
	// shard's last event.
	Continuation string
	// Subscription numbers the subscriptions of this reader, from 1.
	Subscription int
}

// End is the end of a shard: its last event named the children.
type End struct {
	ChildShards []types.ChildShard
}

// Stats count a reader's work.
type Stats struct {
	Calls           int // SubscribeToShard calls, refused ones included
	Subscriptions   int // calls that opened a stream
	Resubscriptions int // subscriptions after the first
	Events          int
	Records         int
	// Duplicates are records at or before one already handed over, which
	// the reader drops (a service that repeats itself must not make the
	// caller repeat itself).
	Duplicates int
	InUse      int // in-use (ResourceInUse) answers, from calls and streams
	// Pauses are subscriptions closed because deliver had no room for an
	// event (ErrNoRoom).
	Pauses   int
	Failures int // failed calls and streams of every other kind
}

// Reader reads one shard through SubscribeToShard, from its starting
// position to the shard's end, subscribing again whenever a subscription
// ends (after 5 minutes, or dropped, or refused) from just after the last
// event it handed over, so that nothing is skipped and nothing repeated.
type Reader struct {
	api  API
	o    Options
	name string // the consumer's name, for messages

	// What was handed over: the last record and the last continuation.
	delivered bool
	lastSeq   string
	lastNum   *big.Int
	cont      string
	firstCall time.Time // of a LATEST start

	failures   int
	inUseSince time.Time // of the current run of in-use answers
	inUseTries int
	throttles  int        // throttled subscriptions in a row
	rng        *rand.Rand // the jitter of the waits

	mu    sync.Mutex
	stats Stats
}

// NewReader checks the options and returns a reader; nothing is sent yet.
func NewReader(api API, o Options) (*Reader, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Reader{api: api, o: o, name: ConsumerName(o.ConsumerARN), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

// Stats returns the counts so far; safe to call while Run runs.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *Reader) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

func (r *Reader) logf(format string, args ...any) {
	if r.o.Logf != nil {
		r.o.Logf("shard %s: "+format, append([]any{r.o.ShardID}, args...)...)
	}
}

// Resume is where a subscription made now would start: after the last
// event handed over, or the starting position while nothing was. Call it
// from deliver or once Run has returned, not while Run runs elsewhere.
func (r *Reader) Resume() Position {
	if r.delivered {
		// AFTER the continuation, which covers events without records;
		// never before the last record handed over.
		if c := seqNum(r.cont); c != nil && r.lastNum != nil && c.Cmp(r.lastNum) >= 0 {
			return AfterSequence(r.cont)
		}
		return AfterSequence(r.lastSeq)
	}
	if r.o.Start.Type == types.ShardIteratorTypeLatest && !r.firstCall.IsZero() {
		// LATEST again would skip what was written since the first call.
		// Events without records say where the tip was: after it (a
		// quiet shard re-subscribed after five minutes does not go back
		// to its first call, margin included). kinesis-mock's empty
		// events at LATEST say "0", which is no position.
		if c := seqNum(r.cont); c != nil && c.Sign() > 0 {
			return AfterSequence(r.cont)
		}
		return AtTimestamp(r.firstCall.Add(-r.o.LatestMargin))
	}
	return r.o.Start
}

// Run reads the shard until its end and returns the children its last
// event named. Every event goes to deliver, in order, one at a time: the
// reader reads no further until deliver returns, so a slow caller slows
// the reading and nothing is dropped. An error from deliver stops Run and
// is returned as it is; so is ctx's error when ctx ends. Other errors are
// retried (see Options) and reported in one line when they persist.
func (r *Reader) Run(ctx context.Context, deliver func(context.Context, Batch) error) (*End, error) {
	ctx = awsdebug.WithShard(ctx, r.o.ShardID)
	for {
		pos := r.Resume()
		if err := r.o.Pacer.Wait(ctx, r.o.ConsumerARN, r.o.ShardID); err != nil {
			return nil, err
		}
		res := r.subscribe(ctx, pos, deliver)
		switch {
		case res.paused:
			if res.opened && res.events > 0 {
				// Progress: as after() counts it, the end of a run of
				// failures or of ResourceInUse (which the
				// service answers for a while after the subscription
				// just closed).
				r.failures, r.throttles, r.inUseSince, r.inUseTries = 0, 0, time.Time{}, 0
			}
			r.count(func(s *Stats) { s.Pauses++ })
			r.logf("no room for subscription #%d's next event (the output is behind); subscription closed until there is", res.n)
			if r.o.AwaitRoom != nil {
				if err := r.o.AwaitRoom(ctx); err != nil {
					return nil, err
				}
			}
			continue
		case res.deliverErr != nil:
			return nil, res.deliverErr
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case res.end != nil:
			st := r.Stats()
			r.logf("shard end after %d subscriptions, %d events, %d records; children %s", st.Subscriptions, st.Events, st.Records, childList(res.end.ChildShards))
			return res.end, nil
		}
		wait, err := r.after(res)
		if err != nil {
			return nil, err
		}
		if err := awscall.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// result is how one subscription went.
type result struct {
	n        int  // its number
	opened   bool // the call succeeded
	inStream bool // err came from the stream, after a 200
	events   int
	records  int
	took     time.Duration
	err      error // nil: the stream ended cleanly
	end      *End
	// deliverErr is deliver's error, which stops the reader.
	deliverErr error
	// paused: deliver had no room for an event (ErrNoRoom).
	paused bool
}

// ErrNoRoom is what deliver answers for an event it has no room for now
// (its caller's memory budget is spent, behind a slow output). The event
// is not handed over: Run closes the subscription, so that a stalled
// caller stops the intake instead of holding an event per shard, waits for
// Options.AwaitRoom, and subscribes again from just before that event.
var ErrNoRoom = errors.New("no room for the event")

// after decides, from how a subscription ended, how long to wait before
// the next one, or that the reader gives up.
func (r *Reader) after(res result) (time.Duration, error) {
	now := time.Now()
	kind := kindTransient
	if res.err != nil {
		kind = classify(res.err)
		var ae smithy.APIError
		if res.inStream && !errors.As(res.err, &ae) {
			kind = kindTransient // a cut or garbled stream: not the service's answer
		}
	}
	// Progress, or a subscription that held for a while, ends a run of
	// failures or of ResourceInUse.
	if res.opened && res.events > 0 && kind != kindInUse {
		r.failures, r.throttles, r.inUseSince, r.inUseTries = 0, 0, time.Time{}, 0
	}
	if res.opened && res.took >= r.o.InUseTimeout {
		r.inUseSince, r.inUseTries = time.Time{}, 0
	}
	if res.err == nil || errors.Is(res.err, errSubscriptionTimeout) {
		if res.events > 0 {
			return 0, nil // the usual end: subscribe again (the pacer spaces the calls)
		}
		r.failed(errNoEvent)
		r.failures++
		r.count(func(s *Stats) { s.Failures++ })
		if r.failures > r.o.MaxFailures {
			return 0, fmt.Errorf("shard %s: %d subscriptions of consumer %s in a row ended before any event", r.o.ShardID, r.failures, r.name)
		}
		return awscall.Backoff(r.rng, r.o.RetryBackoff, maxBackoff, r.failures), nil
	}
	if kind != kindFatal {
		r.failed(res.err)
	}
	switch kind {
	case kindInUse:
		r.count(func(s *Stats) { s.InUse++ })
		if r.inUseSince.IsZero() {
			r.inUseSince = now
		}
		if d := now.Sub(r.inUseSince); d >= r.o.InUseTimeout {
			return 0, &InUseError{Consumer: r.name, ConsumerARN: r.o.ConsumerARN, ShardID: r.o.ShardID, For: d, Err: res.err}
		}
		r.inUseTries++
		d := awscall.Backoff(r.rng, r.o.InUseBackoff, maxBackoff, r.inUseTries)
		r.logf("consumer %s is busy on this shard (%s), asking again in %s", r.name, awserr.Classify(res.err).Code, d.Round(time.Millisecond))
		return d, nil
	case kindThrottled, kindTransient:
		r.failures++
		r.count(func(s *Stats) { s.Failures++ })
		if r.failures > r.o.MaxFailures {
			return 0, fmt.Errorf("shard %s: SubscribeToShard of consumer %s failed %d times in a row: %w", r.o.ShardID, r.name, r.failures, res.err)
		}
		d := awscall.Backoff(r.rng, r.o.RetryBackoff, maxBackoff, r.failures)
		if kind == kindThrottled {
			// Refused for the rest of the second: never sooner than one,
			// longer under throttles in a row (not failures of any kind).
			r.throttles++
			d = max(d, awscall.AfterThrottle(r.rng, r.throttles))
		}
		what := "SubscribeToShard"
		if res.opened {
			what = fmt.Sprintf("subscription #%d", res.n)
		}
		r.logf("%s failed (%v); subscribing again in %s from %s", what, oneLine(res.err), d.Round(time.Millisecond), r.Resume())
		return d, nil
	}
	return 0, fmt.Errorf("shard %s: SubscribeToShard of consumer %s: %w", r.o.ShardID, r.name, res.err)
}

func (r *Reader) failed(err error) {
	if r.o.OnFailure != nil {
		r.o.OnFailure(err)
	}
}

// subscribe makes one call and reads its stream to the end.
func (r *Reader) subscribe(ctx context.Context, pos Position, deliver func(context.Context, Batch) error) (res result) {
	r.count(func(s *Stats) { s.Calls++ })
	// The stream lives in the call's context, so the call gets a context
	// of its own: the subscription's deadline, cut short if the call
	// itself does not answer in time.
	dctx, dcancel := context.WithTimeoutCause(ctx, r.o.SubscriptionTimeout, errSubscriptionTimeout)
	defer dcancel()
	sctx, cancel := context.WithCancelCause(dctx)
	defer cancel(nil)
	callTimer := time.AfterFunc(r.o.CallTimeout, func() { cancel(errCallTimeout) })
	start := time.Now()
	if r.o.Start.Type == types.ShardIteratorTypeLatest && r.firstCall.IsZero() {
		r.firstCall = start
	}
	in := &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(r.o.ConsumerARN), ShardId: aws.String(r.o.ShardID), StartingPosition: pos.input()}
	out, err := r.api.SubscribeToShard(sctx, in, callOptions)
	callTimer.Stop()
	defer func() {
		res.took = time.Since(start)
		if res.opened {
			r.logf("subscription #%d from %s ended after %s (%s): %d events, %d records", res.n, pos, res.took.Round(time.Millisecond), endReason(res), res.events, res.records)
		}
	}()
	if err != nil {
		if c := context.Cause(sctx); ctx.Err() == nil && c != nil {
			err = fmt.Errorf("%w: %w", c, err)
		}
		res.err = err
		r.logf("subscribe from %s (consumer %s): %v", pos, r.name, oneLine(err))
		return res
	}
	r.count(func(s *Stats) {
		s.Subscriptions++
		res.n = s.Subscriptions
		if s.Subscriptions > 1 {
			s.Resubscriptions++
		}
	})
	res.opened = true
	r.logf("subscription #%d of consumer %s from %s", res.n, r.name, pos)
	es := out.GetStream()
	defer es.Close()
	idle := time.NewTimer(r.o.IdleTimeout)
	defer idle.Stop()
	for {
		select {
		case ev, ok := <-es.Events():
			if !ok {
				res.err, res.inStream = es.Err(), true
				if c := context.Cause(sctx); ctx.Err() == nil && c != nil {
					res.err = c
				}
				return res
			}
			e, isEvent := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent)
			if !isEvent {
				continue // a member of a newer API: nothing to read in it
			}
			idle.Stop()
			if err := r.handle(ctx, &e.Value, &res, deliver); err != nil {
				if errors.Is(err, ErrNoRoom) {
					res.paused = true
				} else {
					res.deliverErr = err
				}
				return res
			}
			if res.end != nil {
				return res
			}
			idle.Reset(r.o.IdleTimeout)
		case <-idle.C:
			res.err, res.inStream = errIdle, true
			return res
		case <-ctx.Done():
			res.err = ctx.Err()
			return res
		}
	}
}

// handle hands one event over and moves the resume point past it.
func (r *Reader) handle(ctx context.Context, ev *types.SubscribeToShardEvent, res *result, deliver func(context.Context, Batch) error) error {
	recs, dups := r.fresh(ev.Records)
	b := Batch{ShardID: r.o.ShardID, Records: recs, MillisBehindLatest: aws.ToInt64(ev.MillisBehindLatest),
		Continuation: aws.ToString(ev.ContinuationSequenceNumber), Subscription: res.n}
	if err := deliver(ctx, b); err != nil {
		return err // ErrNoRoom included: not handed over, nothing moves
	}
	res.events++
	if n := len(recs); n > 0 {
		r.delivered = true
		r.lastSeq = aws.ToString(recs[n-1].SequenceNumber)
		r.lastNum = seqNum(r.lastSeq)
	}
	if b.Continuation != "" {
		r.cont = b.Continuation
	}
	res.records += len(recs)
	r.count(func(s *Stats) { s.Events++; s.Records += len(recs); s.Duplicates += dups })
	if dups > 0 {
		r.logf("dropped %d records at or before %s, handed over already", dups, r.lastSeq)
	}
	if ev.ContinuationSequenceNumber == nil {
		res.end = &End{ChildShards: ev.ChildShards}
	}
	return nil
}

// fresh drops the records at or before the last one handed over.
func (r *Reader) fresh(recs []types.Record) ([]types.Record, int) {
	if r.lastNum == nil {
		return recs, 0
	}
	for i, rec := range recs {
		if n := seqNum(aws.ToString(rec.SequenceNumber)); n == nil || n.Cmp(r.lastNum) > 0 {
			if i == 0 {
				return recs, 0
			}
			return recs[i:], i
		}
	}
	return nil, len(recs)
}

func endReason(res result) string {
	switch {
	case res.paused:
		return "no room for its next event"
	case res.deliverErr != nil:
		return "stopped"
	case res.end != nil:
		return "shard end"
	case res.err == nil:
		return "the stream ended"
	case errors.Is(res.err, errSubscriptionTimeout):
		return "its deadline passed"
	}
	return oneLine(res.err)
}

func childList(cs []types.ChildShard) string {
	if len(cs) == 0 {
		return "none"
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = aws.ToString(c.ShardId)
	}
	return strings.Join(ids, ", ")
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
