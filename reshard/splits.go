package reshard

import (
	"cmp"
	"container/heap"
	"errors"
	"slices"
	"sort"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// EvenTolerance is how far, in hash keys, a boundary may lie from the even
// layout's and still count as in place: 2^40 keys, 2^-88 of the key space.
//
// Why so much: the even layouts of two counts M and N place a boundary
// they share in exact arithmetic (i/M = j/N) up to max(M, N) - 1 keys
// apart, as floor(2^128/N) is truncated. Aiming at the exact even layout
// would make halving or doubling a count that is not a power of two cost
// two or three times the calls (3 -> 6: 7 calls where 3 splits do), to move
// boundaries by a few keys out of 2^128.
//
// Why no more: with each boundary within 2^40 keys, a shard's width differs
// from the even layout's by at most 2^41 keys, and for every count up to
// 10,000 its share of the key space then rounds to the very float64 the
// exact even layout gives (TestEvenToleranceIsInvisible checks every count
// at both extremes; rounding is monotone, so all between agree): the shares
// print identically at any precision. 2^48 would not do (a few counts near
// 8,442 round differently).
const EvenTolerance = 1 << 40

// target is one boundary of a layout to reach: a split puts it at key, and
// a boundary already within lo..hi counts as it. The targets of a layout
// are sorted and their ranges disjoint.
type target struct{ key, lo, hi lineage.HashKey }

// evenTargets are the boundaries of lineage.EvenLayout(n), each with
// EvenTolerance on either side.
func evenTargets(n int) ([]target, error) {
	l, err := lineage.EvenLayout(n)
	if err != nil {
		return nil, err
	}
	out := make([]target, 0, n-1)
	for _, r := range l[1:] {
		lo, _ := r.Start.Sub64(EvenTolerance) // starts are >= 2^128/10000
		hi, _ := r.Start.Add64(EvenTolerance)
		out = append(out, target{key: r.Start, lo: lo, hi: hi})
	}
	return out, nil
}

// IsEvenLayout reports whether ranges (sorted, tiling the key space) are
// the even layout of as many shards, each boundary within EvenTolerance.
func IsEvenLayout(ranges []lineage.HashRange) bool {
	ts, err := evenTargets(len(ranges))
	if err != nil {
		return false
	}
	before := make([]Slot, len(ranges))
	for i, r := range ranges {
		before[i] = Slot{Range: r}
	}
	m := matchTargets(before, ts)
	return len(m.missing) == 0 && len(m.extra) == 0
}

// matching is how a layout's boundaries meet the targets: missing are the
// keys of the targets no boundary is within range of, extra the boundaries
// no target took, and near/offset count the boundaries taken that are not
// exactly at their target's key and the farthest of them.
type matching struct {
	missing []lineage.HashKey // sorted
	extra   map[lineage.HashKey]bool
	near    int
	offset  lineage.HashKey
}

// matchTargets gives each target the boundary within its range nearest its
// key (ranges are disjoint, so a boundary serves one target at most).
func matchTargets(before []Slot, targets []target) matching {
	bs := make([]lineage.HashKey, 0, len(before))
	for _, s := range before[1:] {
		bs = append(bs, s.Range.Start)
	}
	m := matching{extra: make(map[lineage.HashKey]bool, len(bs))}
	for _, b := range bs {
		m.extra[b] = true
	}
	for _, t := range targets {
		best := -1
		for j := sort.Search(len(bs), func(i int) bool { return bs[i].Cmp(t.lo) >= 0 }); j < len(bs) && bs[j].Cmp(t.hi) <= 0; j++ {
			if best < 0 || distance(bs[j], t.key).Cmp(distance(bs[best], t.key)) < 0 {
				best = j
			}
		}
		if best < 0 {
			m.missing = append(m.missing, t.key)
			continue
		}
		delete(m.extra, bs[best])
		if d := distance(bs[best], t.key); !d.IsZero() {
			m.near++
			m.offset = maxKey(m.offset, d)
		}
	}
	return m
}

// planLayout returns the SplitShard and MergeShards calls that take the
// open layout from before (sorted, tiling the key space) to the targets,
// and the layout at the end. Not to be confused with planSplit, which
// plans one split.
//
// A layout is its set of boundaries (the starts of its shards but the
// first). A split adds exactly one boundary and a merge removes exactly one.
// The layout to reach has exactly one boundary in each target's range and
// none elsewhere, so at least |missing| + |extra| calls are needed, where
// missing are the targets no boundary is in range of and extra the
// boundaries no target takes (matchTargets). The plan makes exactly that
// many: boundaries in range stay, every split is at a missing target's
// key, every merge removes an extra boundary.
//
// Order:
//   - A split while the open count is below cap, else a merge; cap is the
//     larger of the two counts (one more when they are equal, so evening out
//     never drops below the starting capacity). The open count so stays
//     between the smaller count and cap.
//   - A split goes to the widest shard that can take one, at the missing
//     boundary nearest its middle; a merge joins the pair that makes the
//     narrowest shard. With keys spread evenly, that relieves the busiest
//     shard first and keeps every intermediate layout as balanced as it can be.
//   - Merges that unblock a split (below) come before any other merge.
//   - A split must leave two keys on each side (Start+2 <= k <= End-1). One
//     too close to an extra boundary waits until a merge has removed that
//     boundary, and a merge of two adjacent open shards is always legal.
//     Target keys are far apart (even layouts: at least floor(2^128/10000);
//     balanced ones: in different gaps between sampled hashes) and any
//     boundary within two keys of one is in its range, so once the extra
//     boundaries are gone every split is legal: the loop ends.
func planLayout(before []Slot, targets []target) ([]Step, []Slot, error) {
	m := matchTargets(before, targets)
	p := &splitPlanner{cur: slices.Clone(before), missing: m.missing, extra: m.extra}
	for k := range p.cur {
		p.pushSlot(k)
	}
	capN := max(len(before), len(targets)+1)
	if len(before) == len(targets)+1 {
		capN++
	}
	steps := make([]Step, 0, len(p.missing)+len(p.extra))
	for len(p.missing)+len(p.extra) > 0 {
		if len(p.cur) < capN {
			if i, k, ok := p.nextSplit(); ok {
				steps = append(steps, splitStep(&p.cur, i, k))
				p.missing = slices.Delete(p.missing, p.missingIndex(k), p.missingIndex(k)+1)
				p.pushSlot(i)
				p.pushSlot(i + 1)
				continue
			}
		}
		i, ok := p.nextMerge()
		if !ok {
			return nil, nil, errors.New("reshard: internal error: no legal split and nothing to merge")
		}
		delete(p.extra, p.cur[i+1].Range.Start)
		steps = append(steps, mergeStep(&p.cur, i))
		p.pushSlot(i)
	}
	return steps, p.cur, nil
}

type splitPlanner struct {
	cur     []Slot
	missing []lineage.HashKey // sorted
	extra   map[lineage.HashKey]bool
	splits  splitHeap
	merges  mergeHeap
}

// legalMissing returns the index range [lo, hi) of the missing boundaries
// that are legal split keys of r: Start+2 .. End-1.
func (p *splitPlanner) legalMissing(r lineage.HashRange) (lo, hi int) {
	if r.Width().BitLen() < 3 { // fewer than 4 keys
		return 0, 0
	}
	first, last := legalSplitRange(r)
	lo = sort.Search(len(p.missing), func(i int) bool { return p.missing[i].Cmp(first) >= 0 })
	hi = sort.Search(len(p.missing), func(i int) bool { return p.missing[i].Cmp(last) > 0 })
	return lo, max(lo, hi)
}

func (p *splitPlanner) missingIndex(k lineage.HashKey) int {
	i, _ := slices.BinarySearchFunc(p.missing, k, lineage.HashKey.Cmp)
	return i
}

// pushSlot records slot i of the layout as a split candidate (if it can take
// a missing boundary) and the merges across its edges (if they are extra).
func (p *splitPlanner) pushSlot(i int) {
	s := p.cur[i]
	if lo, hi := p.legalMissing(s.Range); lo < hi {
		heap.Push(&p.splits, s.Range)
	}
	if i > 0 && p.extra[s.Range.Start] {
		heap.Push(&p.merges, p.mergeOf(p.cur[i-1].Range, s.Range))
	}
	if i+1 < len(p.cur) && p.extra[p.cur[i+1].Range.Start] {
		heap.Push(&p.merges, p.mergeOf(s.Range, p.cur[i+1].Range))
	}
}

// blocks reports whether the extra boundary e keeps a missing boundary from
// being a split key: one at e-1 would be the End of its shard, one at e+1
// its Start+1.
func (p *splitPlanner) blocks(e lineage.HashKey) bool {
	has := func(k lineage.HashKey) bool {
		_, found := slices.BinarySearchFunc(p.missing, k, lineage.HashKey.Cmp)
		return found
	}
	below, under := e.Sub64(1)
	above, over := e.Add64(1)
	return !under && has(below) || !over && has(above)
}

// slotOf returns the index of the slot holding exactly r, or -1.
func (p *splitPlanner) slotOf(r lineage.HashRange) int {
	i, found := slices.BinarySearchFunc(p.cur, r.Start, func(s Slot, k lineage.HashKey) int { return s.Range.Start.Cmp(k) })
	if !found || p.cur[i].Range != r {
		return -1
	}
	return i
}

// nextSplit pops the widest slot that can take a split and picks the legal
// missing boundary nearest its middle. Stale candidates (slots gone since)
// are dropped.
func (p *splitPlanner) nextSplit() (slot int, k lineage.HashKey, ok bool) {
	for p.splits.Len() > 0 {
		r := heap.Pop(&p.splits).(lineage.HashRange)
		i := p.slotOf(r)
		if i < 0 {
			continue
		}
		lo, hi := p.legalMissing(r)
		if lo == hi {
			continue
		}
		mid := r.Midpoint()
		c := lo + sort.Search(hi-lo, func(j int) bool { return p.missing[lo+j].Cmp(mid) >= 0 })
		best := min(c, hi-1)
		if c > lo && (c == hi || distance(p.missing[c-1], mid).Cmp(distance(p.missing[c], mid)) <= 0) {
			best = c - 1
		}
		return i, p.missing[best], true
	}
	return 0, lineage.HashKey{}, false
}

// nextMerge pops the pair across an extra boundary that makes the
// narrowest shard and returns the index of its lower slot.
func (p *splitPlanner) nextMerge() (int, bool) {
	for p.merges.Len() > 0 {
		m := heap.Pop(&p.merges).(mergeCand)
		i := p.slotOf(m.lower)
		if i < 0 || i+1 >= len(p.cur) || p.cur[i+1].Range != m.upper || !p.extra[m.upper.Start] {
			continue
		}
		return i, true
	}
	return 0, false
}

func distance(a, b lineage.HashKey) lineage.HashKey {
	if a.Cmp(b) < 0 {
		a, b = b, a
	}
	d, _ := a.Sub(b)
	return d
}

// span is End-Start, a range's width less one (fits 128 bits).
func span(r lineage.HashRange) lineage.HashKey {
	d, _ := r.End.Sub(r.Start)
	return d
}

// splitHeap is a max-heap of ranges by width, then lowest start.
type splitHeap []lineage.HashRange

func (h splitHeap) Len() int { return len(h) }
func (h splitHeap) Less(i, j int) bool {
	return cmp.Or(-span(h[i]).Cmp(span(h[j])), h[i].Start.Cmp(h[j].Start)) < 0
}
func (h splitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *splitHeap) Push(x any)   { *h = append(*h, x.(lineage.HashRange)) }
func (h *splitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type mergeCand struct {
	lower, upper lineage.HashRange
	width        lineage.HashKey // span of the merged range
	unblocks     bool            // the boundary blocks a split
}

func (p *splitPlanner) mergeOf(lower, upper lineage.HashRange) mergeCand {
	return mergeCand{lower: lower, upper: upper, width: span(lineage.HashRange{Start: lower.Start, End: upper.End}), unblocks: p.blocks(upper.Start)}
}

// mergeHeap is a min-heap of merges: those that unblock a split first, then
// by the merged width, then lowest start.
type mergeHeap []mergeCand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	ub := func(m mergeCand) int {
		if m.unblocks {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(ub(h[i]), ub(h[j])), h[i].width.Cmp(h[j].width), h[i].lower.Start.Cmp(h[j].lower.Start)) < 0
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// splitStep splits slot i of *l at k and returns the step.
func splitStep(l *[]Slot, i int, k lineage.HashKey) Step {
	old := (*l)[i]
	lowEnd, _ := k.Sub64(1)
	a := Slot{Range: lineage.HashRange{Start: old.Range.Start, End: lowEnd}}
	b := Slot{Range: lineage.HashRange{Start: k, End: old.Range.End}}
	*l = slices.Replace(*l, i, i+1, a, b)
	key := k
	parent := old
	return Step{Call: SplitShard, Args: Args{ShardToSplit: &parent, NewStartingHashKey: &key}, Closes: []Slot{old}, Opens: []Slot{a, b}, OpenShards: len(*l)}
}

// mergeStep merges slots i and i+1 of *l (adjacent by construction) and
// returns the step, the lower one as ShardToMerge.
func mergeStep(l *[]Slot, i int) Step {
	lower, upper := (*l)[i], (*l)[i+1]
	c := Slot{Range: lineage.HashRange{Start: lower.Range.Start, End: upper.Range.End}}
	*l = slices.Replace(*l, i, i+2, c)
	lo, up := lower, upper
	return Step{Call: MergeShards, Args: Args{ShardToMerge: &lo, AdjacentShardToMerge: &up}, Closes: []Slot{lower, upper}, Opens: []Slot{c}, OpenShards: len(*l)}
}
