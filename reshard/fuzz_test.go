package reshard

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// randomKey is a uniformly random hash key.
func randomKey(r *rand.Rand) lineage.HashKey {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return lineage.HashKeyFromBytes(b)
}

// randomLayout returns 1..40 shards tiling the key space, mixing random
// boundaries, boundaries next to an even layout's (off by -2..2, where
// splits get blocked), runs of tiny shards (1 to 3 keys) and shards at the
// very ends of the space.
func randomLayout(r *rand.Rand) []lineage.HashRange {
	set := map[lineage.HashKey]bool{}
	m := r.IntN(40)
	for range m {
		var k lineage.HashKey
		switch r.IntN(5) {
		case 0, 1:
			k = randomKey(r)
		case 2:
			even, _ := lineage.EvenLayout(1 + r.IntN(64))
			k = even[r.IntN(len(even))].Start
			if d := r.IntN(5) - 2; d < 0 {
				k, _ = k.Sub64(uint64(-d))
			} else {
				k, _ = k.Add64(uint64(d))
			}
		case 3:
			if len(set) > 0 {
				for b := range set { // any existing boundary, plus 1..3
					k, _ = b.Add64(uint64(1 + r.IntN(3)))
					break
				}
			}
		case 4:
			if r.IntN(2) == 0 {
				k = lineage.HashKeyFromUint64(uint64(1 + r.IntN(4)))
			} else {
				k, _ = lineage.MaxHashKey.Sub64(uint64(r.IntN(4)))
			}
		}
		if !k.IsZero() {
			set[k] = true
		}
	}
	var bs []lineage.HashKey
	for k := range set {
		bs = append(bs, k)
	}
	slices.SortFunc(bs, lineage.HashKey.Cmp)
	return boundariesLayout(bs)
}

// randomKeyIn is a random key of r, often near its edges.
func randomKeyIn(rd *rand.Rand, r lineage.HashRange) lineage.HashKey {
	switch rd.IntN(3) {
	case 0:
		k, over := r.Start.Add64(uint64(rd.IntN(4)))
		if over || k.Cmp(r.End) > 0 {
			return r.End
		}
		return k
	case 1:
		k, under := r.End.Sub64(uint64(rd.IntN(4)))
		if under || k.Cmp(r.Start) < 0 {
			return r.Start
		}
		return k
	}
	return r.KeyAtPercent(big.NewRat(int64(rd.IntN(10000)), 100))
}

var sentinels = []error{ErrUnknownShard, ErrClosedShard, ErrKeyOutOfRange, ErrShardTooSmall, ErrSameShard, ErrNotAdjacent,
	ErrOnDemand, ErrNotActive, ErrBadTarget, ErrTargetOutOfLimits, ErrInconsistent, ErrNoSample, ErrTooFewSamples, ErrOneKey}

// FuzzPlan: whatever the layout and the goal, a plan keeps the open shards
// tiling the key space after every step, every step obeys the service's
// rules (checkSteps), a splits plan ends exactly on the even layout with the
// fewest calls, and a refusal is one sentence wrapping a sentinel.
func FuzzPlan(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint16(4), uint16(0), uint16(1))
	f.Add(uint64(2), uint8(1), uint16(50), uint16(1), uint16(2))
	f.Add(uint64(3), uint8(2), uint16(7), uint16(3), uint16(2))
	f.Add(uint64(4), uint8(3), uint16(9), uint16(0), uint16(0))
	f.Add(uint64(5), uint8(4), uint16(33), uint16(0), uint16(0))
	f.Add(uint64(6), uint8(5), uint16(150), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8, n, x, y uint16) { randomGoal(t, seed, kind, n, x, y) })
}

// TestPlanRandomized runs FuzzPlan's property on a fixed set of inputs, and
// checks that they make plans often enough to mean something.
func TestPlanRandomized(t *testing.T) {
	rd := rand.New(rand.NewPCG(7, 11))
	planned := map[uint8]int{}
	const each = 400
	for kind := uint8(0); kind < 6; kind++ {
		for range each {
			if randomGoal(t, rd.Uint64(), kind, uint16(rd.Uint32()), uint16(rd.Uint32()), uint16(rd.Uint32())) {
				planned[kind]++
			}
		}
	}
	for kind := uint8(0); kind < 6; kind++ {
		if planned[kind] < each/5 {
			t.Errorf("goal kind %d: only %d of %d inputs made a plan", kind, planned[kind], each)
		}
	}
}

// randomGoal plans a random goal on a random layout and checks the result;
// it reports whether a plan was made (rather than refused).
func randomGoal(t *testing.T, seed uint64, kind uint8, n, x, y uint16) bool {
	t.Helper()
	rd := rand.New(rand.NewPCG(seed, uint64(kind)<<32|uint64(n)<<16|uint64(x)))
	layout := randomLayout(rd)
	g := layoutGraph(t, layout...)
	in := activeInput(g)
	pick := func(v uint16) string { return sid(int(v) % (len(layout) + 1)) } // sometimes one past the end: unknown
	var goal Goal
	switch kind % 6 {
	case 0:
		id := pick(x)
		var k lineage.HashKey
		if s := g.Shard(id); s != nil && rd.IntN(4) > 0 {
			k = randomKeyIn(rd, s.Range)
		} else {
			k = randomKey(rd)
		}
		goal = SplitGoal{Shard: id, At: &k}
	case 1:
		goal = SplitGoal{Shard: pick(x), Percent: big.NewRat(int64(1+int(n)%9999), 100)}
	case 2:
		switch y % 4 { // mostly neighbours, in either order
		case 0:
			goal = MergeGoal{Shards: [2]string{pick(x), pick(y)}}
		case 1:
			goal = MergeGoal{Shards: [2]string{pick(x + 1), pick(x)}}
		default:
			goal = MergeGoal{Shards: [2]string{pick(x), pick(x + 1)}}
		}
	case 3:
		goal = ScaleGoal{Target: int(n) % 90, Method: MethodUpdateShardCount}
	case 4:
		goal = ScaleGoal{Target: int(n) % 70, Method: MethodSplits, Even: x%2 == 0}
	case 5:
		id := pick(x)
		if s := g.Shard(id); s != nil {
			var hs []lineage.HashKey
			for range int(n) % 300 {
				if rd.IntN(5) == 0 && len(hs) > 0 {
					hs = append(hs, hs[rd.IntN(len(hs))])
				} else {
					hs = append(hs, randomKeyIn(rd, s.Range))
				}
			}
			in.Sample = NewSample(time.Minute, sampleOf(id, s.Range, time.Minute, hs...))
		}
		goal = SplitGoal{Shard: id, Median: true}
	}
	p, err := NewPlan(in, goal)
	if err != nil {
		if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
			t.Fatalf("%+v: error without a sentinel: %v", goal, err)
		}
		if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") || !IsRefusal(err) {
			t.Fatalf("%+v: error %q", goal, msg)
		}
		return false
	}
	final := checkSteps(t, p)
	switch g := goal.(type) {
	case SplitGoal, MergeGoal:
		if len(p.Steps) != 1 {
			t.Fatalf("%+v: %d steps", goal, len(p.Steps))
		}
	case ScaleGoal:
		to, _ := lineage.EvenLayout(g.Target)
		if g.Method == MethodSplits && g.Target == len(layout) && !g.Even {
			// The same count without Even: nothing to do, whatever the ranges.
			if len(p.Steps) != 0 || !strings.HasPrefix(p.Description, "nothing to do") {
				t.Fatalf("%d -> %d without Even: %d steps", len(layout), g.Target, len(p.Steps))
			}
		} else if g.Method == MethodSplits {
			if !nearEven(ranges(final), to) {
				t.Fatalf("%d -> %d: ends on %v", len(layout), g.Target, ranges(final))
			}
			if lb := lowerBoundTol(layout, to); len(p.Steps) != lb {
				t.Fatalf("%d -> %d: %d steps, lower bound %d", len(layout), g.Target, len(p.Steps), lb)
			}
			checkOpenCounts(t, layout, to, p)
		} else if len(p.Steps) == 1 && (len(final) != g.Target || !slices.Equal(ranges(p.After), to)) {
			t.Fatalf("UpdateShardCount to %d: %v", g.Target, p.After)
		}
	}
	return true
}

// checkOpenCounts: during a splits plan the open count never exceeds the
// larger of the two counts (one more when they are equal), and never falls
// below the smaller by more than the number of extra boundaries that block
// a split (those next to a missing one), which must be merged first.
func checkOpenCounts(t *testing.T, from, to []lineage.HashRange, p *Plan) {
	t.Helper()
	a, b := map[lineage.HashKey]bool{}, map[lineage.HashKey]bool{}
	for _, r := range from[1:] {
		a[r.Start] = true
	}
	for _, r := range to[1:] {
		b[r.Start] = true
	}
	blockers := 0
	for e := range a {
		lo, under := e.Sub64(1)
		hi, over := e.Add64(1)
		if !b[e] && (!under && b[lo] && !a[lo] || !over && b[hi] && !a[hi]) {
			blockers++
		}
	}
	hi := max(len(from), len(to))
	if len(from) == len(to) {
		hi++
	}
	lo := min(len(from), len(to)) - blockers
	for i, st := range p.Steps {
		if st.OpenShards > hi || st.OpenShards < lo {
			t.Fatalf("%d -> %d: step %d leaves %d open shards (allowed %d..%d)", len(from), len(to), i+1, st.OpenShards, lo, hi)
		}
	}
}
