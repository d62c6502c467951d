package reshard

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// sampleOf builds a shard sample from explicit hashes.
func sampleOf(id string, r lineage.HashRange, span time.Duration, hashes ...lineage.HashKey) ShardSample {
	s := ShardSample{ShardID: id, Range: r, Span: span}
	for _, h := range hashes {
		s.add(h, "", 0, 1)
	}
	s.sort()
	return s
}

// times2to120 is i·2^120.
func times2to120(i int64) lineage.HashKey {
	return bigKey(new(big.Int).Lsh(big.NewInt(i), 120))
}

func TestMedianSplit(t *testing.T) {
	whole := lineage.WholeSpace
	var spaced []lineage.HashKey
	for i := int64(1); i <= 100; i++ {
		spaced = append(spaced, times2to120(i))
	}
	hot := func(low, hotN, high int) []lineage.HashKey {
		var hs []lineage.HashKey
		for i := 0; i < low; i++ {
			hs = append(hs, times2to120(int64(i+1)))
		}
		for i := 0; i < hotN; i++ {
			hs = append(hs, times2to120(100))
		}
		for i := 0; i < high; i++ {
			hs = append(hs, times2to120(int64(200+i)))
		}
		return hs
	}
	tests := []struct {
		name        string
		shard       lineage.HashRange
		hashes      []lineage.HashKey
		key         lineage.HashKey
		lower       float64 // the children's shares of the sample
		upper       float64
		description string
	}{
		// Cut between the 50th and 51st: halfway between 50·2^120 and 51·2^120, plus one.
		{"evenly spaced", whole, spaced, add(bigKey(new(big.Int).Lsh(big.NewInt(101), 119)), 1), 0.5,
			0.5, "split shardId-000000000000 at the median hash of 100 sampled records (hash key " + add(bigKey(new(big.Int).Lsh(big.NewInt(101), 119)), 1).String() + ")"},
		// One hot key in the middle cannot be divided: 30 below it, 40 on it,
		// 30 above; the cut before it and the one after it are equally far
		// from the middle, and the lower one is taken.
		{"hot key in the middle", whole, hot(30, 40, 30), add(bigKey(new(big.Int).Rsh(new(big.Int).Add(times2to120(30).Big(), times2to120(100).Big()), 1)), 1), 0.3, 0.7, ""},
		{"hot key low", whole, hot(10, 60, 30), add(bigKey(new(big.Int).Rsh(new(big.Int).Add(times2to120(100).Big(), times2to120(200).Big()), 1)), 1), 0.7, 0.3, ""},
		// Two keys at the shard's very start: the key is pushed to start+2.
		{"clamped to start+2", rng(u(10), u(1000)), append(slices.Repeat([]lineage.HashKey{u(10)}, 50), slices.Repeat([]lineage.HashKey{u(11)}, 50)...), u(12), 1, 0, ""},
		{"clamped to end-1", rng(u(0), u(1000)), append(slices.Repeat([]lineage.HashKey{u(999)}, 50), slices.Repeat([]lineage.HashKey{u(1000)}, 50)...), u(999), 0, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout := []lineage.HashRange{tc.shard}
			if tc.shard != whole {
				layout = []lineage.HashRange{tc.shard, rng(add(tc.shard.End, 1), maxK)}
				if !tc.shard.Start.IsZero() {
					layout = append([]lineage.HashRange{rng(u(0), sub(tc.shard.Start, 1))}, layout...)
				}
			}
			g := layoutGraph(t, layout...)
			id := sid(slices.Index(layout, tc.shard))
			in := activeInput(g)
			in.Sample = NewSample(time.Minute, sampleOf(id, tc.shard, time.Minute, tc.hashes...))
			p := mustPlan(t, in, SplitGoal{Shard: id, Median: true})
			st := p.Steps[0]
			if *st.Args.NewStartingHashKey != tc.key {
				t.Fatalf("key %s, want %s", st.Args.NewStartingHashKey, tc.key)
			}
			if st.Opens[0].Traffic == nil || *st.Opens[0].Traffic != tc.lower || *st.Opens[1].Traffic != tc.upper {
				t.Fatalf("traffic %v %v", *st.Opens[0].Traffic, *st.Opens[1].Traffic)
			}
			// Before: the sampled shard has all the sampled traffic, the
			// others none known.
			for _, s := range p.Before {
				if (s.ID == id) != (s.Traffic != nil) || s.ID == id && *s.Traffic != 1 {
					t.Fatalf("before %+v", s)
				}
			}
			if tc.description != "" && p.Description != tc.description {
				t.Fatalf("description %q", p.Description)
			}
			if p.Sample == nil || p.Sample.Records != len(tc.hashes) {
				t.Fatalf("sample %+v", p.Sample)
			}
		})
	}
}

func TestMedianRefusals(t *testing.T) {
	g := layoutGraph(t, lineage.WholeSpace)
	in := activeInput(g)
	in.Sample = NewSample(time.Minute, sampleOf(sid(0), lineage.WholeSpace, time.Minute, slices.Repeat([]lineage.HashKey{u(77)}, 500)...))
	_, err := NewPlan(in, SplitGoal{Shard: sid(0), Median: true})
	if !errors.Is(err, ErrOneKey) || err.Error() != "all 500 sampled records of shard shardId-000000000000 of stream s have the same hash key (one partition key): a split cannot divide one key's traffic" {
		t.Fatal(err)
	}
	var few []lineage.HashKey
	for i := range 99 {
		few = append(few, u(uint64(i)))
	}
	in.Sample = NewSample(time.Minute, sampleOf(sid(0), lineage.WholeSpace, time.Minute, few...))
	_, err = NewPlan(in, SplitGoal{Shard: sid(0), Median: true})
	if !errors.Is(err, ErrTooFewSamples) || err.Error() != "only 99 records of shard shardId-000000000000 of stream s were sampled (at least 100 are needed to split at their median); split at a hash key or a percentage instead, or sample a longer window" {
		t.Fatal(err)
	}
}

func TestShareWeightsByRate(t *testing.T) {
	two := evenLayout(t, 2)
	quarter := two126
	// Shard 0: 100 records in 10 s (10/s), all in its first quarter of the
	// space. Shard 1: 100 records over 100 s (1/s), spread.
	var a, b []lineage.HashKey
	for i := range 100 {
		a = append(a, u(uint64(i)))
		b = append(b, add(two127, uint64(i)))
	}
	s := NewSample(5*time.Minute, sampleOf(sid(0), two[0], 10*time.Second, a...), sampleOf(sid(1), two[1], 100*time.Second, b...))
	cases := []struct {
		r    lineage.HashRange
		want float64
		ok   bool
	}{
		{two[0], 10.0 / 11, true},
		{two[1], 1.0 / 11, true},
		{lineage.WholeSpace, 1, true},
		{rng(u(0), sub(quarter, 1)), 10.0 / 11, true},
		{rng(quarter, sub(two127, 1)), 0, true},
		{rng(u(50), add(two127, 49)), (10.0*50/100 + 1.0*50/100) / 11, true},
	}
	for _, c := range cases {
		got, ok := s.Share(c.r)
		if ok != c.ok || got != c.want {
			t.Fatalf("Share(%s) = %v, %v; want %v", c.r, got, ok, c.want)
		}
	}
	// A range reaching beyond the sampled shards has no known share.
	only0 := NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute, a...))
	if _, ok := only0.Share(lineage.WholeSpace); ok {
		t.Fatal("share of unsampled space")
	}
	if _, ok := NewSample(time.Minute, sampleOf(sid(0), two[0], time.Minute)).Share(two[0]); ok {
		t.Fatal("share of an empty sample")
	}
}

func TestNewShardSampleLeavesOutForeignHashes(t *testing.T) {
	two := evenLayout(t, 2)
	var keys []string
	in, out := 0, 0
	for i := range 200 {
		k := fmt.Sprintf("key-%d", i)
		keys = append(keys, k)
		if two[0].Contains(lineage.PartitionKeyHash(k)) {
			in++
		} else {
			out++
		}
	}
	s := NewShardSample(sid(0), two[0], keys, time.Minute)
	if s.Records != in || s.Outside != out || len(s.Hashes) != in || !slices.IsSortedFunc(s.Hashes, lineage.HashKey.Cmp) || in == 0 || out == 0 {
		t.Fatalf("records %d outside %d (want %d, %d)", s.Records, s.Outside, in, out)
	}
}
