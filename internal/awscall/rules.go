package awscall

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// Call is a kind of call; each has its row of the backoff table.
type Call int

const (
	// ControlRead: a read-only control-plane call (ListStreams,
	// ListShards, DescribeStreamSummary, ListStreamConsumers,
	// DescribeStreamConsumer). A LimitExceeded on one of them is a
	// moment's crowd on a small per-account or per-stream rate, waited out
	// by Do; so is a stream briefly busy (ResourceInUse on ListShards).
	ControlRead Call = iota
	// DataRead: GetRecords and GetShardIterator, one shard at a time.
	// The reader asks again for as long as its own budget allows (tail:
	// as long as it runs, since giving up would leave records unread;
	// hot and lag: their time budget), each attempt paced by a Pacer.
	DataRead
	// Change: a call that changes a stream or a consumer (CreateStream,
	// SplitShard, MergeShards, UpdateShardCount, RegisterStreamConsumer,
	// …). Never asked again by this package: a LimitExceeded is a quota or
	// a daily limit the user must see now, a ResourceInUse someone else's
	// change. A lost answer is resolved by looking, not by sending again.
	Change
)

// Forever: a rule without a limit on its retries (the caller's budget is
// the limit).
const Forever = -1

// Rule is one row of the backoff table.
type Rule struct {
	// Retried are the kinds of failure asked again after a wait.
	Retried []awserr.Kind
	// First is the first wait, doubled after each failure up to Max.
	First, Max time.Duration
	// Retries is how many times a call is asked again before its error
	// is reported (Forever: as long as the caller's budget allows).
	Retries int
	// Jitter spreads the waits over [d/2, d] so that callers failing
	// together do not come back together.
	Jitter bool
}

// Rules is the backoff table. Throttles of a shard's reads follow their
// own rule (AfterThrottle), as they must keep a second's quiet. Tests
// shorten the waits.
//
//	call         retried on                       waits               retries
//	ControlRead  LimitExceeded, InUse             1 s, 2 s, 4 s       3
//	DataRead     Transient (5xx, reset, timeout)  250 ms … 5 s, ±½    for as long as the reader lasts
//	             Throttled                        AfterThrottle       for as long as the reader lasts
//	             ExpiredIterator                  a new iterator at once
//	Change       nothing                          —                   0
//
// Under this table, the SDK's retryer (KinesisRetryer, DynamoRetryer)
// asks transient failures of ControlRead and Change calls again up to
// SDKAttempts times, and never a throttle or a LimitExceeded of Kinesis.
var Rules = [...]Rule{
	ControlRead: {Retried: []awserr.Kind{awserr.LimitExceeded, awserr.InUse}, First: time.Second, Max: 4 * time.Second, Retries: 3},
	DataRead:    {Retried: []awserr.Kind{awserr.Transient}, First: 250 * time.Millisecond, Max: 5 * time.Second, Retries: Forever, Jitter: true},
	Change:      {},
}

// RetriesOn reports whether the rule asks a call that failed with err again.
func (r Rule) RetriesOn(err error) bool { return slices.Contains(r.Retried, awserr.Of(err)) }

// Wait is the wait before retry number attempt (1 for the first).
func (r Rule) Wait(rng *rand.Rand, attempt int) time.Duration {
	d := doubled(r.First, r.Max, attempt)
	if !r.Jitter || rng == nil {
		return d
	}
	return d/2 + time.Duration(rng.Int64N(int64(d/2)+1))
}

// givesUp reports whether retry number attempt is past the rule's limit.
func (r Rule) givesUp(attempt int) bool { return r.Retries != Forever && attempt > r.Retries }

func doubled(lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Op is an operation, as the SDK names it in an OperationError.
type Op string

// The ControlRead operations, with the quota that makes a LimitExceeded on
// them a moment's crowd rather than a refusal. DescribeLimits (1 call a
// second per account) is read-only too, but its one caller makes one
// bounded call and turns a failure into a note of the preview.
const (
	ListStreams            Op = "ListStreams"            // 5 calls a second per account
	ListShards             Op = "ListShards"             // 1,000 calls a second per stream, shared by every consumer
	DescribeStreamSummary  Op = "DescribeStreamSummary"  // 20 calls a second per account
	ListStreamConsumers    Op = "ListStreamConsumers"    // 5 calls a second per stream
	DescribeStreamConsumer Op = "DescribeStreamConsumer" // 20 calls a second per stream
)

var controlReads = map[Op]bool{ListStreams: true, ListShards: true, DescribeStreamSummary: true, ListStreamConsumers: true, DescribeStreamConsumer: true}

// ReadOnly reports whether the operation named op is a ControlRead, whose
// LimitExceeded Do waits out before it is reported.
func ReadOnly(op string) bool { return controlReads[Op(op)] }

// Do returns call's result, asking again under the ControlRead rule while
// it fails with a kind the rule retries, when op is a ControlRead (any
// other op is called once). A context that ends during a pause returns
// the call's last error: the caller's deadline then says why the call
// failed, not the pause.
func Do[T any](ctx context.Context, op Op, call func() (T, error)) (T, error) {
	v, err := call()
	if !controlReads[op] {
		return v, err
	}
	rule := Rules[ControlRead]
	for attempt := 1; err != nil && !rule.givesUp(attempt) && rule.RetriesOn(err); attempt++ {
		if pause(ctx, rule.Wait(nil, attempt)) != nil {
			return v, err
		}
		v, err = call()
	}
	return v, err
}

// pause is Sleep; tests record the pauses instead.
var pause = Sleep

// Sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx's error in the second case (at once when d <= 0 and ctx has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
