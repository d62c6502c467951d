package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// API is what measuring needs from the Kinesis client.
type API interface {
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// Report is a consumer's lag on every shard of a stream (kinesis-shards
// lag -o json).
type Report struct {
	Stream string     `json:"stream"`
	Source SourceRef  `json:"source"`
	Shards []ShardLag `json:"shards"`
	// MaxMillisBehindLatest is the largest figure measured (null: none
	// was), WorstShard the shard it is of.
	MaxMillisBehindLatest *int64 `json:"maxMillisBehindLatest"`
	WorstShard            string `json:"worstShardId,omitempty"`
	// Note is what the source says about the shards shown (a filtered
	// checkpoint file, other streams' leases).
	Note string `json:"note,omitempty"`
}

// Count is how many shards are in state st.
func (r *Report) Count(st State) int {
	n := 0
	for i := range r.Shards {
		if r.Shards[i].State == st {
			n++
		}
	}
	return n
}

// Failed are the shards whose figure could not be read.
func (r *Report) Failed() []ShardLag {
	var out []ShardLag
	for _, s := range r.Shards {
		if s.Error != "" {
			out = append(out, s)
		}
	}
	return out
}

// summarize sets the worst figure. A tie goes to the shard first in
// lineage order (parents first: the one whose backlog is read first).
func (r *Report) summarize() {
	r.MaxMillisBehindLatest, r.WorstShard = nil, ""
	for _, s := range r.Shards {
		if m := s.MillisBehindLatest; m != nil && (r.MaxMillisBehindLatest == nil || *m > *r.MaxMillisBehindLatest) {
			v := *m
			r.MaxMillisBehindLatest, r.WorstShard = &v, s.ShardID
		}
	}
}

// Options tune Lag.
type Options struct {
	// Measure: make the one GetShardIterator and GetRecords per shard. Off,
	// the report has the positions and states only (the dashboard while
	// its reader is paused: no GetRecords call at all).
	Measure bool
	// Workers bounds the shards measured at once (0: 8).
	Workers int
	// CallTimeout is each call's deadline (0: 10 s); ShardBudget bounds a
	// shard's calls and their retries after a throttle (0: 30 s).
	CallTimeout, ShardBudget time.Duration
	// DescribeError words a shard's failure (nil: err.Error()).
	DescribeError func(error) string
	Sleep         func(ctx context.Context, d time.Duration) error
	// Seed seeds the backoff's jitter (0: random), for tests.
	Seed uint64
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.ShardBudget <= 0 {
		o.ShardBudget = 30 * time.Second
	}
	if o.DescribeError == nil {
		o.DescribeError = func(err error) string { return err.Error() }
	}
	if o.Sleep == nil {
		o.Sleep = awscall.Sleep
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
}

// Lag reads the source over the lineage and, with o.Measure, measures each
// shard that is reading, not started or blocked. A shard whose figure
// cannot be read (after retrying throttles within its budget) carries the
// reason in Error; the error returned is the source's, or ctx's.
func Lag(ctx context.Context, api API, ref kstream.Ref, g *lineage.Graph, sum *kstream.Summary, src Source, o Options) (*Report, error) {
	o.defaults()
	shards, note, err := src.Read(ctx, g, sum)
	if err != nil {
		return nil, err
	}
	r := &Report{Stream: sum.Name, Source: src.Ref(), Shards: shards, Note: note}
	if o.Measure {
		measureAll(ctx, api, ref, r.Shards, &o)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	r.summarize()
	return r, nil
}

// measureAll measures the shards, o.Workers at a time, and waits for them.
func measureAll(ctx context.Context, api API, ref kstream.Ref, shards []ShardLag, o *Options) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Workers)
	for i := range shards {
		if shards[i].from == nil {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
			ms, err := measure(ctx, api, ref, &shards[i], o, rng)
			if err != nil {
				shards[i].Error = o.DescribeError(err)
				return
			}
			shards[i].MillisBehindLatest = &ms
		}()
	}
	wg.Wait()
}

// maxFailures is how many passing failures in a row (5xx, dropped
// connections) a shard's measure survives; throttles are waited out within
// the shard's budget. The waits are those of every reader of shards
// (awscall.Pacer).
const maxFailures = 3

// errNoFigure: an answer without MillisBehindLatest.
var errNoFigure = errors.New("the service's answer carries no MillisBehindLatest")

// measure gets an iterator at the shard's position and reads one record
// from it: the answer's MillisBehindLatest is how far behind the tip the
// position is (docs/KINESIS-NOTES.md §14). A throttle or a passing failure
// is retried after a backoff, within the shard's budget; the SDK's own
// retries are off, so every attempt is one call the shard's 5 a second see.
func measure(ctx context.Context, api API, ref kstream.Ref, sl *ShardLag, o *Options, rng *rand.Rand) (int64, error) {
	ctx, cancel := context.WithTimeout(awsdebug.WithShard(ctx, sl.ShardID), o.ShardBudget)
	defer cancel()
	in := &kinesis.GetShardIteratorInput{StreamName: ref.NameInput(), StreamARN: ref.ARNInput(), ShardId: aws.String(sl.ShardID), ShardIteratorType: sl.from.kind}
	switch sl.from.kind {
	case types.ShardIteratorTypeAfterSequenceNumber, types.ShardIteratorTypeAtSequenceNumber:
		in.StartingSequenceNumber = aws.String(sl.from.seq)
	case types.ShardIteratorTypeAtTimestamp:
		in.Timestamp = aws.Time(sl.from.ts)
	}
	var it *string
	// One pacer per operation: GetShardIterator and GetRecords each have
	// their 5 calls a second per shard.
	iters, reads := awscall.NewPacer(rng, 0), awscall.NewPacer(rng, 0)
	failures := 0
	for {
		var err error
		pacer := reads
		if it == nil {
			pacer = iters
		}
		if d := pacer.Until(time.Now()); d > 0 {
			if serr := o.Sleep(ctx, d); serr != nil {
				return 0, serr
			}
		}
		attempt := time.Now()
		pacer.Attempt(attempt)
		if it == nil {
			var out *kinesis.GetShardIteratorOutput
			if out, err = call(ctx, o.CallTimeout, func(ctx context.Context) (*kinesis.GetShardIteratorOutput, error) {
				return api.GetShardIterator(ctx, in, awscall.Once)
			}); err == nil {
				it = out.ShardIterator
				continue
			}
		} else {
			var out *kinesis.GetRecordsOutput
			if out, err = call(ctx, o.CallTimeout, func(ctx context.Context) (*kinesis.GetRecordsOutput, error) {
				return api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1), StreamARN: ref.ARNInput()}, awscall.Once)
			}); err == nil {
				if out.MillisBehindLatest == nil {
					return 0, errNoFigure
				}
				return *out.MillisBehindLatest, nil
			}
		}
		switch verdict := awscall.OnRead(err); {
		case ctx.Err() != nil:
			return 0, err
		case verdict == awscall.Throttle:
			pacer.Throttled(attempt)
		case verdict == awscall.Renew:
			it = nil
		case verdict == awscall.Retry && failures < maxFailures:
			failures++
			pacer.Failed(attempt)
		default:
			return 0, err
		}
		if dl, ok := ctx.Deadline(); ok && dl.Before(pacer.Next()) {
			return 0, fmt.Errorf("gave up within the shard's %s: %w", o.ShardBudget, err)
		}
	}
}

// call runs fn under its own deadline.
func call[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(ctx)
}
