package reshard

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

func sid(n int) string { return fmt.Sprintf("shardId-%012d", n) }

func key(s string) lineage.HashKey {
	k, err := lineage.ParseHashKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func bigKey(b *big.Int) lineage.HashKey {
	k, err := lineage.HashKeyFromBig(b)
	if err != nil {
		panic(err)
	}
	return k
}

func u(n uint64) lineage.HashKey { return lineage.HashKeyFromUint64(n) }

func add(k lineage.HashKey, n uint64) lineage.HashKey {
	r, over := k.Add64(n)
	if over {
		panic("overflow")
	}
	return r
}

func sub(k lineage.HashKey, n uint64) lineage.HashKey {
	r, under := k.Sub64(n)
	if under {
		panic("underflow")
	}
	return r
}

func rng(a, b lineage.HashKey) lineage.HashRange { return lineage.HashRange{Start: a, End: b} }

var (
	two127   = key("170141183460469231731687303715884105728")
	two126   = key("85070591730234615865843651857942052864")
	maxK     = lineage.MaxHashKey
	twoTo128 = new(big.Int).Lsh(big.NewInt(1), 128)
)

// listed builds a ListShards entry.
func listed(id string, r lineage.HashRange, open bool, parents ...string) types.Shard {
	s := types.Shard{
		ShardId:             aws.String(id),
		HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(r.Start.String()), EndingHashKey: aws.String(r.End.String())},
		SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")},
	}
	if !open {
		s.SequenceNumberRange.EndingSequenceNumber = aws.String("2")
	}
	if len(parents) > 0 {
		s.ParentShardId = aws.String(parents[0])
	}
	if len(parents) > 1 {
		s.AdjacentParentShardId = aws.String(parents[1])
	}
	return s
}

// layoutGraph is a stream whose open shards are shardId-0..n-1 with these
// ranges (no history).
func layoutGraph(t testing.TB, ranges ...lineage.HashRange) *lineage.Graph {
	t.Helper()
	var shards []types.Shard
	for i, r := range ranges {
		shards = append(shards, listed(sid(i), r, true))
	}
	g, err := lineage.Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// boundariesLayout turns sorted, distinct, non-zero boundaries into ranges.
func boundariesLayout(bs []lineage.HashKey) []lineage.HashRange {
	var out []lineage.HashRange
	start := lineage.HashKey{}
	for _, b := range bs {
		out = append(out, rng(start, sub(b, 1)))
		start = b
	}
	return append(out, rng(start, maxK))
}

func evenLayout(t testing.TB, n int) []lineage.HashRange {
	t.Helper()
	l, err := lineage.EvenLayout(n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func activeInput(g *lineage.Graph) Input {
	return Input{Stream: Stream{Name: "s", Status: types.StreamStatusActive, Mode: types.StreamModeProvisioned}, Graph: g}
}

// checkSteps replays the plan from Before and checks every step against the
// service's rules and the plan's own claims; it returns the final layout.
// Coverage is checked after every step of small plans, and at the end of
// all of them.
func checkSteps(t testing.TB, p *Plan) []Slot {
	t.Helper()
	cur := slices.Clone(p.Before)
	if err := lineage.CheckCoverage(ranges(cur)); err != nil {
		t.Fatalf("before: %v", err)
	}
	original := map[string]lineage.HashRange{}
	for _, s := range p.Before {
		original[s.ID] = s.Range
	}
	at := func(n int, s *Slot) int {
		if s == nil {
			t.Fatalf("step %d: missing argument", n)
		}
		i, found := slices.BinarySearchFunc(cur, s.Range.Start, func(c Slot, k lineage.HashKey) int { return c.Range.Start.Cmp(k) })
		if !found || cur[i].Range != s.Range {
			t.Fatalf("step %d names %s, which is not open", n, s.Range)
		}
		// An id in a step must be the original shard's; new shards have none.
		if s.ID != "" && original[s.ID] != s.Range || s.ID != cur[i].ID {
			t.Fatalf("step %d names shard %q for %s; the layout has %q there", n, s.ID, s.Range, cur[i].ID)
		}
		return i
	}
	small := len(p.Steps) <= 200
	for n0, st := range p.Steps {
		n := n0 + 1
		switch st.Call {
		case SplitShard:
			i := at(n, st.Args.ShardToSplit)
			r := cur[i].Range
			k := *st.Args.NewStartingHashKey
			// The service's rule, in big integers: Start+2 <= k <= End-1.
			fromStart := new(big.Int).Sub(k.Big(), r.Start.Big())
			toEnd := new(big.Int).Sub(r.End.Big(), k.Big())
			if fromStart.Cmp(big.NewInt(2)) < 0 || toEnd.Cmp(big.NewInt(1)) < 0 {
				t.Fatalf("step %d: split key %s not in %s+2 .. end-1", n, k, r)
			}
			opens := []Slot{{Range: rng(r.Start, sub(k, 1))}, {Range: rng(k, r.End)}}
			if !slotsEqual(st.Closes, []Slot{cur[i]}) || !slotsEqual(st.Opens, opens) {
				t.Fatalf("step %d closes %v opens %v; want %v, %v", n, st.Closes, st.Opens, cur[i], opens)
			}
			cur = slices.Replace(cur, i, i+1, opens...)
		case MergeShards:
			i := at(n, st.Args.ShardToMerge)
			j := at(n, st.Args.AdjacentShardToMerge)
			if j != i+1 || add(cur[i].Range.End, 1) != cur[j].Range.Start {
				t.Fatalf("step %d: merge of %s and %s, not adjacent with the lower first", n, cur[i].Range, cur[j].Range)
			}
			opens := []Slot{{Range: rng(cur[i].Range.Start, cur[j].Range.End)}}
			if !slotsEqual(st.Closes, []Slot{cur[i], cur[j]}) || !slotsEqual(st.Opens, opens) {
				t.Fatalf("step %d closes %v opens %v", n, st.Closes, st.Opens)
			}
			cur = slices.Replace(cur, i, j+1, opens...)
		case UpdateShardCount:
			var err error
			if cur, err = Apply(cur, st); err != nil {
				t.Fatalf("step %d: %v", n, err)
			}
		default:
			t.Fatalf("step %d: call %q", n, st.Call)
		}
		if small || n == len(p.Steps) {
			if err := lineage.CheckCoverage(ranges(cur)); err != nil {
				t.Fatalf("after step %d: %v", n, err)
			}
		}
		if st.OpenShards != len(cur) {
			t.Fatalf("step %d says %d open shards, the layout has %d", n, st.OpenShards, len(cur))
		}
	}
	if !slotsEqual(cur, p.After) {
		t.Fatalf("replayed layout differs from After (%d and %d shards)", len(cur), len(p.After))
	}
	if small {
		if last, err := p.LayoutAfter(len(p.Steps) - 1); err != nil || !slotsEqual(last, cur) {
			t.Fatalf("LayoutAfter: %v", err)
		}
	}
	return cur
}

// slotsEqual compares ids and ranges (not traffic).
func slotsEqual(a, b []Slot) bool {
	return slices.EqualFunc(a, b, func(x, y Slot) bool { return x.ID == y.ID && x.Range == y.Range })
}

// evenTol is EvenTolerance as a big integer, for the independent checks.
var evenTol = big.NewInt(EvenTolerance)

func absDiff(a, b lineage.HashKey) *big.Int {
	return new(big.Int).Abs(new(big.Int).Sub(a.Big(), b.Big()))
}

// nearEven reports whether l has len(want) shards whose boundaries are
// each within EvenTolerance of want's.
func nearEven(l []lineage.HashRange, want []lineage.HashRange) bool {
	if len(l) != len(want) || lineage.CheckCoverage(l) != nil {
		return false
	}
	for i := 1; i < len(l); i++ {
		if absDiff(l[i].Start, want[i].Start).Cmp(evenTol) > 0 {
			return false
		}
	}
	return true
}

// lowerBoundTol is lowerBound where a boundary within EvenTolerance of a
// target's counts as it (each target takes the nearest one), computed in
// big integers apart from the planner.
func lowerBoundTol(from, to []lineage.HashRange) int {
	bs := from[1:]
	used := map[int]bool{}
	n := 0
	for _, t := range to[1:] {
		lo := new(big.Int).Sub(t.Start.Big(), evenTol)
		i := sort.Search(len(bs), func(i int) bool { return bs[i].Start.Big().Cmp(lo) >= 0 })
		best := -1
		for ; i < len(bs) && absDiff(bs[i].Start, t.Start).Cmp(evenTol) <= 0; i++ {
			if best < 0 || absDiff(bs[i].Start, t.Start).Cmp(absDiff(bs[best].Start, t.Start)) < 0 {
				best = i
			}
		}
		if best < 0 {
			n++ // missing
		} else {
			used[best] = true
		}
	}
	return n + len(bs) - len(used) // plus the extra ones
}
