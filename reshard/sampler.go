package reshard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// SampleAPI is what SampleTraffic needs from the client.
type SampleAPI interface {
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// Sampling limits.
const (
	DefaultSampleSize   = 1000
	MaxSampleSize       = 10000 // one GetRecords call's worth
	DefaultSampleWindow = 5 * time.Minute
)

// SampleOptions bound what SampleTraffic reads. The zero value keeps the
// latest 1,000 records of the last 5 minutes per shard, with at most 20
// GetRecords calls per shard, 200 ms apart (the shard's limit is 5 per
// second, shared with every consumer), each with a 10 s deadline.
type SampleOptions struct {
	Max         int           // records kept per shard (the latest); 0: 1000
	Window      time.Duration // how far back to read; 0: 5 minutes
	MaxCalls    int           // GetRecords calls per shard; 0: 20
	Interval    time.Duration // least time between GetRecords calls on a shard; 0: 200 ms
	CallTimeout time.Duration // deadline of each call; 0: 10 s
	// IteratorTimeout bounds GetShardIterator AT_TIMESTAMP, which answers
	// at once on AWS but never on kinesalite when no record is that recent;
	// after it the sample reads from TRIM_HORIZON instead. 0: 3 s.
	IteratorTimeout time.Duration
	Workers         int // shards read at once; 0: 4
	// Retries of a throttled or failed (5xx) call, per shard; 0: 3. Each
	// waits at least a second and counts toward the pacing: the SDK's own
	// retries are off for these calls.
	Retries int
	Now     func() time.Time
	Sleep   func(ctx context.Context, d time.Duration) error
	// OnShard is called after each shard is read, from the reading goroutine.
	OnShard func(s ShardSample)
}

func (o *SampleOptions) defaults() {
	if o.Max <= 0 {
		o.Max = DefaultSampleSize
	}
	o.Max = min(o.Max, MaxSampleSize)
	if o.Window <= 0 {
		o.Window = DefaultSampleWindow
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = 20
	}
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.IteratorTimeout <= 0 {
		o.IteratorTimeout = 3 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = kstream.Sleep
	}
}

// noSDKRetries leaves retries to the sampler, which paces them.
func noSDKRetries(o *kinesis.Options) { o.RetryMaxAttempts = 1 }

// SampleTraffic reads the recent records of the given open shards, from
// AT_TIMESTAMP now - Window, and keeps the latest Max of each: a bounded
// sample by arrival time. Shards are read in parallel (Workers), each at
// most 1/Interval calls per second.
func SampleTraffic(ctx context.Context, api SampleAPI, ref kstream.Ref, shards []*lineage.Shard, o SampleOptions) (*Sample, error) {
	o.defaults()
	since := o.Now().Add(-o.Window)
	out := make([]ShardSample, len(shards))
	errs := make([]error, len(shards))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Workers)
	for i, sh := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			out[i], errs[i] = sampleShard(ctx, api, ref, sh, since, &o)
			if errs[i] != nil {
				cancel()
			} else if o.OnShard != nil {
				o.OnShard(out[i])
			}
		}()
	}
	wg.Wait()
	// The first real failure, not the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return NewSample(o.Window, out...), nil
}

type sampled struct {
	key     string
	arrival time.Time
}

func sampleShard(ctx context.Context, api SampleAPI, ref kstream.Ref, sh *lineage.Shard, since time.Time, o *SampleOptions) (ShardSample, error) {
	s := ShardSample{ShardID: sh.ID, Range: sh.Range}
	fail := func(what string, err error) (ShardSample, error) {
		return s, fmt.Errorf("sample records of shard %s: %s: %w", sh.ID, what, err)
	}
	var iter *string
	getIterator := func(in *kinesis.GetShardIteratorInput, timeout time.Duration) error {
		return withDeadline(ctx, timeout, func(ctx context.Context) error {
			it, err := api.GetShardIterator(ctx, in)
			if err == nil {
				iter = it.ShardIterator
			}
			return err
		})
	}
	in := &kinesis.GetShardIteratorInput{StreamName: ref.NameInput(), StreamARN: ref.ARNInput(), ShardId: aws.String(sh.ID),
		ShardIteratorType: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(since)}
	err := getIterator(in, min(o.CallTimeout, o.IteratorTimeout))
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// kinesalite never answers AT_TIMESTAMP when no record arrived at or
		// after the time. Read from the oldest record instead, dropping the
		// ones older than the window (still within MaxCalls).
		in.ShardIteratorType, in.Timestamp = types.ShardIteratorTypeTrimHorizon, nil
		err = getIterator(in, o.CallTimeout)
	}
	if err != nil {
		return fail("get shard iterator", err)
	}
	// ring keeps the latest o.Max records.
	ring := make([]sampled, 0, min(o.Max, 1024))
	head, dropped := 0, false
	var last time.Time
	retries := 0
	reachedTip := false
	var newest time.Time
	const limit = 10000
	for iter != nil && s.Calls < o.MaxCalls {
		if !last.IsZero() {
			if err := o.Sleep(ctx, o.Interval-o.Now().Sub(last)); err != nil {
				return fail("get records", err)
			}
		}
		last = o.Now()
		s.Calls++
		var out *kinesis.GetRecordsOutput
		err := withDeadline(ctx, o.CallTimeout, func(ctx context.Context) error {
			var err error
			out, err = api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(limit)}, noSDKRetries)
			return err
		})
		if err != nil {
			if retries < o.Retries && ctx.Err() == nil && retryable(err) {
				retries++
				// A throttled shard refuses calls for the next second.
				if err := o.Sleep(ctx, time.Second); err != nil {
					return fail("get records", err)
				}
				continue
			}
			return fail("get records", err)
		}
		for _, r := range out.Records {
			rec := sampled{key: aws.ToString(r.PartitionKey), arrival: aws.ToTime(r.ApproximateArrivalTimestamp)}
			if rec.arrival.Before(since) {
				continue // read from TRIM_HORIZON: older than the window
			}
			newest = maxTime(newest, rec.arrival)
			if len(ring) < o.Max {
				ring = append(ring, rec)
				continue
			}
			ring[head] = rec
			head = (head + 1) % o.Max
			dropped = true
		}
		iter = out.NextShardIterator
		caughtUp := out.MillisBehindLatest != nil && *out.MillisBehindLatest == 0
		if len(out.Records) == 0 && (caughtUp || out.MillisBehindLatest == nil) || caughtUp && len(out.Records) < limit {
			reachedTip = true
			break
		}
	}
	// The time the kept records cover: from the window's start (or the
	// oldest kept record, when older ones were dropped) to now (or the
	// newest record read, when the calls ran out before the tip).
	start, end := since, o.Now()
	if !reachedTip && iter != nil && !newest.IsZero() {
		end = newest
	}
	keys := make([]string, len(ring))
	for i := range ring {
		r := ring[(head+i)%len(ring)]
		if i == 0 && dropped {
			start = r.arrival
		}
		keys[i] = r.key
	}
	s.Truncated = dropped
	s.Span = max(end.Sub(start), time.Millisecond)
	s.SpanSeconds = s.Span.Seconds()
	for _, k := range keys {
		s.add(lineage.PartitionKeyHash(k))
	}
	s.sort()
	return s, nil
}

func withDeadline(ctx context.Context, d time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

var sdkRetryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// retryable: throttling, 5xx and connection errors, as the SDK judges them.
func retryable(err error) bool {
	var pte *types.ProvisionedThroughputExceededException
	return errors.As(err, &pte) || sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
