package reshard

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

func mustPlan(t *testing.T, in Input, g Goal) *Plan {
	t.Helper()
	p, err := NewPlan(in, g)
	if err != nil {
		t.Fatalf("NewPlan(%+v): %v", g, err)
	}
	checkSteps(t, p)
	return p
}

func pct(s string) *big.Rat {
	p, err := lineage.ParsePercent(s)
	if err != nil {
		panic(err)
	}
	return p
}

// refPercentKey is Start + floor(width*P/100) in math/big, written apart
// from the code under test.
func refPercentKey(r lineage.HashRange, p *big.Rat) lineage.HashKey {
	w := new(big.Int).Add(new(big.Int).Sub(r.End.Big(), r.Start.Big()), big.NewInt(1))
	w.Mul(w, p.Num())
	w.Quo(w, new(big.Int).Mul(p.Denom(), big.NewInt(100)))
	return bigKey(w.Add(w, r.Start.Big()))
}

func TestSplitChildRanges(t *testing.T) {
	// kinesis-mock's two-shard stream ends shard 0 at 2^127-2.
	mockUpper := rng(sub(two127, 1), maxK)
	tests := []struct {
		name   string
		layout []lineage.HashRange
		goal   SplitGoal
		key    lineage.HashKey
	}{
		{"whole space, default = exact half", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0)}, two127},
		{"whole space, 50", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0), Percent: pct("50")}, two127},
		{"whole space, 25", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0), Percent: pct("25")}, two126},
		{"whole space, 33.5", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0), Percent: pct("33.5")},
			bigKey(new(big.Int).Div(new(big.Int).Mul(twoTo128, big.NewInt(335)), big.NewInt(1000)))},
		{"upper half of AWS 2 shards, middle", evenLayout(t, 2), SplitGoal{Shard: sid(1)}, key("255211775190703847597530955573826158592")},
		{"kinesis-mock upper shard (odd width), middle", []lineage.HashRange{rng(u(0), sub(two127, 2)), mockUpper}, SplitGoal{Shard: sid(1)},
			refPercentKey(mockUpper, big.NewRat(50, 1))},
		{"kinesis-mock lower shard (odd width), 10", []lineage.HashRange{rng(u(0), sub(two127, 2)), mockUpper}, SplitGoal{Shard: sid(0), Percent: pct("10")},
			refPercentKey(rng(u(0), sub(two127, 2)), big.NewRat(10, 1))},
		{"third of AWS 3 shards, 99.999", evenLayout(t, 3), SplitGoal{Shard: sid(2), Percent: pct("99.999")},
			refPercentKey(evenLayout(t, 3)[2], pct("99.999"))},
		{"explicit key", evenLayout(t, 2), SplitGoal{Shard: sid(0), At: ptr(key("12345678901234567890"))}, key("12345678901234567890")},
		{"lowest legal key of the space", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0), At: ptr(u(2))}, u(2)},
		{"highest legal key of the space", []lineage.HashRange{lineage.WholeSpace}, SplitGoal{Shard: sid(0), At: ptr(sub(maxK, 1))}, sub(maxK, 1)},
		{"4-key shard: its only legal key", []lineage.HashRange{rng(u(0), u(9)), rng(u(10), u(13)), rng(u(14), maxK)}, SplitGoal{Shard: sid(1)}, u(12)},
		{"5-key shard at 60: end-1", []lineage.HashRange{rng(u(0), u(9)), rng(u(10), u(14)), rng(u(15), maxK)}, SplitGoal{Shard: sid(1), Percent: pct("60")}, u(13)},
		{"5-key shard, middle", []lineage.HashRange{rng(u(0), u(9)), rng(u(10), u(14)), rng(u(15), maxK)}, SplitGoal{Shard: sid(1)}, u(12)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := layoutGraph(t, tc.layout...)
			p := mustPlan(t, activeInput(g), tc.goal)
			if len(p.Steps) != 1 || p.Steps[0].Call != SplitShard {
				t.Fatalf("steps %v", p.Steps)
			}
			st := p.Steps[0]
			parent := g.Shard(tc.goal.Shard).Range
			if *st.Args.NewStartingHashKey != tc.key {
				t.Fatalf("split key %s, want %s", st.Args.NewStartingHashKey, tc.key)
			}
			if st.Args.ShardToSplit.ID != tc.goal.Shard || st.Args.ShardToSplit.Range != parent {
				t.Fatalf("ShardToSplit %+v", st.Args.ShardToSplit)
			}
			want := []Slot{{Range: rng(parent.Start, sub(tc.key, 1))}, {Range: rng(tc.key, parent.End)}}
			if !slotsEqual(st.Opens, want) {
				t.Fatalf("children %v, want %v", st.Opens, want)
			}
			if st.OpenShards != len(tc.layout)+1 || len(p.After) != len(tc.layout)+1 || !p.ExactLayout {
				t.Fatalf("open count %d, after %d", st.OpenShards, len(p.After))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSplitWholeSpaceGivesAWSTwoShardLayout(t *testing.T) {
	p := mustPlan(t, activeInput(layoutGraph(t, lineage.WholeSpace)), SplitGoal{Shard: sid(0)})
	if got, want := ranges(p.After), evenLayout(t, 2); !slices.Equal(got, want) {
		t.Fatalf("after %v, want %v", got, want)
	}
	if p.Description != "split shardId-000000000000 at 50% of its range (hash key 170141183460469231731687303715884105728)" {
		t.Fatalf("description %q", p.Description)
	}
}

func TestSplitRefusals(t *testing.T) {
	small := []lineage.HashRange{rng(u(0), u(9)), rng(u(10), u(13)), rng(u(14), u(16)), rng(u(17), maxK)}
	g := layoutGraph(t, small...)
	// A history: 0 was split into 1 and 2; 1 then merged with 2 into 3... no:
	// 0 split into 1, 2; 2 split into 3, 4.
	hist, err := lineage.Build([]types.Shard{
		listed(sid(0), lineage.WholeSpace, false),
		listed(sid(1), rng(u(0), sub(two127, 1)), true, sid(0)),
		listed(sid(2), rng(two127, maxK), false, sid(0)),
		listed(sid(3), rng(two127, sub(key("255211775190703847597530955573826158592"), 1)), true, sid(2)),
		listed(sid(4), rng(key("255211775190703847597530955573826158592"), maxK), true, sid(2)),
		listed(sid(6), rng(u(0), u(5)), false, "shardId-000000000005"), // 5 is trimmed (named, not listed)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = hist
	tests := []struct {
		name  string
		g     *lineage.Graph
		goal  SplitGoal
		kind  error
		error string
	}{
		{"unknown shard", g, SplitGoal{Shard: sid(9)}, ErrUnknownShard,
			"stream s has no shard shardId-000000000009; its open shards are shardId-000000000000, shardId-000000000001, shardId-000000000002 and shardId-000000000003"},
		{"closed shard", hist, SplitGoal{Shard: sid(2)}, ErrClosedShard,
			"shard shardId-000000000002 of stream s is closed (it was already split or merged); only open shards can be split or merged, and its range is now held by shardId-000000000003 and shardId-000000000004"},
		{"trimmed shard", hist, SplitGoal{Shard: sid(5)}, ErrClosedShard,
			"shard shardId-000000000005 of stream s was split or merged long ago and retention has removed it; only open shards can be split or merged: shardId-000000000001, shardId-000000000003 and shardId-000000000004"},
		{"3-key shard", g, SplitGoal{Shard: sid(2)}, ErrShardTooSmall,
			"shard shardId-000000000002 of stream s holds only 3 hash keys (14..16); a shard needs at least 4 to be split, so that each new shard holds at least two"},
		{"key below the shard", g, SplitGoal{Shard: sid(1), At: ptr(u(9))}, ErrKeyOutOfRange,
			"hash key 9 is outside shard shardId-000000000001 of stream s, which holds 10 to 13"},
		{"key above the shard", g, SplitGoal{Shard: sid(1), At: ptr(u(14))}, ErrKeyOutOfRange,
			"hash key 14 is outside shard shardId-000000000001 of stream s, which holds 10 to 13"},
		{"key = start", g, SplitGoal{Shard: sid(1), At: ptr(u(10))}, ErrKeyOutOfRange,
			"hash key 10 is too close to an edge of shard shardId-000000000001 of stream s (10 to 13): a split key must be from 12 to 12 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"key = start+1", g, SplitGoal{Shard: sid(1), At: ptr(u(11))}, ErrKeyOutOfRange,
			"hash key 11 is too close to an edge of shard shardId-000000000001 of stream s (10 to 13): a split key must be from 12 to 12 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"key = end", g, SplitGoal{Shard: sid(1), At: ptr(u(13))}, ErrKeyOutOfRange,
			"hash key 13 is too close to an edge of shard shardId-000000000001 of stream s (10 to 13): a split key must be from 12 to 12 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"whole space at key 1", layoutGraph(t, lineage.WholeSpace), SplitGoal{Shard: sid(0), At: ptr(u(1))}, ErrKeyOutOfRange,
			"hash key 1 is too close to an edge of shard shardId-000000000000 of stream s (0 to 340282366920938463463374607431768211455): a split key must be from 2 to 340282366920938463463374607431768211454 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"whole space at the last key", layoutGraph(t, lineage.WholeSpace), SplitGoal{Shard: sid(0), At: ptr(maxK)}, ErrKeyOutOfRange,
			"hash key 340282366920938463463374607431768211455 is too close to an edge of shard shardId-000000000000 of stream s (0 to 340282366920938463463374607431768211455): a split key must be from 2 to 340282366920938463463374607431768211454 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"percent lands on start+1", g, SplitGoal{Shard: sid(1), Percent: pct("25")}, ErrKeyOutOfRange,
			"splitting at 25% of its range gives hash key 11, which is too close to an edge of shard shardId-000000000001 of stream s (10 to 13): a split key must be from 12 to 12 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"tiny percent of the space lands on start", layoutGraph(t, lineage.WholeSpace), SplitGoal{Shard: sid(0), Percent: pct("0.0000000000000000000000000000000000001")}, ErrKeyOutOfRange,
			"splitting at 0.0000000000000000000000000000000000001% of its range gives hash key 0, which is too close to an edge of shard shardId-000000000000 of stream s (0 to 340282366920938463463374607431768211455): a split key must be from 2 to 340282366920938463463374607431768211454 (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys"},
		{"median without a sample", g, SplitGoal{Shard: sid(0), Median: true}, ErrNoSample,
			"no records of shard shardId-000000000000 of stream s were sampled, so there is no median to split at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := activeInput(tc.g)
			p, err := NewPlan(in, tc.goal)
			if p != nil || !errors.Is(err, tc.kind) || err.Error() != tc.error {
				t.Fatalf("got %v, %v\nwant %v: %s", p, err, tc.kind, tc.error)
			}
			// SampleShards refuses the same way where the rule needs no sample.
			if tc.kind != ErrNoSample && (tc.goal.Percent == nil) {
				if _, err2 := SampleShards(in, tc.goal); err2 == nil || err2.Error() != err.Error() {
					t.Fatalf("SampleShards: %v", err2)
				}
			}
		})
	}
}

func TestMergeEitherOrder(t *testing.T) {
	layout := evenLayout(t, 3)
	g := layoutGraph(t, layout...)
	for _, pair := range [][2]string{{sid(1), sid(2)}, {sid(2), sid(1)}} {
		p := mustPlan(t, activeInput(g), MergeGoal{Shards: pair})
		st := p.Steps[0]
		if st.Call != MergeShards || st.Args.ShardToMerge.ID != sid(1) || st.Args.AdjacentShardToMerge.ID != sid(2) {
			t.Fatalf("%v: args %+v %+v", pair, st.Args.ShardToMerge, st.Args.AdjacentShardToMerge)
		}
		want := []Slot{{ID: sid(0), Range: layout[0]}, {Range: rng(layout[1].Start, maxK)}}
		if !slotsEqual(p.After, want) {
			t.Fatalf("%v: after %v", pair, p.After)
		}
		if p.Description != "merge shardId-000000000001 with shardId-000000000002 into one shard (shardId-000000000001 is sent as ShardToMerge: it holds the lower range)" {
			t.Fatalf("description %q", p.Description)
		}
	}
}

func TestMergeRefusals(t *testing.T) {
	g := layoutGraph(t, evenLayout(t, 4)...)
	hist, err := lineage.Build([]types.Shard{
		listed(sid(0), rng(u(0), sub(two127, 1)), true),
		listed(sid(1), rng(two127, maxK), false),
		listed(sid(2), rng(two127, sub(key("255211775190703847597530955573826158592"), 1)), true, sid(1)),
		listed(sid(3), rng(key("255211775190703847597530955573826158592"), maxK), true, sid(1)),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		g     *lineage.Graph
		pair  [2]string
		kind  error
		error string
	}{
		{"identical", g, [2]string{sid(1), sid(1)}, ErrSameShard, "cannot merge shard shardId-000000000001 with itself: give two different, adjacent open shards"},
		{"not adjacent", g, [2]string{sid(0), sid(2)}, ErrNotAdjacent,
			"shards shardId-000000000000 (0..85070591730234615865843651857942052863) and shardId-000000000002 (170141183460469231731687303715884105728..255211775190703847597530955573826158591) of stream s are not adjacent: only two open shards whose ranges touch can be merged, and the neighbours of shardId-000000000000 are shardId-000000000001"},
		{"not adjacent, reversed", g, [2]string{sid(3), sid(1)}, ErrNotAdjacent,
			"shards shardId-000000000001 (85070591730234615865843651857942052864..170141183460469231731687303715884105727) and shardId-000000000003 (255211775190703847597530955573826158592..340282366920938463463374607431768211455) of stream s are not adjacent: only two open shards whose ranges touch can be merged, and the neighbours of shardId-000000000003 are shardId-000000000002"},
		{"first and last", g, [2]string{sid(0), sid(3)}, ErrNotAdjacent,
			"shards shardId-000000000000 (0..85070591730234615865843651857942052863) and shardId-000000000003 (255211775190703847597530955573826158592..340282366920938463463374607431768211455) of stream s are not adjacent: only two open shards whose ranges touch can be merged, and the neighbours of shardId-000000000000 are shardId-000000000001"},
		{"closed", hist, [2]string{sid(0), sid(1)}, ErrClosedShard,
			"shard shardId-000000000001 of stream s is closed (it was already split or merged); only open shards can be split or merged, and its range is now held by shardId-000000000002 and shardId-000000000003"},
		{"unknown", g, [2]string{sid(3), sid(4)}, ErrUnknownShard,
			"stream s has no shard shardId-000000000004; its open shards are shardId-000000000000, shardId-000000000001, shardId-000000000002 and shardId-000000000003"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := activeInput(tc.g)
			for _, f := range []func() error{
				func() error { _, err := NewPlan(in, MergeGoal{Shards: tc.pair}); return err },
				func() error { _, err := SampleShards(in, MergeGoal{Shards: tc.pair}); return err },
			} {
				if err := f(); !errors.Is(err, tc.kind) || err.Error() != tc.error {
					t.Fatalf("got %v\nwant %s", err, tc.error)
				}
			}
		})
	}
}

func TestStreamRefusals(t *testing.T) {
	g := layoutGraph(t, evenLayout(t, 2)...)
	// Mid-reshard: the parent still looks open beside its children.
	mid, err := lineage.Build([]types.Shard{
		listed(sid(0), lineage.WholeSpace, true),
		listed(sid(1), rng(u(0), sub(two127, 1)), true, sid(0)),
		listed(sid(2), rng(two127, maxK), true, sid(0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	goals := []Goal{SplitGoal{Shard: sid(0)}, MergeGoal{Shards: [2]string{sid(0), sid(1)}}, ScaleGoal{Target: 3}, ScaleGoal{Target: 5, Method: MethodSplits}}
	tests := []struct {
		name   string
		stream Stream
		g      *lineage.Graph
		kind   error
		error  string
	}{
		{"on-demand", Stream{Name: "s", Status: types.StreamStatusActive, Mode: types.StreamModeOnDemand}, g, ErrOnDemand,
			"stream s is ON_DEMAND: the service reshards it by itself and refuses SplitShard, MergeShards and UpdateShardCount; switch it to PROVISIONED first"},
		{"on-demand and updating", Stream{Name: "s", Status: types.StreamStatusUpdating, Mode: types.StreamModeOnDemand}, g, ErrOnDemand,
			"stream s is ON_DEMAND: the service reshards it by itself and refuses SplitShard, MergeShards and UpdateShardCount; switch it to PROVISIONED first"},
		{"updating", Stream{Name: "s", Status: types.StreamStatusUpdating}, g, ErrNotActive,
			"stream s is UPDATING, not ACTIVE (another change is in progress): the service accepts a reshard only while the stream is ACTIVE; try again when it is"},
		{"creating", Stream{Name: "s", Status: types.StreamStatusCreating, Mode: types.StreamModeProvisioned}, g, ErrNotActive,
			"stream s is CREATING, not ACTIVE (it is being created): the service accepts a reshard only while the stream is ACTIVE; try again when it is"},
		{"deleting", Stream{Name: "s", Status: types.StreamStatusDeleting}, g, ErrNotActive,
			"stream s is DELETING, not ACTIVE (it is being deleted): the service accepts a reshard only while the stream is ACTIVE; try again when it is"},
		{"mid-reshard listing", Stream{Name: "s", Status: types.StreamStatusActive}, mid, ErrInconsistent,
			"the open shards of stream s do not cover the hash key space exactly once (hash key ranges do not cover 0 .. 2^128-1 exactly once: more than one range holds 0..340282366920938463463374607431768211455), as when a reshard is in progress; try again when it has finished"},
	}
	for _, tc := range tests {
		for _, goal := range goals {
			in := Input{Stream: tc.stream, Graph: tc.g}
			p, err := NewPlan(in, goal)
			if p != nil || !errors.Is(err, tc.kind) || err.Error() != tc.error {
				t.Fatalf("%s, %+v: got %v\nwant %s", tc.name, goal, err, tc.error)
			}
			if _, err := SampleShards(in, goal); !errors.Is(err, tc.kind) {
				t.Fatalf("%s, SampleShards %+v: %v", tc.name, goal, err)
			}
		}
	}
}

func TestUpdateShardCountLimits(t *testing.T) {
	for open := 1; open <= 21; open++ {
		g := layoutGraph(t, evenLayout(t, open)...)
		for target := 1; target <= 2*open+3; target++ {
			p, err := NewPlan(activeInput(g), ScaleGoal{Target: target})
			lo := (open + 1) / 2 // ceil(open/2), written out: odd counts round up
			if open%2 == 1 && lo*2 != open+1 || open%2 == 0 && lo*2 != open {
				t.Fatal("bad reference")
			}
			switch {
			case target == open:
				if err != nil || len(p.Steps) != 0 || !strings.HasPrefix(p.Description, "nothing to do") {
					t.Fatalf("%d -> %d: %v %v", open, target, p, err)
				}
			case target >= lo && target <= 2*open:
				if err != nil {
					t.Fatalf("%d -> %d: %v", open, target, err)
				}
				st := p.Steps[0]
				if len(p.Steps) != 1 || st.Call != UpdateShardCount || st.Args.TargetShardCount != target || st.Args.ScalingType != "UNIFORM_SCALING" || p.ExactLayout {
					t.Fatalf("%d -> %d: %+v", open, target, p)
				}
				if !slices.Equal(ranges(p.After), evenLayout(t, target)) || st.OpenShards != target {
					t.Fatalf("%d -> %d: after %v", open, target, p.After)
				}
				checkSteps(t, p)
				if len(p.Notes) != 3 || !strings.Contains(p.Notes[0], "short-lived intermediate shards") || !strings.Contains(p.Notes[1], "10 UpdateShardCount calls per rolling 24 hours") {
					t.Fatalf("notes %q", p.Notes)
				}
			default:
				if !errors.Is(err, ErrTargetOutOfLimits) || !strings.HasSuffix(err.Error(), "; use --method splits to get there with SplitShard and MergeShards calls") {
					t.Fatalf("%d -> %d: %v", open, target, err)
				}
			}
		}
	}
	g := layoutGraph(t, evenLayout(t, 5)...)
	for target, want := range map[int]string{
		11: "UpdateShardCount can at most double the open shards of stream s in one call: from 5 it can reach 3 to 10, not 11; use --method splits to get there with SplitShard and MergeShards calls",
		2:  "UpdateShardCount can at most halve the open shards of stream s in one call: from 5 it can reach 3 to 10, not 2; use --method splits to get there with SplitShard and MergeShards calls",
	} {
		if _, err := NewPlan(activeInput(g), ScaleGoal{Target: target}); err == nil || err.Error() != want {
			t.Fatalf("%d: %v", target, err)
		}
	}
	for _, target := range []int{0, -1, 10001} {
		for _, m := range []Method{MethodUpdateShardCount, MethodSplits} {
			_, err := NewPlan(activeInput(g), ScaleGoal{Target: target, Method: m})
			want := "is not a shard count a stream can have: the target must be from 1 to 10000"
			if !errors.Is(err, ErrBadTarget) || !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("%d %s: %v", target, m, err)
			}
		}
	}
}

func TestUpdateShardCountKeepsIdenticalRanges(t *testing.T) {
	// A 4-shard stream whose first and last shards already are those of the
	// 6-shard layout: the preview keeps their ids.
	six := evenLayout(t, 6)
	layout := []lineage.HashRange{six[0], rng(six[1].Start, six[2].End), rng(six[3].Start, six[4].End), six[5]}
	g := layoutGraph(t, layout...)
	p := mustPlan(t, activeInput(g), ScaleGoal{Target: 6})
	want := []Slot{{ID: sid(0), Range: six[0]}, {Range: six[1]}, {Range: six[2]}, {Range: six[3]}, {Range: six[4]}, {ID: sid(3), Range: six[5]}}
	st := p.Steps[0]
	if !slotsEqual(p.After, want) || !slotsEqual(st.Closes, []Slot{{ID: sid(1), Range: layout[1]}, {ID: sid(2), Range: layout[2]}}) || len(st.Opens) != 4 {
		t.Fatalf("after %v, step %+v", p.After, st)
	}
}

func TestNothingToDo(t *testing.T) {
	even := layoutGraph(t, evenLayout(t, 3)...)
	for _, m := range []Method{"", MethodUpdateShardCount, MethodSplits} {
		p := mustPlan(t, activeInput(even), ScaleGoal{Target: 3, Method: m})
		if len(p.Steps) != 0 || len(p.Notes) != 0 || !slotsEqual(p.After, p.Before) {
			t.Fatalf("%s: %+v", m, p)
		}
	}
	uneven := layoutGraph(t, rng(u(0), sub(two126, 1)), rng(two126, sub(two127, 1)), rng(two127, maxK))
	p := mustPlan(t, activeInput(uneven), ScaleGoal{Target: 3})
	if len(p.Steps) != 0 || p.Description != "nothing to do: stream s already has 3 open shards" ||
		!slices.Equal(p.Notes, []string{"Their hash ranges are not the even layout; --method splits --even would even them out with 4 SplitShard and MergeShards calls."}) {
		t.Fatalf("%+v", p)
	}
	// The same count by splits is nothing to do too (scale --to N is safe
	// to repeat); --even asks for the evening out.
	p = mustPlan(t, activeInput(uneven), ScaleGoal{Target: 3, Method: MethodSplits})
	if len(p.Steps) != 0 || p.Description != "nothing to do: stream s already has 3 open shards" ||
		!slices.Equal(p.Notes, []string{"Their hash ranges are not the even layout; --even would even them out with 4 SplitShard and MergeShards calls."}) {
		t.Fatalf("%+v", p)
	}
	if _, err := NewPlan(activeInput(uneven), ScaleGoal{Target: 3, Even: true}); err == nil {
		t.Fatal("Even accepted with UpdateShardCount")
	}
	p = mustPlan(t, activeInput(uneven), ScaleGoal{Target: 3, Method: MethodSplits, Even: true})
	if len(p.Steps) != 4 || !slices.Equal(ranges(p.After), evenLayout(t, 3)) {
		t.Fatalf("evening out: %d steps, after %v", len(p.Steps), p.After)
	}
	// Evening out never drops below the starting count.
	for _, st := range p.Steps {
		if st.OpenShards < 3 || st.OpenShards > 4 {
			t.Fatalf("open count %d during evening out", st.OpenShards)
		}
	}
}

func TestSplitsPlansEvenToEven(t *testing.T) {
	const most = 48
	for n := 1; n <= most; n++ {
		from := evenLayout(t, n)
		g := layoutGraph(t, from...)
		for m := 1; m <= most; m++ {
			p, err := NewPlan(activeInput(g), ScaleGoal{Target: m, Method: MethodSplits})
			if err != nil {
				t.Fatalf("%d -> %d: %v", n, m, err)
			}
			to := evenLayout(t, m)
			final := checkSteps(t, p)
			if !nearEven(ranges(final), to) {
				t.Fatalf("%d -> %d: ends on %v", n, m, final)
			}
			if lb := lowerBoundTol(from, to); len(p.Steps) != lb {
				t.Fatalf("%d -> %d: %d steps, lower bound %d", n, m, len(p.Steps), lb)
			}
			lo, hi := min(n, m), max(n, m)
			if n == m {
				hi++
			}
			for i, st := range p.Steps {
				if st.OpenShards < lo || st.OpenShards > hi {
					t.Fatalf("%d -> %d: step %d leaves %d open shards", n, m, i+1, st.OpenShards)
				}
			}
		}
	}
}

func TestSplitsPlansKnownCounts(t *testing.T) {
	mock2 := []lineage.HashRange{rng(u(0), sub(two127, 2)), rng(sub(two127, 1), maxK)}
	tests := []struct {
		name  string
		from  []lineage.HashRange
		to    int
		calls []Call
	}{
		{"1 -> 2", evenLayout(t, 1), 2, []Call{SplitShard}},
		{"1 -> 4", evenLayout(t, 1), 4, []Call{SplitShard, SplitShard, SplitShard}},
		{"2 -> 4 (powers of two keep their boundaries)", evenLayout(t, 2), 4, []Call{SplitShard, SplitShard}},
		{"4 -> 2", evenLayout(t, 4), 2, []Call{MergeShards, MergeShards}},
		{"8 -> 1", evenLayout(t, 8), 1, slices.Repeat([]Call{MergeShards}, 7)},
		{"4 -> 5 (no boundary in common, alternating)", evenLayout(t, 4), 5, []Call{SplitShard, MergeShards, SplitShard, MergeShards, SplitShard, MergeShards, SplitShard}},
		{"5 -> 4", evenLayout(t, 5), 4, []Call{MergeShards, SplitShard, MergeShards, SplitShard, MergeShards, SplitShard, MergeShards}},
		// Halving and doubling take one call per shard: the 6-layout's
		// boundaries at i=2 and 4 are one and two keys below the
		// 3-layout's, and count as in place.
		{"3 -> 6", evenLayout(t, 3), 6, slices.Repeat([]Call{SplitShard}, 3)},
		{"5 -> 10", evenLayout(t, 5), 10, slices.Repeat([]Call{SplitShard}, 5)},
		{"6 -> 3", evenLayout(t, 6), 3, slices.Repeat([]Call{MergeShards}, 3)},
		{"10 -> 5", evenLayout(t, 10), 5, slices.Repeat([]Call{MergeShards}, 5)},
		// kinesis-mock's 2 shards meet at 2^127-1, one key off.
		{"kinesis-mock 2 -> 4", mock2, 4, []Call{SplitShard, SplitShard}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, activeInput(layoutGraph(t, tc.from...)), ScaleGoal{Target: tc.to, Method: MethodSplits})
			var calls []Call
			for _, st := range p.Steps {
				calls = append(calls, st.Call)
			}
			if !slices.Equal(calls, tc.calls) {
				t.Fatalf("calls %v, want %v", calls, tc.calls)
			}
			if !nearEven(ranges(p.After), evenLayout(t, tc.to)) {
				t.Fatalf("after %v", p.After)
			}
		})
	}
}

func TestSplitsPlanFirstStepsNameListedShards(t *testing.T) {
	// Two shards meeting 2^41 keys below 2^127: beyond the tolerance, so
	// that boundary goes and 2^127 comes.
	b := sub(two127, 1<<41)
	two := []lineage.HashRange{rng(u(0), sub(b, 1)), rng(b, maxK)}
	p := mustPlan(t, activeInput(layoutGraph(t, two...)), ScaleGoal{Target: 4, Method: MethodSplits})
	four := evenLayout(t, 4)
	s := p.Steps
	// The wider shard (the upper one) is split first.
	if len(s) != 4 || s[0].Args.ShardToSplit.ID != sid(1) || *s[0].Args.NewStartingHashKey != four[3].Start ||
		s[1].Args.ShardToSplit.ID != sid(0) || *s[1].Args.NewStartingHashKey != four[1].Start {
		t.Fatalf("steps %v", s)
	}
	// The merge joins two new shards, named by range only.
	m := s[2].Args
	if m.ShardToMerge.ID != "" || m.ShardToMerge.Range != rng(four[1].Start, sub(b, 1)) ||
		m.AdjacentShardToMerge.ID != "" || m.AdjacentShardToMerge.Range != rng(b, sub(four[3].Start, 1)) {
		t.Fatalf("merge %v", s[2])
	}
	if got := s[3].String(); got != "SplitShard the new shard "+rng(four[1].Start, sub(four[3].Start, 1)).String()+" at hash key "+two127.String() {
		t.Fatalf("step 4: %s", got)
	}
	if !slices.Equal(ranges(p.After), four) {
		t.Fatalf("after %v", p.After)
	}
	if p.Description != "scale from 2 to 4 open shards in the even layout with 3 SplitShard and 1 MergeShards calls" {
		t.Fatalf("description %q", p.Description)
	}
	wantNotes := []string{
		"4 calls is the fewest possible: each call adds or removes one boundary between hash ranges, and 3 boundaries are to be added and 1 removed (a boundary within 2^40 keys of the even layout's counts as in place).",
		"The calls run one at a time; the tool waits for the stream to be ACTIVE after each (seconds to a minute on AWS). The open shard count stays between 2 and 4.",
	}
	if !slices.Equal(p.Notes, wantNotes) {
		t.Fatalf("notes %q", p.Notes)
	}
}

func TestSplitsPlanKeepsNearBoundaries(t *testing.T) {
	p := mustPlan(t, activeInput(layoutGraph(t, evenLayout(t, 3)...)), ScaleGoal{Target: 6, Method: MethodSplits})
	three, six := evenLayout(t, 3), evenLayout(t, 6)
	// The 3-layout's boundaries stay; the splits are at the 6-layout's
	// odd boundaries.
	want := []lineage.HashRange{six[0], rng(six[1].Start, sub(three[1].Start, 1)), rng(three[1].Start, six[2].End),
		rng(six[3].Start, sub(three[2].Start, 1)), rng(three[2].Start, six[4].End), six[5]}
	if !slices.Equal(ranges(p.After), want) {
		t.Fatalf("after %v", p.After)
	}
	wantNotes := []string{
		"3 calls is the fewest possible: each call adds or removes one boundary between hash ranges, and 3 boundaries are to be added and 0 removed (a boundary within 2^40 keys of the even layout's counts as in place).",
		"2 boundaries already lie within 2^40 keys of the even layout's and stay where they are (at most 2 keys off, of 2^128 keys): no shard's share of the key space changes at any printed precision.",
		"The calls run one at a time; the tool waits for the stream to be ACTIVE after each (seconds to a minute on AWS). The open shard count stays between 3 and 6.",
	}
	if !slices.Equal(p.Notes, wantNotes) {
		t.Fatalf("notes %q", p.Notes)
	}
	// Already within the tolerance of the even layout: nothing to do.
	p = mustPlan(t, activeInput(layoutGraph(t, want...)), ScaleGoal{Target: 6, Method: MethodSplits, Even: true})
	if len(p.Steps) != 0 || p.Description != "nothing to do: stream s already has 6 open shards in the even layout" {
		t.Fatalf("%+v", p)
	}
	if !IsEvenLayout(want) || IsEvenLayout(append([]lineage.HashRange{rng(u(0), sub(six[1].Start, 1<<41))}, append([]lineage.HashRange{rng(sub(six[1].Start, 1<<41), six[1].End)}, six[2:]...)...)) {
		t.Fatal("IsEvenLayout")
	}
}

// TestHalvingAndDoubling: n -> 2n takes n splits and 2n -> n takes n
// merges, whatever n, which the exact even layout made 2-3 times dearer.
func TestHalvingAndDoubling(t *testing.T) {
	counts := []int{}
	for n := 1; n <= 120; n++ {
		counts = append(counts, n)
	}
	counts = append(counts, 997, 2500, 4999, 5000)
	for _, n := range counts {
		up := mustPlan(t, activeInput(layoutGraph(t, evenLayout(t, n)...)), ScaleGoal{Target: 2 * n, Method: MethodSplits})
		down := mustPlan(t, activeInput(layoutGraph(t, evenLayout(t, 2*n)...)), ScaleGoal{Target: n, Method: MethodSplits})
		if len(up.Steps) != n || up.splits() != n || len(down.Steps) != n || down.splits() != 0 {
			t.Fatalf("%d <-> %d: %d and %d calls", n, 2*n, len(up.Steps), len(down.Steps))
		}
		if !nearEven(ranges(up.After), evenLayout(t, 2*n)) || !nearEven(ranges(down.After), evenLayout(t, n)) {
			t.Fatalf("%d <-> %d: not near the even layouts", n, 2*n)
		}
		if n <= 120 {
			checkSteps(t, up)
			checkSteps(t, down)
		}
	}
}

// TestEvenToleranceIsInvisible: a shard whose two boundaries are each
// within EvenTolerance of the even layout's is at most 2·EvenTolerance
// keys wider or narrower, and its share of the key space still rounds to
// the same float64 as the even layout's, for every count. Rounding is
// monotone, so checking both extremes covers every width between.
func TestEvenToleranceIsInvisible(t *testing.T) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	d := new(big.Int).Lsh(evenTol, 1)
	share := func(w *big.Int) float64 {
		f, _ := new(big.Float).SetInt(w).Float64() // correctly rounded
		return math.Ldexp(f, -128)
	}
	for n := 1; n <= MaxShards; n++ {
		step := new(big.Int).Quo(two128, big.NewInt(int64(n)))
		last := new(big.Int).Sub(two128, new(big.Int).Mul(step, big.NewInt(int64(n-1))))
		for _, w := range []*big.Int{step, last} {
			f := share(w)
			hi := new(big.Int).Add(w, d)
			if hi.Cmp(two128) > 0 {
				hi = two128
			}
			if share(new(big.Int).Sub(w, d)) != f || share(hi) != f {
				t.Fatalf("%d shards: a width of %s ± 2^41 changes its share %v", n, w, f)
			}
		}
	}
	// And 2^48 would not do.
	d = new(big.Int).Lsh(big.NewInt(1), 49)
	step := new(big.Int).Quo(two128, big.NewInt(8442))
	if share(new(big.Int).Sub(step, d)) == share(step) && share(new(big.Int).Add(step, d)) == share(step) {
		t.Log("8442 shards: 2^48 happens to be invisible too")
	}
}

func TestLargeSplitsPlan(t *testing.T) {
	// 1 -> 10000 and 10000 -> 9999: the planner is linear enough, and the
	// result exact.
	for _, c := range [][2]int{{1, 10000}, {10000, 9999}, {7, 9973}} {
		from := evenLayout(t, c[0])
		p := mustPlan(t, activeInput(layoutGraph(t, from...)), ScaleGoal{Target: c[1], Method: MethodSplits})
		if !nearEven(ranges(p.After), evenLayout(t, c[1])) || len(p.Steps) != lowerBoundTol(from, evenLayout(t, c[1])) {
			t.Fatalf("%v: %d steps", c, len(p.Steps))
		}
	}
}

func TestLayoutAfterAndJSON(t *testing.T) {
	p := mustPlan(t, activeInput(layoutGraph(t, evenLayout(t, 2)...)), ScaleGoal{Target: 3, Method: MethodSplits})
	l0, err := p.LayoutAfter(-1)
	if err != nil || !slotsEqual(l0, p.Before) {
		t.Fatal(l0, err)
	}
	last, err := p.LayoutAfter(len(p.Steps) - 1)
	if err != nil || !slotsEqual(last, p.After) {
		t.Fatal(last, err)
	}
	b, err := json.Marshal(p.Steps[0])
	if err != nil {
		t.Fatal(err)
	}
	three := evenLayout(t, 3)
	want := `{"call":"SplitShard","args":{"shardToSplit":{"shardId":"shardId-000000000000","hashKeyRange":{"start":"0","end":"170141183460469231731687303715884105727"},"keyspaceFraction":0.5},"newStartingHashKey":"` + three[1].Start.String() + `"},` +
		`"closes":[{"shardId":"shardId-000000000000","hashKeyRange":{"start":"0","end":"170141183460469231731687303715884105727"},"keyspaceFraction":0.5}],` +
		`"opens":[{"new":true,"hashKeyRange":{"start":"0","end":"` + three[0].End.String() + `"},"keyspaceFraction":` + jsonFloat(three[0].Fraction()) + `},` +
		`{"new":true,"hashKeyRange":{"start":"` + three[1].Start.String() + `","end":"170141183460469231731687303715884105727"},"keyspaceFraction":` + jsonFloat(rng(three[1].Start, sub(two127, 1)).Fraction()) + `}],"openShardCount":3}`
	if string(b) != want {
		t.Fatalf("json\n%s\nwant\n%s", b, want)
	}
}

func jsonFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestApplyRefusesUnknownRange(t *testing.T) {
	l := []Slot{{ID: sid(0), Range: lineage.WholeSpace}}
	_, err := Apply(l, Step{Call: MergeShards, Closes: []Slot{{Range: rng(u(0), u(5))}}})
	if err == nil || err.Error() != "MergeShards closes 0..5, which is not open" {
		t.Fatal(err)
	}
}

func TestClosedShardNamesTheOpenShardsOverItsRange(t *testing.T) {
	// 0 splits into 1 and 2; 1 into 3 and 4; 4 merges with 2 into 5; 5
	// splits into 6 and 7. Shard 7 descends from 1 (through 4 and 5) but
	// holds none of 1's range.
	q1, q3 := two126, key("255211775190703847597530955573826158592")
	mergeChild := listed(sid(5), rng(q1, maxK), false, sid(4), sid(2))
	hist, err := lineage.Build([]types.Shard{
		listed(sid(0), lineage.WholeSpace, false),
		listed(sid(1), rng(u(0), sub(two127, 1)), false, sid(0)),
		listed(sid(2), rng(two127, maxK), false, sid(0)),
		listed(sid(3), rng(u(0), sub(q1, 1)), true, sid(1)),
		listed(sid(4), rng(q1, sub(two127, 1)), false, sid(1)),
		mergeChild,
		listed(sid(6), rng(q1, sub(q3, 1)), true, sid(5)),
		listed(sid(7), rng(q3, maxK), true, sid(5)),
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		sid(1): "shardId-000000000003 and shardId-000000000006",
		sid(2): "shardId-000000000006 and shardId-000000000007",
		sid(0): "shardId-000000000003, shardId-000000000006 and shardId-000000000007",
		sid(4): "shardId-000000000006",
	} {
		_, err := NewPlan(activeInput(hist), SplitGoal{Shard: id})
		if !errors.Is(err, ErrClosedShard) || !strings.HasSuffix(err.Error(), "its range is now held by "+want) {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

func TestUpdateShardCountAboveTheLimit(t *testing.T) {
	// More than 10,000 open shards (made by splits): UpdateShardCount can
	// only go below 10,000 from there.
	l := evenLayout(t, 10000)
	last := l[9999]
	mid := last.Midpoint()
	l = append(l[:9999], rng(last.Start, sub(mid, 1)), rng(mid, last.End))
	g := layoutGraph(t, l...)
	_, err := NewPlan(activeInput(g), ScaleGoal{Target: 10000})
	want := "stream s has 10001 open shards, more than the 10000 UpdateShardCount goes to: from there it can only go below 10000 (5001 to 9999), not to 10000; use --method splits to get there with SplitShard and MergeShards calls"
	if !errors.Is(err, ErrTargetOutOfLimits) || err.Error() != want {
		t.Fatal(err)
	}
	p := mustPlan(t, activeInput(g), ScaleGoal{Target: 9999})
	if len(p.Steps) != 1 || p.Steps[0].Args.TargetShardCount != 9999 {
		t.Fatalf("%+v", p.Steps)
	}
	if _, err := NewPlan(activeInput(g), ScaleGoal{Target: 5000}); !errors.Is(err, ErrTargetOutOfLimits) {
		t.Fatal(err)
	}
	// By splits, 10,000 is one merge away.
	p = mustPlan(t, activeInput(g), ScaleGoal{Target: 10000, Method: MethodSplits})
	if len(p.Steps) != 1 || p.Steps[0].Call != MergeShards {
		t.Fatalf("%d steps", len(p.Steps))
	}
}
