package reshard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

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
	MaxSampleSize       = 10000
	DefaultSampleWindow = 5 * time.Minute
	// DefaultSampleBudget bounds the time the sample of one shard takes.
	DefaultSampleBudget = 20 * time.Second
)

// ErrSampleShort: a shard's sampling budget ran out before it yielded the
// fewest records the caller can use.
var ErrSampleShort = errors.New("too few records sampled in time")

// SampleOptions bound what SampleTraffic reads. The zero value samples up
// to 1,000 records of the last 5 minutes per shard, spread evenly over
// them when the shard holds more, paced as tail paces a shard (see
// ReadWindows), in at most 20 s per shard.
type SampleOptions struct {
	Max    int           // records read per shard; 0: 1000, at most 10000
	Window time.Duration // how far back to read; 0: 5 minutes
	// Budget is the time one shard's sample may take; 0: 20 s. When it
	// runs out the sample goes on with what it has (ShardSample.Stopped
	// says so), if that is at least MinRecords.
	Budget time.Duration
	// MinRecords is the fewest records a shard whose budget ran out must
	// have yielded (0: 1); fewer is an error wrapping ErrSampleShort. A
	// shard whose whole window was read is never short.
	MinRecords int
	MaxCalls   int           // GetRecords attempts per shard; 0: no limit but the budget
	Interval   time.Duration // least time between GetRecords calls on a shard; 0: 220 ms
	// CallTimeout is the deadline of each call; 0: 10 s.
	CallTimeout time.Duration
	// IteratorTimeout bounds GetShardIterator AT_TIMESTAMP, which answers
	// at once on AWS but never on kinesalite when no record is that recent;
	// after it the sample reads from TRIM_HORIZON instead. 0: 3 s.
	IteratorTimeout time.Duration
	Workers         int // shards read at once; 0: 4
	// Retries is how many failures in a row (5xx, dropped connections) a
	// shard's sample survives; 0: 5. Throttles are waited out with
	// backoff within the budget, not counted here.
	Retries int
	Now     func() time.Time
	Sleep   func(ctx context.Context, d time.Duration) error
	Seed    uint64 // of the backoff's jitter; 0: random
	// OnShard is called after each shard is read, from the reading goroutine.
	OnShard func(s ShardSample)
}

// SampleTraffic samples the records of the given open shards that arrived
// in the last Window: all of them when a shard holds at most Max there,
// else Max spread evenly over the window (ReadWindows). Shards are read in
// parallel (Workers), each within the shard's read limits.
func SampleTraffic(ctx context.Context, api SampleAPI, ref kstream.Ref, shards []*lineage.Shard, o SampleOptions) (*Sample, error) {
	if o.Max <= 0 {
		o.Max = DefaultSampleSize
	}
	o.Max = min(o.Max, MaxSampleSize)
	if o.Window <= 0 {
		o.Window = DefaultSampleWindow
	}
	if o.Budget <= 0 {
		o.Budget = DefaultSampleBudget
	}
	o.MinRecords = max(o.MinRecords, 1)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	until := now()
	wo := WindowOptions{From: until.Add(-o.Window), Until: until, MaxRecords: o.Max, Budget: o.Budget, MaxCalls: o.MaxCalls,
		Interval: o.Interval, CallTimeout: o.CallTimeout, IteratorTimeout: o.IteratorTimeout, Workers: o.Workers,
		Retries: o.Retries, Now: o.Now, Sleep: o.Sleep, Seed: o.Seed}
	var short error
	var mu sync.Mutex
	wo.OnShard = func(w ShardWindow) {
		if w.Stopped != "" && len(w.Records) < o.MinRecords {
			mu.Lock()
			if short == nil {
				short = fmt.Errorf("%w: only %s of shard %s could be sampled (%s%s); try again later, or with a longer --sample-window", ErrSampleShort, plural(len(w.Records), "record"), w.ShardID, w.Stopped, throttleNote(w.Throttled))
			}
			mu.Unlock()
			return
		}
		if o.OnShard != nil {
			o.OnShard(shardSampleOf(w))
		}
	}
	ws, err := ReadWindows(ctx, api, ref, shards, wo)
	if err != nil {
		return nil, err
	}
	if short != nil {
		return nil, short
	}
	out := make([]ShardSample, len(ws))
	for i, w := range ws {
		out[i] = shardSampleOf(w)
	}
	return NewSample(o.Window, out...), nil
}

// throttleNote says how often a shard refused the sampler, for messages.
func throttleNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the shard refused %s: other consumers are reading it hard", plural(n, "call"))
}

// Short lists, one sentence each, the shards whose sample ended before
// their window did, with how much they yielded: for a warning before a
// plan that goes on with them.
func (s *Sample) Short() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, sh := range s.Shards {
		if sh.Stopped != "" {
			out = append(out, fmt.Sprintf("the sample of shard %s stopped early (%s%s): going on with its %s, which cover %s of the window", sh.ShardID, sh.Stopped, throttleNote(sh.Throttled), plural(sh.Records, "record"), sh.Span.Round(time.Second)))
		}
	}
	return out
}

func withDeadline(ctx context.Context, d time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}
