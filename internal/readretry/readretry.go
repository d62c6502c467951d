package readretry

import (
	"context"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// Op is a read-only control-plane operation the policy retries.
type Op string

// The read-only operations, with the quota that makes a LimitExceeded on
// them a moment's crowd rather than a refusal (docs/KINESIS-NOTES.md §1).
// The SDK's retryer lets LimitExceeded through at once (cmd/aws.go), so
// this table is the only place that decides which calls wait it out.
//
// Not here: DescribeLimits (1 call a second per account) is read-only too,
// but its one caller, reshard.LoadQuota, makes one bounded call and turns a
// failure into a note of the preview; the calls that change a stream
// (SplitShard, UpdateShardCount, …) must report a daily or account limit
// at once; GetRecords and GetShardIterator are paced by tail itself.
const (
	ListStreams            Op = "ListStreams"            // 5 calls a second per account
	ListShards             Op = "ListShards"             // 1,000 calls a second per stream, shared by every consumer
	DescribeStreamSummary  Op = "DescribeStreamSummary"  // 20 calls a second per account
	ListStreamConsumers    Op = "ListStreamConsumers"    // 5 calls a second per stream
	DescribeStreamConsumer Op = "DescribeStreamConsumer" // 20 calls a second per stream
)

var readOnly = map[Op]bool{ListStreams: true, ListShards: true, DescribeStreamSummary: true, ListStreamConsumers: true, DescribeStreamConsumer: true}

// ReadOnly reports whether the operation named op (as the SDK names it in
// an OperationError) is one whose LimitExceeded Do waits out.
func ReadOnly(op string) bool { return readOnly[Op(op)] }

// The policy: up to Retries more attempts after a LimitExceeded, the first
// after Pause, each pause twice the one before (1 s, 2 s, 4 s: seven
// seconds at most before the error is reported). Tests shorten Pause.
var (
	Retries = 3
	Pause   = time.Second
)

// Do returns call's result, calling it again after a pause while it fails
// with LimitExceeded, up to Retries times, when op is read-only.
// A context that ends during a pause returns the call's last error (the
// caller's deadline then says why the call failed, not the pause).
func Do[T any](ctx context.Context, op Op, call func() (T, error)) (T, error) {
	v, err := call()
	if !readOnly[op] {
		return v, err
	}
	for attempt := 0; err != nil && attempt < Retries && IsLimitExceeded(err); attempt++ {
		if pause(ctx, Pause<<attempt) != nil {
			return v, err
		}
		v, err = call()
	}
	return v, err
}

// pause is Sleep; tests record the pauses instead.
var pause = Sleep

// IsLimitExceeded reports whether err is a LimitExceeded.
func IsLimitExceeded(err error) bool {
	return awserr.Of(err) == awserr.LimitExceeded
}

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
