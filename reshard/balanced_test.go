package reshard

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// spread returns n distinct hashes spread over r (sorted), from a seeded
// generator.
func spread(rd *rand.Rand, r lineage.HashRange, n int) []lineage.HashKey {
	seen := map[lineage.HashKey]bool{}
	var out []lineage.HashKey
	for len(out) < n {
		k := r.KeyAtPercent(big.NewRat(int64(rd.IntN(1_000_000)), 10_000))
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.SortFunc(out, lineage.HashKey.Cmp)
	return out
}

// weighted is a shard sample whose record i has hash hs[i], key "key-i"
// (or keys[i]) and size sizes[i] (or 100).
func weighted(id string, r lineage.HashRange, span time.Duration, hs []lineage.HashKey, sizes []int, keys []string) ShardSample {
	s := ShardSample{ShardID: id, Range: r, Span: span}
	for i, h := range hs {
		size, key := 100, fmt.Sprintf("key-%d", i)
		if sizes != nil {
			size = sizes[i]
		}
		if keys != nil {
			key = keys[i]
		}
		s.add(h, key, size, 1)
	}
	s.sort()
	return s
}

func trafficShares(t *testing.T, p *Plan) []float64 {
	t.Helper()
	var out []float64
	for _, s := range p.After {
		if s.Traffic == nil {
			t.Fatalf("no traffic share for %s", s.Name())
		}
		out = append(out, *s.Traffic)
	}
	return out
}

func TestBalancedSkewedTraffic(t *testing.T) {
	rd := rand.New(rand.NewPCG(1, 2))
	two := evenLayout(t, 2)
	g := layoutGraph(t, two...)
	in := activeInput(g)
	// Shard 0 carries three times shard 1's records, each spread evenly
	// over its range.
	in.Sample = NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute, spread(rd, two[0], 3000)...), sampleOf(sid(1), two[1], time.Minute, spread(rd, two[1], 1000)...))
	p := mustPlan(t, in, ScaleGoal{Target: 4, Balanced: true, By: ByRecords})
	checkSteps(t, p)
	// The quartiles: two in shard 0, one where the shards meet already.
	if len(p.Steps) != 2 || p.splits() != 2 || p.Method != MethodSplits || p.After[2].ID != "" || p.After[3].ID != sid(1) {
		t.Fatalf("%d steps: %v", len(p.Steps), p.Steps)
	}
	for i, f := range trafficShares(t, p) {
		if f != 0.25 {
			t.Fatalf("shard %d: %v of the traffic", i, f)
		}
	}
	// Key space: shard 0's half in thirds, shard 1's half whole.
	if f := p.After[0].Range.Fraction(); math.Abs(f-1.0/6) > 0.01 || p.After[3].Range.Fraction() != 0.5 {
		t.Fatalf("key space %v %v", f, p.After[3].Range.Fraction())
	}
	if p.Description != "scale from 2 to 4 open shards balanced by sampled records (4000 sampled records) with 2 SplitShard and 0 MergeShards calls" {
		t.Fatalf("description %q", p.Description)
	}
	// Balanced again with the same sample: nothing to do.
	after := make([]lineage.HashRange, 0, 4)
	for _, s := range p.After {
		after = append(after, s.Range)
	}
	in.Graph = layoutGraph(t, after...)
	in.Sample = NewSample(time.Minute, resample(in.Sample, in.Graph)...)
	again := mustPlan(t, in, ScaleGoal{Target: 4, Balanced: true, By: ByRecords})
	if len(again.Steps) != 0 || !strings.HasPrefix(again.Description, "nothing to do: stream s already has 4 open shards balanced by sampled records") {
		t.Fatalf("again: %s (%d steps)", again.Description, len(again.Steps))
	}
	// A new sample of the same traffic moves the quartiles a little, within
	// the tolerance: still nothing to do, rather than four calls.
	fresh := NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute, spread(rd, two[0], 3000)...), sampleOf(sid(1), two[1], time.Minute, spread(rd, two[1], 1000)...))
	in.Sample = NewSample(time.Minute, resample(fresh, in.Graph)...)
	again = mustPlan(t, in, ScaleGoal{Target: 4, Balanced: true, By: ByRecords})
	if len(again.Steps) != 0 {
		t.Fatalf("a fresh sample: %s (%d steps)", again.Description, len(again.Steps))
	}
	for i, f := range trafficShares(t, again) {
		if math.Abs(f-0.25) > 0.025 {
			t.Fatalf("shard %d: %v of the fresh sample", i, f)
		}
	}
}

// resample cuts the shard samples of s along g's open shards.
func resample(s *Sample, g *lineage.Graph) []ShardSample {
	var out []ShardSample
	for _, sh := range g.Open() {
		var hs []lineage.HashKey
		for _, ss := range s.Shards {
			for _, h := range ss.Hashes {
				if sh.Range.Contains(h) {
					hs = append(hs, h)
				}
			}
		}
		out = append(out, sampleOf(sh.ID, sh.Range, time.Minute, hs...))
	}
	return out
}

func TestBalancedByBytes(t *testing.T) {
	rd := rand.New(rand.NewPCG(3, 4))
	g := layoutGraph(t, lineage.WholeSpace)
	in := activeInput(g)
	// 1,000 records; those in the lower half of the space are ten times
	// bigger: by bytes the lower half is 10/11 of the traffic.
	hs := spread(rd, lineage.WholeSpace, 1000)
	sizes := make([]int, len(hs))
	for i, h := range hs {
		sizes[i] = 100
		if h.Cmp(two127) < 0 {
			sizes[i] = 1000
		}
	}
	in.Sample = NewSample(time.Minute, weighted(sid(0), lineage.WholeSpace, time.Minute, hs, sizes, nil))
	byRecords := mustPlan(t, in, ScaleGoal{Target: 2, Balanced: true, By: ByRecords})
	byBytes := mustPlan(t, in, ScaleGoal{Target: 2, Balanced: true, By: ByBytes})
	kr, kb := *byRecords.Steps[0].Args.NewStartingHashKey, *byBytes.Steps[0].Args.NewStartingHashKey
	// By records the split is near the middle, by bytes well inside the
	// lower half.
	if f := rng(u(0), kr).Fraction(); math.Abs(f-0.5) > 0.05 {
		t.Fatalf("by records at %v of the space", f)
	}
	if f := rng(u(0), kb).Fraction(); f > 0.35 {
		t.Fatalf("by bytes at %v of the space", f)
	}
	for _, p := range []*Plan{byRecords, byBytes} {
		for _, f := range trafficShares(t, p) {
			if math.Abs(f-0.5) > 0.01 {
				t.Fatalf("%s: shares %v", p.TrafficBy, trafficShares(t, p))
			}
		}
	}
	if byBytes.TrafficBy != ByBytes || !slices.Contains(byBytes.Notes, "Traffic shares are of the sampled bytes (data and partition keys, as the write quota counts them).") {
		t.Fatalf("%s %q", byBytes.TrafficBy, byBytes.Notes)
	}
}

func TestBalancedNeverDividesAKey(t *testing.T) {
	rd := rand.New(rand.NewPCG(5, 6))
	g := layoutGraph(t, lineage.WholeSpace)
	in := activeInput(g)
	// 601 records of spread keys, one of them "customer-7", which has 399
	// more: 400 of the 1,000 records (40 %).
	hs := spread(rd, lineage.WholeSpace, 601)
	hot := hs[150] // 150 records below it, 450 above
	keys := make([]string, 0, 1000)
	for i := range hs {
		keys = append(keys, fmt.Sprintf("key-%d", i))
	}
	keys[150] = "customer-7"
	for range 399 {
		hs = append(hs, hot)
		keys = append(keys, "customer-7")
	}
	ss := NewShardSample(sid(0), lineage.WholeSpace, nil, time.Minute)
	for i, h := range hs {
		ss.add(h, keys[i], 100, 1)
	}
	ss.sort()
	in.Sample = NewSample(time.Minute, ss)
	p := mustPlan(t, in, ScaleGoal{Target: 4, Balanced: true, By: ByRecords})
	checkSteps(t, p)
	// The first quartile (250 records) is nearest the cut just before the
	// key (150); a third of the rest (433) is nearest the cut just after
	// it (550: the key's records are 150..549); the rest is halved. Its
	// shard carries 40 %, and the others share the rest evenly.
	shares := trafficShares(t, p)
	want := []float64{0.15, 0.4, 0.225, 0.225}
	for i := range want {
		if math.Abs(shares[i]-want[i]) > 1e-9 {
			t.Fatalf("shares %v, want %v", shares, want)
		}
	}
	if !p.After[1].Range.Contains(hot) {
		t.Fatalf("the hot key is not alone in shard 1")
	}
	note := fmt.Sprintf("partition key customer-7 carries 40.0%% of the sampled records, more than a shard's fair share of 1/4: a key always lands on one shard, so %s carries at least that much, and no layout can spread it.", p.After[1].Name())
	if !slices.Contains(p.Notes, note) {
		t.Fatalf("notes %q", p.Notes)
	}
}

func TestBalancedRefusals(t *testing.T) {
	two := evenLayout(t, 2)
	g := layoutGraph(t, two...)
	hs := []lineage.HashKey{u(5), u(6), u(7)}
	cases := []struct {
		name   string
		sample *Sample
		kind   error
		text   string
	}{
		{"no sample", nil, ErrNoSample, "balancing stream s needs a sample of its traffic"},
		{"a shard not sampled", NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute, hs...)), ErrNoSample,
			"shard shardId-000000000001 of stream s was not sampled, so its traffic is unknown and the layout cannot be balanced; sample every open shard"},
		{"no traffic", NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute), sampleOf(sid(1), two[1], time.Minute)), ErrNoSample,
			"no traffic of stream s was sampled, so there is nothing to balance; sample a longer window, or scale to the even layout"},
		{"too few keys", NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute, hs...), sampleOf(sid(1), two[1], time.Minute)), ErrTooFewSamples,
			"the sample of stream s holds 3 distinct partition keys, and 4 shards balanced by traffic need at least 4 (a key is never divided); sample a longer window, or scale to the even layout"},
	}
	for _, tc := range cases {
		in := activeInput(g)
		in.Sample = tc.sample
		_, err := NewPlan(in, ScaleGoal{Target: 4, Balanced: true})
		if !errors.Is(err, tc.kind) || err.Error() != tc.text {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	in := activeInput(g)
	if _, err := NewPlan(in, ScaleGoal{Target: 4, Balanced: true, Method: MethodUpdateShardCount}); err == nil {
		t.Fatal("balanced UpdateShardCount accepted")
	}
}

// TestBalancedFewestCalls: from a random layout, a balanced plan makes one
// call per boundary to add or remove, and ends with one boundary in each
// quantile's gap.
func TestBalancedFewestCalls(t *testing.T) {
	rd := rand.New(rand.NewPCG(7, 8))
	planned, moved := 0, 0
	for range 300 {
		layout := randomLayout(rd)
		if len(layout) > 12 {
			continue
		}
		g := layoutGraph(t, layout...)
		in := activeInput(g)
		var ss []ShardSample
		for _, sh := range g.Open() {
			n := 0
			if sh.Range.Width().BitLen() > 20 {
				n = rd.IntN(300)
			}
			ss = append(ss, sampleOf(sh.ID, sh.Range, time.Duration(1+rd.IntN(60))*time.Second, spread(rd, sh.Range, n)...))
		}
		in.Sample = NewSample(time.Minute, ss...)
		target := 1 + rd.IntN(15)
		p, err := NewPlan(in, ScaleGoal{Target: target, Balanced: true})
		if err != nil {
			if !errors.Is(err, ErrTooFewSamples) && !errors.Is(err, ErrNoSample) {
				t.Fatal(err)
			}
			continue
		}
		final := checkSteps(t, p)
		if len(final) != target {
			t.Fatalf("%d -> %d: ends with %d", len(layout), target, len(final))
		}
		groups, _ := streamTraffic(in, ByRecords)
		ts, _ := balancedTargets(in, groups, target, ByRecords)
		m := matchTargets(p.Before, ts)
		if len(p.Steps) != len(m.missing)+len(m.extra) {
			t.Fatalf("%d steps, %d missing, %d extra", len(p.Steps), len(m.missing), len(m.extra))
		}
		for i, tg := range ts {
			if b := final[i+1].Range.Start; b.Cmp(tg.lo) < 0 || b.Cmp(tg.hi) > 0 {
				t.Fatalf("boundary %d at %s, outside %s..%s", i+1, b, tg.lo, tg.hi)
			}
		}
		planned++
		if len(p.Steps) > 0 {
			moved++
		}
	}
	if planned < 80 || moved < 70 {
		t.Fatalf("only %d plans (%d with steps) of 300 inputs", planned, moved)
	}
}
