package reshard

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Sample is recent traffic of some open shards: the hash keys of their
// records' partition keys. It gives each range a share of the traffic, and
// a split its median.
type Sample struct {
	// Window is how far back the sample looked.
	Window time.Duration `json:"-"`
	// WindowSeconds is Window for JSON.
	WindowSeconds float64 `json:"windowSeconds"`
	// Records is the number of usable records over all shards.
	Records int           `json:"records"`
	Shards  []ShardSample `json:"shards"`
}

// ShardSample is the sample of one shard.
type ShardSample struct {
	ShardID string            `json:"shardId"`
	Range   lineage.HashRange `json:"-"`
	// Hashes are the partition key hashes of the records kept, sorted.
	Hashes []lineage.HashKey `json:"-"`
	// Records is len(Hashes).
	Records int `json:"records"`
	// Outside counts records whose partition key hash lies outside the
	// shard: they were written with an ExplicitHashKey, which GetRecords
	// does not return, so their real hash is unknown and they are left out.
	Outside int `json:"outsideRange,omitempty"`
	// Truncated: more records arrived in the window than were kept (the
	// latest ones are kept).
	Truncated bool `json:"truncated,omitempty"`
	// Span is the time the kept records cover, up to now: the rate of the
	// shard is Records / Span.
	Span time.Duration `json:"-"`
	// SpanSeconds is Span for JSON.
	SpanSeconds float64 `json:"seconds"`
	// Calls is the number of GetRecords calls made.
	Calls int `json:"getRecordsCalls"`
}

// NewShardSample builds the sample of shard id with range r from the
// partition keys of its records (any order), over span.
func NewShardSample(id string, r lineage.HashRange, keys []string, span time.Duration) ShardSample {
	s := ShardSample{ShardID: id, Range: r, Span: span, SpanSeconds: span.Seconds()}
	for _, k := range keys {
		s.add(lineage.PartitionKeyHash(k))
	}
	s.sort()
	return s
}

func (s *ShardSample) add(h lineage.HashKey) {
	if !s.Range.Contains(h) {
		s.Outside++
		return
	}
	s.Hashes = append(s.Hashes, h)
}

func (s *ShardSample) sort() {
	slices.SortFunc(s.Hashes, lineage.HashKey.Cmp)
	s.Records = len(s.Hashes)
}

// NewSample bundles shard samples taken over window.
func NewSample(window time.Duration, shards ...ShardSample) *Sample {
	s := &Sample{Window: window, WindowSeconds: window.Seconds(), Shards: shards}
	for _, sh := range shards {
		s.Records += len(sh.Hashes)
	}
	return s
}

// Shard returns the sample of a shard, or nil.
func (s *Sample) Shard(id string) *ShardSample {
	if s == nil {
		return nil
	}
	for i := range s.Shards {
		if s.Shards[i].ShardID == id {
			return &s.Shards[i]
		}
	}
	return nil
}

// span is the time the shard's records cover; a sample without one counts
// over the window.
func (s *ShardSample) span(window time.Duration) time.Duration {
	switch {
	case s.Span > 0:
		return s.Span
	case window > 0:
		return window
	}
	return time.Second
}

// count returns how many hashes lie in r.
func (s *ShardSample) count(r lineage.HashRange) int {
	lo := sort.Search(len(s.Hashes), func(i int) bool { return s.Hashes[i].Cmp(r.Start) >= 0 })
	hi := sort.Search(len(s.Hashes), func(i int) bool { return s.Hashes[i].Cmp(r.End) > 0 })
	return hi - lo
}

// Share returns the share of the sampled traffic that falls in r: each
// shard's records weighted by its rate (records per second over the time
// they cover), so a busy shard whose sample was cut short still counts for
// what it carries. ok is false when r reaches beyond the sampled shards or
// nothing was sampled.
func (s *Sample) Share(r lineage.HashRange) (share float64, ok bool) {
	if s == nil || r.IsEmpty() {
		return 0, false
	}
	// Σ count_s(r)/span_s over Σ records_s/span_s, exactly, then rounded.
	covered := new(big.Int)
	total, part := new(big.Rat), new(big.Rat)
	for i := range s.Shards {
		sh := &s.Shards[i]
		span := int64(sh.span(s.Window))
		total.Add(total, big.NewRat(int64(len(sh.Hashes)), span))
		o := lineage.HashRange{Start: maxKey(r.Start, sh.Range.Start), End: minKey(r.End, sh.Range.End)}
		if o.IsEmpty() {
			continue
		}
		covered.Add(covered, o.Width())
		part.Add(part, big.NewRat(int64(sh.count(o)), span))
	}
	if total.Sign() == 0 || covered.Cmp(r.Width()) != 0 {
		return 0, false
	}
	share, _ = part.Quo(part, total).Float64()
	return share, true
}

func minKey(a, b lineage.HashKey) lineage.HashKey {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b lineage.HashKey) lineage.HashKey {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// medianKey picks the split key that divides the shard's sampled records
// most evenly: of the cuts between two different neighbouring hashes, the
// one closest to the middle, with the key halfway between the two hashes
// (so each child keeps a margin around its sampled keys). One partition key
// is never divided (all its records have one hash). The key is then kept
// within Start+2 .. End-1.
func medianKey(in Input, sh *lineage.Shard, ss *ShardSample) (lineage.HashKey, error) {
	h := ss.Hashes
	n := len(h)
	if n < MinMedianSample {
		return lineage.HashKey{}, refuse(ErrTooFewSamples, fmt.Sprintf("only %d records of shard %s of stream %s were sampled (at least %d are needed to split at their median); split at a hash key or a percentage instead, or sample a longer window", n, sh.ID, in.Stream.Name, MinMedianSample))
	}
	if h[0] == h[n-1] {
		return lineage.HashKey{}, refuse(ErrOneKey, fmt.Sprintf("all %d sampled records of shard %s of stream %s have the same hash key (one partition key): a split cannot divide one key's traffic", n, sh.ID, in.Stream.Name))
	}
	c := -1
	for d := 0; c < 0; d++ {
		for _, cut := range [2]int{n/2 - d, n/2 + d} {
			if cut >= 1 && cut <= n-1 && h[cut-1] != h[cut] {
				c = cut
				break
			}
		}
	}
	// k = floor((a+b)/2) + 1 lies in (a, b]: the lower child gets h[:c].
	sum := new(big.Int).Add(h[c-1].Big(), h[c].Big())
	sum.Rsh(sum, 1)
	sum.Add(sum, big.NewInt(1))
	k, err := lineage.HashKeyFromBig(sum)
	if err != nil {
		return lineage.HashKey{}, err
	}
	lo, hi := legalSplitRange(sh.Range)
	return minKey(maxKey(k, lo), hi), nil
}
