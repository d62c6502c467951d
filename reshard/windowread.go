package reshard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// windowReader reads one shard's window (see ReadWindows).
type windowReader struct {
	api    SampleAPI
	ref    kstream.Ref
	sh     *lineage.Shard
	o      *WindowOptions
	rng    *rand.Rand
	slices []slice
	cur    int // the slice being read
	used   int // records taken
	// pass2: the slices cut short are read on with what is left of
	// MaxRecords, each from its last record to its end.
	pass2 bool
	// seekTo is the iterator the next call needs (jump set).
	seekTo *kinesis.GetShardIteratorInput

	it               *string
	lastSeq          string
	seenN, seenBytes int     // every record received, for the record size
	rate             float64 // records per second of the last page
	burst            int     // records taken in a row with one arrival time
	// pacer paces GetRecords, iterPacer GetShardIterator (a quota of its
	// own); failures counts both's failures in a row, against Retries.
	pacer, iterPacer *awscall.Pacer
	failures         int
	started          time.Time
	calls, throttled int
	done, jump       bool
	stopped          string
}

func newWindowReader(api SampleAPI, ref kstream.Ref, sh *lineage.Shard, o *WindowOptions, i uint64) *windowReader {
	n := sliceCount(o.MaxRecords)
	w := &windowReader{api: api, ref: ref, sh: sh, o: o, rng: rand.New(rand.NewPCG(o.Seed, i)),
		slices: makeSlices(o.From, o.Until, n)}
	w.pacer, w.iterPacer = awscall.NewPacer(w.rng, o.Interval), awscall.NewPacer(w.rng, o.Interval)
	w.startSlice(0)
	return w
}

// startSlice moves on to slice i, giving it an even share of the records
// still allowed.
func (w *windowReader) startSlice(i int) {
	w.cur = i
	if i >= len(w.slices) {
		return
	}
	s := &w.slices[i]
	s.state = sliceReading
	s.quota = max(1, (w.o.MaxRecords-w.used)/(len(w.slices)-i))
}

// resume starts, or goes on with, the second pass: the next slice cut
// short, read on from its last record with all that is left of
// MaxRecords. It ends the read when there is none, or nothing is left.
func (w *windowReader) resume(from int) {
	w.pass2, w.done, w.jump = true, true, false
	left := w.o.MaxRecords - w.used
	for i := from; i < len(w.slices) && left > 0; i++ {
		s := &w.slices[i]
		if s.state != sliceCut {
			continue
		}
		w.cur, w.done, w.jump = i, false, true
		s.state, s.quota = sliceReading, s.n+left
		w.seekTo = w.input(types.ShardIteratorTypeAfterSequenceNumber)
		w.seekTo.StartingSequenceNumber = aws.String(s.lastSeq)
		return
	}
}

func (w *windowReader) fail(what string, err error) error {
	return fmt.Errorf("read records of shard %s: %s: %w", w.sh.ID, what, err)
}

func (w *windowReader) run(ctx context.Context) (ShardWindow, error) {
	ctx = awsdebug.WithShard(ctx, w.sh.ID)
	w.started = w.o.Now()
	if err := w.seek(ctx, w.atTimestamp(), true); err != nil {
		return ShardWindow{}, w.fail("get shard iterator", err)
	}
	for !w.done {
		if w.jump {
			w.jump = false
			if err := w.seek(ctx, w.seekTo, false); err != nil {
				return ShardWindow{}, w.fail("get shard iterator", err)
			}
			continue
		}
		if w.it == nil {
			w.finish() // the shard ended
			continue
		}
		if err := w.readPage(ctx); err != nil {
			return ShardWindow{}, w.fail("get records", err)
		}
	}
	return w.result(), nil
}

func (w *windowReader) input(kind types.ShardIteratorType) *kinesis.GetShardIteratorInput {
	return &kinesis.GetShardIteratorInput{StreamName: w.ref.NameInput(), StreamARN: w.ref.ARNInput(), ShardId: aws.String(w.sh.ID), ShardIteratorType: kind}
}

func (w *windowReader) atTimestamp() *kinesis.GetShardIteratorInput {
	in := w.input(types.ShardIteratorTypeAtTimestamp)
	in.Timestamp = aws.Time(w.slices[w.cur].start)
	return in
}

// overBudget stops the read (and says so) when the next attempt at t would
// pass the budget or the call limit.
func (w *windowReader) overBudget(t time.Time) bool {
	switch {
	case w.o.MaxCalls > 0 && w.calls >= w.o.MaxCalls:
		w.stop(fmt.Sprintf("the limit of %d GetRecords calls was reached", w.o.MaxCalls))
	case w.o.Budget > 0 && t.Sub(w.started) > w.o.Budget:
		w.stop(fmt.Sprintf("its %s time budget ran out", w.o.Budget))
	default:
		return false
	}
	return true
}

func (w *windowReader) stop(why string) {
	w.stopped, w.done = why, true
}

// seek gets an iterator (paced on the separate GetShardIterator budget).
// AT_TIMESTAMP that does not answer in IteratorTimeout (kinesalite, when
// no record is that recent) falls back: the first slice to TRIM_HORIZON,
// a later one to after the last record read (records before the slice's
// start are then skipped as they come).
func (w *windowReader) seek(ctx context.Context, in *kinesis.GetShardIteratorInput, first bool) error {
	for {
		if w.overBudget(w.iterPacer.Next()) {
			return nil
		}
		if err := w.o.Sleep(ctx, w.iterPacer.Until(w.o.Now())); err != nil {
			return err
		}
		attempt := w.o.Now()
		w.iterPacer.Attempt(attempt)
		timeout := w.o.CallTimeout
		if in.ShardIteratorType == types.ShardIteratorTypeAtTimestamp {
			timeout = min(timeout, w.o.IteratorTimeout)
		}
		var out *kinesis.GetShardIteratorOutput
		err := withDeadline(ctx, timeout, func(ctx context.Context) error {
			var err error
			out, err = w.api.GetShardIterator(ctx, in, awscall.Once)
			return err
		})
		verdict := awscall.OnRead(err)
		switch {
		case err == nil:
			w.it, w.failures = out.ShardIterator, 0
			w.iterPacer.Answered(attempt, 0)
			return nil
		case ctx.Err() != nil:
			return err
		case errors.Is(err, context.DeadlineExceeded) && in.ShardIteratorType == types.ShardIteratorTypeAtTimestamp:
			if first || w.lastSeq == "" {
				in = w.input(types.ShardIteratorTypeTrimHorizon)
			} else {
				in = w.input(types.ShardIteratorTypeAfterSequenceNumber)
				in.StartingSequenceNumber = aws.String(w.lastSeq)
			}
		case verdict == awscall.Throttle:
			w.iterPacer.Throttled(attempt)
		case verdict == awscall.Retry:
			if w.failures++; w.failures > w.o.Retries {
				return err
			}
			w.iterPacer.Failed(attempt)
		default:
			return err
		}
	}
}

// limit sizes the next call to what is still needed: the records the
// current slice may still take, plus one to see where its sample ends;
// when the shard's rate says the slice will end first, also what the
// following slices may take up to the first one expected to fill (so a
// quiet shard is not read a slice's share at a time). And no more than
// about maxCallBytes of records once their size is known.
func (w *windowReader) limit() int32 {
	n := min(w.need(), maxLimit)
	if w.seenN == 0 {
		n = min(n, firstLimit)
	} else {
		avg := max(1, w.seenBytes/w.seenN)
		n = min(n, max(1, maxCallBytes/avg))
	}
	return int32(max(n, 1))
}

// need walks the slices from the current one, with the rate of the last
// page (a quarter more, to err toward smaller calls).
func (w *windowReader) need() int {
	s := &w.slices[w.cur]
	left := s.quota - s.n
	if left <= 0 {
		// Past the share, inside a burst of one arrival time: ask for as
		// many again as the burst has given so far.
		return max(1, w.burst) + 1
	}
	if w.rate <= 0 {
		return left + 1
	}
	rate := w.rate * 1.25
	from := s.start
	if s.n > 0 {
		from = s.last
	}
	if w.pass2 { // this slice only
		return min(left, int(rate*s.end.Sub(from).Seconds())+1) + 1
	}
	need, used := 0, w.used
	for j := w.cur; j < len(w.slices) && need < maxLimit; j++ {
		q := left
		if j > w.cur {
			q = max(1, (w.o.MaxRecords-used)/(len(w.slices)-j))
		}
		est := int(rate*w.slices[j].end.Sub(from).Seconds()) + 1
		if est >= q {
			return need + q + 1
		}
		need, used, from = need+est, used+est, w.slices[j].end
	}
	return need + 1
}

// readPage makes one paced GetRecords attempt and takes its records; a
// throttle or a passing failure only moves the next attempt.
func (w *windowReader) readPage(ctx context.Context) error {
	if w.overBudget(w.pacer.Next()) {
		return nil
	}
	if err := w.o.Sleep(ctx, w.pacer.Until(w.o.Now())); err != nil {
		return err
	}
	limit := w.limit()
	attempt := w.o.Now()
	w.pacer.Attempt(attempt)
	w.calls++
	var out *kinesis.GetRecordsOutput
	err := withDeadline(ctx, w.o.CallTimeout, func(ctx context.Context) error {
		var err error
		out, err = w.api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: w.it, Limit: aws.Int32(limit), StreamARN: w.ref.ARNInput()}, awscall.Once)
		return err
	})
	verdict := awscall.OnRead(err)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return err
	case verdict == awscall.Throttle:
		w.throttled++
		w.pacer.Throttled(attempt)
		return nil
	case verdict == awscall.Renew:
		in := w.atTimestamp()
		if w.lastSeq != "" {
			in = w.input(types.ShardIteratorTypeAfterSequenceNumber)
			in.StartingSequenceNumber = aws.String(w.lastSeq)
		}
		return w.seek(ctx, in, false)
	case verdict == awscall.Retry:
		if w.failures++; w.failures > w.o.Retries {
			return err
		}
		w.pacer.Failed(attempt)
		return nil
	default:
		return err
	}
	w.failures = 0
	w.take(out, attempt, limit)
	return nil
}

// take files a page's records into slices: a record past the window's
// end ends the read, one past a slice's end moves on to the next slice,
// and one beyond a slice's quota cuts the slice there and jumps to the
// next one.
func (w *windowReader) take(out *kinesis.GetRecordsOutput, attempt time.Time, limit int32) {
	size := 0
	for i := range out.Records {
		size += len(out.Records[i].Data) + len(aws.ToString(out.Records[i].PartitionKey))
	}
	w.seenN += len(out.Records)
	w.seenBytes += size
	// The read quota refills at 2 MiB a second: after a big page the
	// next call waits for it (10 MiB: 5 s).
	w.pacer.Answered(attempt, size)
	for i := range out.Records {
		r := &out.Records[i]
		w.lastSeq = aws.ToString(r.SequenceNumber)
		a := aws.ToTime(r.ApproximateArrivalTimestamp)
		if a.After(w.o.Until) {
			w.finish()
			return
		}
		if a.Before(w.slices[w.cur].start) {
			continue // from TRIM_HORIZON or read on past a skipped part
		}
		if w.pass2 && w.beyond(a) {
			w.slices[w.cur].state = sliceComplete // the next slice was read already
			w.resume(w.cur + 1)
			return
		}
		for w.beyond(a) {
			w.slices[w.cur].state = sliceComplete
			w.startSlice(w.cur + 1)
		}
		s := &w.slices[w.cur]
		if s.n >= s.quota && a.After(s.last) {
			// Cut between two arrival times, never inside a burst that
			// arrived at once (a PutRecords batch): [start, cut) then
			// holds exactly the records taken.
			s.cut, s.state = a, sliceCut
			w.next()
			return
		}
		pk := aws.ToString(r.PartitionKey)
		s.recs = append(s.recs, WindowRecord{Arrival: a, PartitionKey: pk, Bytes: len(r.Data) + len(pk), Weight: 1})
		s.n++
		if a.Equal(s.last) {
			w.burst++
		} else {
			w.burst = 1
		}
		s.last, s.lastSeq = a, w.lastSeq
		w.used++
	}
	if n := len(out.Records); n > 1 {
		first, last := aws.ToTime(out.Records[0].ApproximateArrivalTimestamp), aws.ToTime(out.Records[n-1].ApproximateArrivalTimestamp)
		if d := last.Sub(first); d > 0 {
			w.rate = float64(n-1) / d.Seconds()
		}
	}
	w.it = out.NextShardIterator
	caughtUp := out.MillisBehindLatest != nil && *out.MillisBehindLatest == 0
	if w.it == nil || len(out.Records) == 0 && (caughtUp || out.MillisBehindLatest == nil) || caughtUp && len(out.Records) < int(limit) {
		w.finish() // at the tip (or the end of a closed shard): nothing more in the window
	}
}

// next moves on after the current slice was cut at its quota: to the next
// slice's start in the first pass (or, after the last, to the second
// pass), to the next slice cut short in the second.
func (w *windowReader) next() {
	if w.pass2 {
		w.done = true // nothing is left of MaxRecords
		return
	}
	w.startSlice(w.cur + 1)
	if w.cur == len(w.slices) {
		w.resume(0)
		return
	}
	w.jump, w.seekTo = true, w.atTimestamp()
}

// beyond reports whether arrival a lies past the current slice: at or
// after its end, or after the window's end (which the last slice holds).
func (w *windowReader) beyond(a time.Time) bool {
	if w.cur == len(w.slices)-1 {
		return a.After(w.o.Until)
	}
	return !a.Before(w.slices[w.cur].end)
}

// finish: the shard has nothing more in the window from here, so the
// current slice is complete, and in the first pass every later one too.
func (w *windowReader) finish() {
	if w.pass2 {
		w.slices[w.cur].state = sliceComplete
		w.resume(w.cur + 1)
		return
	}
	for i := w.cur; i < len(w.slices); i++ {
		w.slices[i].state = sliceComplete
	}
	w.resume(0)
}

func (w *windowReader) result() ShardWindow {
	sw := ShardWindow{ShardID: w.sh.ID, Range: w.sh.Range, From: w.o.From, Until: w.o.Until, Records: make([]WindowRecord, 0, w.used),
		Stopped: w.stopped, Calls: w.calls, Throttled: w.throttled}
	for i := range w.slices {
		s := &w.slices[i]
		weight, covered := s.weight()
		sw.Covered += covered
		sw.Sampled = sw.Sampled || s.state == sliceCut
		if covered > 0 {
			est := SliceEstimate{Seconds: covered.Seconds(), ReadSeconds: covered.Seconds(), Read: len(s.recs), Records: weight * float64(len(s.recs)), Cut: s.state == sliceCut}
			if est.Cut {
				est.ReadSeconds = max(s.cut.Sub(s.start), time.Millisecond).Seconds()
			}
			sw.Slices = append(sw.Slices, est)
		}
		for _, r := range s.recs {
			r.Weight = weight
			sw.Records = append(sw.Records, r)
			sw.Estimated += weight
		}
	}
	return sw
}
