package reshard

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Reading a window of a shard's records. ReadWindows reads every record of
// some shards that arrived in [From, Until], paced as tail paces a shard,
// and when a shard holds more than MaxRecords there it samples evenly
// across the window instead: the window is cut into slices, each slice is
// read from its start (GetShardIterator AT_TIMESTAMP) until its share of
// MaxRecords, and the records read stand for the whole slice (Weight). A
// slice that holds less than its share hands the rest to the later ones; a
// shard read to its tip ends every slice; and what is left of MaxRecords at
// the end goes back to the slices that were cut short, each read on from
// its last record: a window that holds at most MaxRecords is read exactly,
// however its traffic is spread.
//
// Limits a hot shard imposes (docs/KINESIS-NOTES.md §1), all respected
// by the pacer every reader of shards uses (awscall.Pacer, one for
// GetRecords and one for GetShardIterator):
//   - 5 GetRecords calls a second per shard, shared by every consumer, each
//     attempt counting: calls start at least Interval (220 ms) apart.
//   - 2 MiB a second of reads: after a response of B bytes the next call
//     waits B / 2 MiB/s, so the 5 s AWS refuses every call after a 10 MiB
//     response is never hit. Each call asks for what the slice still
//     needs, and for no more records than about 2 MiB holds once the
//     shard's record size is known, so no response shuts the shard's other
//     consumers out for seconds.
//   - A throttle (the shard's quota spent) is retried never sooner
//     than a second, since a throttled shard stays refused for the rest of
//     its second, and longer under repeated throttles.
//
// A read has a time budget (Budget); when it runs out, the records read so
// far are the result, over the part of the window they cover, and Stopped
// says why.

// Window reading defaults.
const (
	DefaultMaxRecords = 100000
	// minSliceRecords is the fewest records a slice is given: fewer would
	// make each slice's rate estimate noisy.
	minSliceRecords = 100
	maxSlices       = 50
	// maxCallBytes: each response aims at one second of the read quota.
	maxCallBytes = awscall.ReadBytesPerSecond
	// firstLimit bounds the first call on a shard, whose record size is
	// not known yet.
	firstLimit = 100
	maxLimit   = 10000
)

// WindowRecord is one record read from a window.
type WindowRecord struct {
	Arrival      time.Time
	PartitionKey string
	// ExplicitHashKey, when not "", is the hash key the record was written
	// with. GetRecords does not return it, so only a caller that knows it
	// (a de-aggregated KPL record) sets it.
	ExplicitHashKey string
	// Bytes is the data and the partition key: what counts toward the
	// shard's write quota.
	Bytes int
	// Weight is how many records of the window this one stands for: 1,
	// more when its part of the window was sampled.
	Weight float64
}

// Hash is the record's hash key: its ExplicitHashKey when that is a valid
// one, else the MD5 of its partition key.
func (r WindowRecord) Hash() lineage.HashKey {
	if r.ExplicitHashKey != "" {
		if k, err := lineage.ParseHashKey(r.ExplicitHashKey); err == nil {
			return k
		}
	}
	return lineage.PartitionKeyHash(r.PartitionKey)
}

// ShardWindow is what was read of one shard over a window.
type ShardWindow struct {
	ShardID     string
	Range       lineage.HashRange
	From, Until time.Time
	// Records in the order read (arrival order, as the shard holds them).
	Records []WindowRecord
	// Covered is the part of the window the records stand for: Until-From,
	// less when the read stopped early (Stopped).
	Covered time.Duration
	// Sampled: part of the window held more records than were read, so
	// the figures are estimates (Weight > 1 on those records).
	Sampled bool
	// Estimated is the number of records the covered window holds: the sum
	// of the weights (len(Records) when not Sampled).
	Estimated float64
	// Stopped says why the read ended before the end of the window ("":
	// it did not).
	Stopped string
	// Calls and Throttled count GetRecords attempts and refusals.
	Calls, Throttled int
	// Slices are the parts of the window that were read, in order: what
	// the estimate of each stands on (hot's bounds come from their
	// spread). Empty for a window not read by ReadWindows.
	Slices []SliceEstimate
}

// SliceEstimate is one part of a window as it was read.
type SliceEstimate struct {
	// Seconds is the part of the window the slice stands for, ReadSeconds
	// the part its records come from (less when it was cut).
	Seconds, ReadSeconds float64
	// Read records were read; they stand for Records (more when Cut: the
	// slice held more than its share, and its rate from its start to the
	// cut stands for the whole slice).
	Read    int
	Records float64
	Cut     bool
}

// SampledShare is the share of the covered window's records that were
// read: 1 unless Sampled.
func (w *ShardWindow) SampledShare() float64 {
	if w.Estimated <= 0 {
		return 1
	}
	return min(1, float64(len(w.Records))/w.Estimated)
}

// WindowOptions bound ReadWindows. From is required; the rest have
// defaults.
type WindowOptions struct {
	From, Until time.Time // both included; Until zero: now
	// MaxRecords is the most records read per shard; more in the window
	// and the shard is sampled evenly across it (each part of the sample
	// ends between two arrival times, so it may take the rest of a burst
	// that arrived in the same millisecond beyond its share). 0:
	// DefaultMaxRecords.
	MaxRecords int
	// Budget bounds the time one shard's read may take (0: none, only
	// ctx); when it runs out the read ends with what it has.
	Budget time.Duration
	// MaxCalls bounds the GetRecords attempts per shard (0: none).
	MaxCalls int
	// Interval is the least time between calls on a shard; 0: 220 ms
	// (awscall.MinCallInterval).
	Interval    time.Duration
	CallTimeout time.Duration // deadline of each call; 0: 10 s
	// IteratorTimeout bounds GetShardIterator AT_TIMESTAMP, which answers
	// at once on AWS but never on kinesalite when no record is that
	// recent; the first slice then reads from TRIM_HORIZON, a later one on
	// from the last record read. 0: 3 s.
	IteratorTimeout time.Duration
	Workers         int // shards read at once; 0: 4
	// Retries is how many failures in a row (5xx, dropped connections,
	// timeouts) a shard's read survives; 0: 5. Throttles are not failures:
	// they are waited out within the budget.
	Retries int
	Now     func() time.Time
	Sleep   func(ctx context.Context, d time.Duration) error
	// Seed seeds the backoff's jitter (0: random), for tests.
	Seed uint64
	// OnShard is called after each shard is read, from its goroutine.
	OnShard func(w ShardWindow)
}

func (o *WindowOptions) defaults() {
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.Interval <= 0 {
		o.Interval = awscall.MinCallInterval
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
		o.Retries = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = awscall.Sleep
	}
	if o.Until.IsZero() {
		o.Until = o.Now()
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
}

// ErrEmptyWindow: the window ends before it starts.
var ErrEmptyWindow = errors.New("empty window")

// ReadWindows reads the window of each shard (in parallel, Workers at a
// time) and returns one ShardWindow per shard, in the order given. The
// first error of a shard (other than a throttle or a passing failure)
// stops them all and is returned, naming the shard.
func ReadWindows(ctx context.Context, api SampleAPI, ref kstream.Ref, shards []*lineage.Shard, o WindowOptions) ([]ShardWindow, error) {
	o.defaults()
	if !o.From.Before(o.Until) {
		return nil, refuse(ErrEmptyWindow, "the window to read ends at "+o.Until.UTC().Format(time.RFC3339)+", before it starts at "+o.From.UTC().Format(time.RFC3339))
	}
	out := make([]ShardWindow, len(shards))
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
			r := newWindowReader(api, ref, sh, &o, uint64(i))
			out[i], errs[i] = r.run(ctx)
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
	return out, nil
}

// slice is one part of the window, read from its start.
type slice struct {
	start, end time.Time
	quota      int // records it may take
	n          int // records taken: len(recs)
	recs       []WindowRecord
	last       time.Time // arrival of the last record taken
	lastSeq    string    // and its sequence number
	// cut is the arrival of the first record beyond the quota: the slice's
	// records are exactly those of [start, cut), and stand for the slice.
	cut   time.Time
	state sliceState
}

type sliceState int

const (
	sliceUnread   sliceState = iota // not reached (the read stopped first)
	sliceReading                    // being read
	sliceComplete                   // every record of it was read
	sliceCut                        // read up to its quota: sampled
)

// sliceCount is how many slices a sample of n records spreads over.
func sliceCount(n int) int {
	return min(maxSlices, max(1, n/minSliceRecords))
}

func makeSlices(from, until time.Time, n int) []slice {
	out := make([]slice, n)
	d := until.Sub(from)
	for i := range out {
		out[i].start = from.Add(d * time.Duration(i) / time.Duration(n))
		out[i].end = from.Add(d * time.Duration(i+1) / time.Duration(n))
	}
	out[n-1].end = until
	return out
}

// weight is what each record of the slice stands for, and the time of the
// window the slice covers.
func (s *slice) weight() (w float64, covered time.Duration) {
	switch s.state {
	case sliceComplete:
		return 1, s.end.Sub(s.start)
	case sliceCut:
		// The rate over [start, cut), applied to the whole slice: it
		// assumes steady traffic within one slice.
		seen := max(s.cut.Sub(s.start), time.Millisecond)
		return max(1, float64(s.end.Sub(s.start))/float64(seen)), s.end.Sub(s.start)
	case sliceReading:
		// Stopped inside it: its records are exact up to the last one.
		if s.n == 0 {
			return 1, 0
		}
		return 1, max(s.last.Sub(s.start), time.Millisecond)
	}
	return 1, 0
}
