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
// records' partition keys (with each record's size). It gives each range a
// share of the traffic, and a split its median.
type Sample struct {
	// Window is how far back the sample looked.
	Window time.Duration `json:"-"`
	// WindowSeconds is Window for JSON.
	WindowSeconds float64 `json:"windowSeconds"`
	// Records is the number of usable records over all shards.
	Records int           `json:"records"`
	Shards  []ShardSample `json:"shards"`
}

// Measure is what traffic is counted in: records or bytes.
type Measure string

// The two measures of traffic.
const (
	ByRecords Measure = "records"
	ByBytes   Measure = "bytes" // data + partition key, as the write quota counts
)

// ShardSample is the sample of one shard.
type ShardSample struct {
	ShardID string            `json:"shardId"`
	Range   lineage.HashRange `json:"-"`
	// Hashes are the partition key hashes of the records kept, sorted;
	// Keys and Sizes (data + key bytes) go with them, where known.
	Hashes []lineage.HashKey `json:"-"`
	Keys   []string          `json:"-"`
	Sizes  []int             `json:"-"`
	// weights: what each record stands for (nil: 1 each); cum[m][i] is the
	// weighted traffic of Hashes[:i] in measure m (0 records, 1 bytes).
	weights []float64
	cum     [2][]float64
	// Records is len(Hashes).
	Records int `json:"records"`
	// Bytes is the sum of Sizes.
	Bytes int `json:"bytes,omitempty"`
	// Outside counts records whose partition key hash lies outside the
	// shard: they were written with an ExplicitHashKey, which GetRecords
	// does not return, so their real hash is unknown and they are left out.
	Outside int `json:"outsideRange,omitempty"`
	// Truncated: more records arrived in the window than were read; those
	// read are spread evenly over the window and stand for the rest.
	Truncated bool `json:"truncated,omitempty"`
	// Estimated is how many records the window held, by the sample (set
	// when Truncated).
	Estimated float64 `json:"estimatedRecords,omitempty"`
	// Span is the time the records stand for: the shard's rate is
	// Records (weighted) / Span.
	Span time.Duration `json:"-"`
	// SpanSeconds is Span for JSON.
	SpanSeconds float64 `json:"seconds"`
	// Calls is the number of GetRecords calls made, Throttled how many of
	// them the shard refused.
	Calls     int `json:"getRecordsCalls"`
	Throttled int `json:"throttled,omitempty"`
	// Stopped says why the sample ended before the window did (its time
	// budget ran out): the records cover part of the window only.
	Stopped string `json:"stopped,omitempty"`
}

// NewShardSample builds the sample of shard id with range r from the
// partition keys of its records (any order), over span.
func NewShardSample(id string, r lineage.HashRange, keys []string, span time.Duration) ShardSample {
	s := ShardSample{ShardID: id, Range: r, Span: span, SpanSeconds: span.Seconds()}
	for _, k := range keys {
		s.add(lineage.PartitionKeyHash(k), k, len(k), 1)
	}
	s.sort()
	return s
}

// shardSampleOf turns a window read into a sample: the records whose hash
// lies in the shard, with their weights, over the time they cover.
func shardSampleOf(w ShardWindow) ShardSample {
	s := ShardSample{ShardID: w.ShardID, Range: w.Range, Truncated: w.Sampled, Span: max(w.Covered, time.Millisecond),
		Calls: w.Calls, Throttled: w.Throttled, Stopped: w.Stopped}
	s.SpanSeconds = s.Span.Seconds()
	for _, r := range w.Records {
		s.add(r.Hash(), r.PartitionKey, r.Bytes, r.Weight)
	}
	s.sort()
	if w.Sampled {
		s.Estimated = s.total(ByRecords)
	}
	return s
}

func (s *ShardSample) add(h lineage.HashKey, key string, size int, weight float64) {
	if !s.Range.Contains(h) {
		s.Outside++
		return
	}
	if weight != 1 && s.weights == nil {
		s.weights = slices.Repeat([]float64{1}, len(s.Hashes))
	}
	if s.weights != nil {
		s.weights = append(s.weights, weight)
	}
	s.Hashes = append(s.Hashes, h)
	s.Keys = append(s.Keys, key)
	s.Sizes = append(s.Sizes, size)
}

// sort orders the records by hash and sums their traffic.
func (s *ShardSample) sort() {
	idx := make([]int, len(s.Hashes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return s.Hashes[a].Cmp(s.Hashes[b]) })
	hs, ks, sz := make([]lineage.HashKey, len(idx)), make([]string, len(idx)), make([]int, len(idx))
	var ws []float64
	if s.weights != nil {
		ws = make([]float64, len(idx))
	}
	s.cum = [2][]float64{make([]float64, len(idx)+1), make([]float64, len(idx)+1)}
	s.Bytes = 0
	for i, j := range idx {
		hs[i], ks[i], sz[i] = s.Hashes[j], s.Keys[j], s.Sizes[j]
		w := 1.0
		if ws != nil {
			ws[i] = s.weights[j]
			w = ws[i]
		}
		s.cum[0][i+1] = s.cum[0][i] + w
		s.cum[1][i+1] = s.cum[1][i] + w*float64(sz[i])
		s.Bytes += sz[i]
	}
	s.Hashes, s.Keys, s.Sizes, s.weights = hs, ks, sz, ws
	s.Records = len(s.Hashes)
}

// total is the shard's weighted traffic in measure m.
func (s *ShardSample) total(m Measure) float64 {
	c := s.cumOf(m)
	return c[len(c)-1]
}

func (s *ShardSample) cumOf(m Measure) []float64 {
	if len(s.cum[0]) != len(s.Hashes)+1 {
		s.sort() // built by hand (tests): sum it now
	}
	if m == ByBytes {
		return s.cum[1]
	}
	return s.cum[0]
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

// count returns the weighted traffic of the hashes in r, in measure m.
func (s *ShardSample) count(r lineage.HashRange, m Measure) float64 {
	lo := sort.Search(len(s.Hashes), func(i int) bool { return s.Hashes[i].Cmp(r.Start) >= 0 })
	hi := sort.Search(len(s.Hashes), func(i int) bool { return s.Hashes[i].Cmp(r.End) > 0 })
	c := s.cumOf(m)
	return c[hi] - c[lo]
}

// Share returns the share of the sampled records that falls in r:
// ShareBy(r, ByRecords).
func (s *Sample) Share(r lineage.HashRange) (share float64, ok bool) {
	return s.ShareBy(r, ByRecords)
}

// ShareBy returns the share of the sampled traffic, in measure m, that
// falls in r: each shard's records weighted by its rate (traffic per
// second over the time its sample covers), so a busy shard whose sample
// was cut short still counts for what it carries. ok is false when r
// reaches beyond the sampled shards or nothing was sampled.
func (s *Sample) ShareBy(r lineage.HashRange, m Measure) (share float64, ok bool) {
	if s == nil || r.IsEmpty() {
		return 0, false
	}
	// Σ count_s(r)/span_s over Σ traffic_s/span_s, exactly, then rounded.
	covered := new(big.Int)
	total, part := new(big.Rat), new(big.Rat)
	for i := range s.Shards {
		sh := &s.Shards[i]
		span := big.NewRat(int64(sh.span(s.Window)), 1)
		total.Add(total, new(big.Rat).Quo(new(big.Rat).SetFloat64(sh.total(m)), span))
		o := lineage.HashRange{Start: maxKey(r.Start, sh.Range.Start), End: minKey(r.End, sh.Range.End)}
		if o.IsEmpty() {
			continue
		}
		covered.Add(covered, o.Width())
		part.Add(part, new(big.Rat).Quo(new(big.Rat).SetFloat64(sh.count(o, m)), span))
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
	cum := ss.cumOf(ByRecords)
	c := cutNear(h, cum, cum[n]/2)
	k := gapKey(h[c-1], h[c])
	lo, hi := legalSplitRange(sh.Range)
	return minKey(maxKey(k, lo), hi), nil
}

// cutNear returns the cut c (1 <= c < len(h), between two different
// hashes h[c-1] < h[c]) whose traffic below, cum[c], is nearest target;
// of two equally near, the lower. cum is ascending with len(h)+1 entries
// and h holds at least two different hashes.
func cutNear(h []lineage.HashKey, cum []float64, target float64) int {
	n := len(h)
	valid := func(c int) bool { return c >= 1 && c < n && h[c-1] != h[c] }
	p := sort.Search(n+1, func(i int) bool { return cum[i] >= target })
	lower, upper := -1, -1
	for c := min(p-1, n-1); c >= 1; c-- {
		if valid(c) {
			lower = c
			break
		}
	}
	for c := max(p, 1); c < n; c++ {
		if valid(c) {
			upper = c
			break
		}
	}
	switch {
	case lower < 0:
		return upper
	case upper < 0 || target-cum[lower] <= cum[upper]-target:
		return lower
	}
	return upper
}

// gapKey is floor((a+b)/2) + 1, a key in (a, b] for a < b: a boundary there
// puts a below it and b above it, with a margin on each side.
func gapKey(a, b lineage.HashKey) lineage.HashKey {
	sum := new(big.Int).Add(a.Big(), b.Big())
	sum.Rsh(sum, 1)
	sum.Add(sum, big.NewInt(1))
	k, _ := lineage.HashKeyFromBig(sum) // <= b: fits
	return k
}

// annotate adds traffic shares (in measure by) to every slot the sample
// covers.
func (p *Plan) annotate(s *Sample, by Measure) {
	set := func(x *Slot) {
		if f, ok := s.ShareBy(x.Range, by); ok {
			x.Traffic = &f
		}
	}
	each := func(xs []Slot) {
		for i := range xs {
			set(&xs[i])
		}
	}
	each(p.Before)
	each(p.After)
	for i := range p.Steps {
		st := &p.Steps[i]
		each(st.Closes)
		each(st.Opens)
		for _, x := range []*Slot{st.Args.ShardToSplit, st.Args.ShardToMerge, st.Args.AdjacentShardToMerge} {
			if x != nil {
				set(x)
			}
		}
	}
}
