package reshard

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/hotstub"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// window is a shard's window of n records over secs seconds, record i
// with key(i), size(i) bytes (data + key) and weight 1.
func window(r lineage.HashRange, secs int, n int, key func(i int) string, size func(i int) int) ShardWindow {
	w := ShardWindow{ShardID: sid(0), Range: r, From: t0, Until: t0.Add(time.Duration(secs) * time.Second), Covered: time.Duration(secs) * time.Second}
	for i := range n {
		w.Records = append(w.Records, WindowRecord{Arrival: t0.Add(time.Duration(i) * time.Millisecond), PartitionKey: key(i), Bytes: size(i), Weight: 1})
	}
	w.Estimated = float64(n)
	return w
}

func keyN(i int) string { return fmt.Sprintf("user-%d", i) }

func TestAnalyzeShardFigures(t *testing.T) {
	// 30,000 records of 1,000 bytes in 60 s: 500 records/s (half the
	// records quota) and 500,000 bytes/s (0.477 of 1 MiB/s).
	w := window(lineage.WholeSpace, 60, 30000, func(i int) string { return keyN(i % 3000) }, func(int) int { return 1000 })
	st := AnalyzeShard(&w, HotOptions{})
	if st.Records != 30000 || st.Bytes != 30_000_000 || st.RecordsPerSecond != 500 || st.BytesPerSecond != 500000 ||
		st.WriteQuotaShare != 0.5 || st.WriteQuotaBy != ByRecords || st.Sampled || st.SampledShare != 1 || st.RecordsRead != 30000 || st.Seconds != 60 {
		t.Fatalf("%+v", st)
	}
	// 3,000 keys, 10 records each: the top five tie, and go by name.
	if len(st.TopKeys) != 5 || st.TopKeys[0] != (KeyShare{PartitionKey: "user-0", Records: 10, Bytes: 10000, Share: 1.0 / 3000, RecordShare: 1.0 / 3000, ByteShare: 1.0 / 3000}) ||
		st.TopKeys[1].PartitionKey != "user-1" || st.TopKeys[2].PartitionKey != "user-10" {
		t.Fatalf("top %+v", st.TopKeys)
	}
	if st.Verdict.Kind != VerdictManyKeys {
		t.Fatalf("verdict %+v", st.Verdict)
	}
	// Bytes first: the same records at 2,000 bytes.
	w = window(lineage.WholeSpace, 60, 30000, func(i int) string { return keyN(i % 3000) }, func(int) int { return 2000 })
	if st := AnalyzeShard(&w, HotOptions{}); st.WriteQuotaBy != ByBytes || st.WriteQuotaShare != 1e6/(1<<20) {
		t.Fatalf("%s %v", st.WriteQuotaBy, st.WriteQuotaShare)
	}
}

func TestAnalyzeVerdicts(t *testing.T) {
	two := evenLayout(t, 2)
	keysIn := hotstub.KeysIn(two[0], 2000)
	hot := keysIn[0]
	cases := []struct {
		name string
		w    ShardWindow
		kind VerdictKind
		text string
	}{
		{"cold", window(two[0], 60, 6000, func(i int) string { return keysIn[i%2000] }, func(int) int { return 500 }), VerdictCold,
			"cold: 10 % of its write quota (1,000 records/s)"},
		// 70 % of 60,000 records in 30 s is one key: 1,400 records/s, over
		// a shard's 1,000 by itself.
		{"one key by records", window(two[0], 30, 60000, func(i int) string {
			if i%10 < 7 {
				return hot
			}
			return keysIn[1+i%1999]
		}, func(int) int { return 100 }), VerdictOneKey,
			"one key: " + hot + " is 70 % of this shard's records; splitting cannot spread one key (it writes 1400 records/s, 140 % of a shard's 1,000 records/s)"},
		// By bytes: 120 records/s of 16 KiB, 80 % of them from one key.
		{"one key by bytes", window(two[0], 5, 600, func(i int) string {
			if i%5 < 4 {
				return "customer-7"
			}
			return keysIn[i]
		}, func(int) int { return 16 << 10 }), VerdictOneKey,
			"one key: customer-7 is 80 % of this shard's bytes; splitting cannot spread one key (it writes 1.5 MiB/s, 150 % of a shard's 1 MiB/s)"},
	}
	for _, tc := range cases {
		st := AnalyzeShard(&tc.w, HotOptions{})
		if st.Verdict.Kind != tc.kind || st.Verdict.Text != tc.text || st.Verdict.SplitAt != nil {
			t.Fatalf("%s: %+v", tc.name, st.Verdict)
		}
	}
}

func TestAnalyzeManyKeysSplitPoint(t *testing.T) {
	two := evenLayout(t, 2)
	keysIn := hotstub.KeysIn(two[1], 4000)
	// 800 records/s over 4,000 keys; the keys of the upper quarter of the
	// range write three times as often: the split lies above the middle.
	var recs []string
	for _, k := range keysIn {
		n := 1
		if lineage.PartitionKeyHash(k).Cmp(key("297747071055821155530452781502797185024")) >= 0 { // 7/8 of the space
			n = 3
		}
		for range n {
			recs = append(recs, k)
		}
	}
	w := window(two[1], 10, len(recs), func(i int) string { return recs[i] }, func(int) int { return 100 })
	st := AnalyzeShard(&w, HotOptions{HotShare: 0.1})
	v := st.Verdict
	if v.Kind != VerdictManyKeys || v.SplitAt == nil {
		t.Fatalf("%+v", v)
	}
	// The truth: the records whose hash lies below the split key.
	below := 0
	for _, k := range recs {
		if lineage.PartitionKeyHash(k).Cmp(*v.SplitAt) < 0 {
			below++
		}
	}
	truth := float64(below) / float64(len(recs))
	if math.Abs(truth-0.5) > 0.001 || v.LowerShare != truth || v.UpperShare != 1-truth || !two[1].Contains(*v.SplitAt) {
		t.Fatalf("split at %s: %v below (lower %v)", v.SplitAt, truth, v.LowerShare)
	}
	if f := rng(two[1].Start, *v.SplitAt).Fraction() / two[1].Fraction(); f < 0.55 {
		t.Fatalf("split at %v of the shard's range", f)
	}
	want := fmt.Sprintf("many keys: splitting at hash %s would put 50 %% / 50 %% of its traffic on each child: 30 %% and 30 %% of a shard's write quota", v.SplitAt)
	if v.Text != want {
		t.Fatalf("%q", v.Text)
	}
	// Records written with an explicit hash key outside the shard count in
	// the figures, not for the split.
	w.Records = append(w.Records, WindowRecord{PartitionKey: "x", ExplicitHashKey: "5", Bytes: 100, Weight: 1})
	if st := AnalyzeShard(&w, HotOptions{HotShare: 0.1}); st.OutsideRange != 1 || st.Records != int64(len(recs)+1) || *st.Verdict.SplitAt != *v.SplitAt {
		t.Fatalf("outside %d, records %d, split %s", st.OutsideRange, st.Records, st.Verdict.SplitAt)
	}
}

func TestAnalyzeSampledWindow(t *testing.T) {
	// 1,000 records read that stand for 12 each: the figures scale, the
	// shares do not.
	w := window(lineage.WholeSpace, 60, 1000, func(i int) string { return keyN(i % 10) }, func(int) int { return 1000 })
	for i := range w.Records {
		w.Records[i].Weight = 12
	}
	w.Sampled, w.Estimated = true, 12000
	r := Analyze("s", []ShardWindow{w}, HotOptions{})
	st := r.Shards[0]
	if !r.Sampled || !st.Sampled || st.SampledShare != 1.0/12 || st.Records != 12000 || st.RecordsPerSecond != 200 || st.TopKeys[0].Share != 0.1 || st.TopKeys[0].Records != 1200 {
		t.Fatalf("%+v", st)
	}
	if !r.WindowStart.Equal(t0) || !r.WindowEnd.Equal(t0.Add(time.Minute)) {
		t.Fatalf("window %v %v", r.WindowStart, r.WindowEnd)
	}
}

func TestHotReportJSON(t *testing.T) {
	w := window(lineage.WholeSpace, 1, 900, func(i int) string { return keyN(i % 90) }, func(int) int { return 10 })
	b, err := json.Marshal(Analyze("orders", []ShardWindow{w}, HotOptions{Top: 1}))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	sh := doc["shards"].([]any)[0].(map[string]any)
	var keys []string
	for k := range sh {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"bytes", "bytesPerSecond", "records", "recordsPerSecond", "recordsRead", "sampled", "sampledShare", "seconds", "shardId", "topKeys", "verdict", "writeQuotaBy", "writeQuotaShare"}
	if !slices.Equal(keys, want) || doc["stream"] != "orders" || doc["sampled"] != false || doc["windowStart"] != "2026-11-30T10:00:00Z" {
		t.Fatalf("%s", b)
	}
	v := sh["verdict"].(map[string]any)
	if v["kind"] != "many-keys" || !strings.HasPrefix(v["text"].(string), "many keys: splitting at hash ") || v["splitAt"] == nil {
		t.Fatalf("verdict %v", v)
	}
	top := sh["topKeys"].([]any)[0].(map[string]any)
	if top["partitionKey"] != "user-0" || top["records"] != 10.0 || top["bytes"] != 100.0 || top["share"] != 1.0/90 {
		t.Fatalf("top %v", top)
	}
}

// TestHotReaderOnSkewedStub: the window reader and the analysis on a
// two-shard stub at 1,000 records a second, where 70 % of shard 0's
// records have one key and shard 1's keys are uniform; read both exactly
// and sampled evenly, the analysis finds the key and the split.
func TestHotReaderOnSkewedStub(t *testing.T) {
	for _, max := range []int{200000, 6000} {
		c := &fakeClock{now: t0}
		var pool [2][]string
		s, api, shards := hotStream(t, c, hotstub.Options{Shards: 2, Start: t0.Add(-time.Hour), RecordSize: 200, Key: func(shard, i int) string {
			if shard == 0 && i%10 < 7 {
				return pool[0][0]
			}
			// A scrambled order: a cycle would alias with the slices.
			return pool[shard][(uint64(i)*11400714819323198485>>33)%uint64(len(pool[shard]))]
		}})
		pool[0], pool[1] = hotstub.KeysIn(s.Range(0), 500), hotstub.KeysIn(s.Range(1), 3000)
		ws, err := ReadWindows(t.Context(), api, hotRef, shards, WindowOptions{From: t0.Add(-time.Minute), Until: t0, MaxRecords: max, Now: c.Now, Sleep: c.Sleep, Seed: 1, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := Analyze("hot", ws, HotOptions{})
		sampled := max < 60000
		hot, many := r.Shards[0], r.Shards[1]
		if r.Sampled != sampled || hot.Sampled != sampled || math.Abs(float64(hot.Records)-60000) > 600 || math.Abs(hot.RecordsPerSecond-1000) > 10 {
			t.Fatalf("max %d: sampled %v, %d records, %v/s", max, r.Sampled, hot.Records, hot.RecordsPerSecond)
		}
		// The key writes 700 of 1,000 records/s: a split beside it helps.
		if v := hot.Verdict; v.Kind != VerdictManyKeys || v.SplitAt == nil || !strings.HasPrefix(v.Text, "one key, "+pool[0][0]+", is 70 % of its traffic but writes 70 % of a shard's quota by itself: splitting at hash ") ||
			math.Abs(hot.TopKeys[0].RecordShare-0.7) > 0.02 || hot.WriteQuotaBy != ByRecords {
			t.Fatalf("max %d: shard 0: %+v (top %+v)", max, v, hot.TopKeys[0])
		}
		v := many.Verdict
		if v.Kind != VerdictManyKeys {
			t.Fatalf("max %d: shard 1: %+v", max, v)
		}
		// The truth over every record of the window.
		below, total := 0, 0
		for i := s.RecordsBetween(1, time.Time{}, t0.Add(-time.Minute)); i < s.RecordsBetween(1, time.Time{}, t0); i++ {
			total++
			if lineage.PartitionKeyHash(s.Key(1, i)).Cmp(*v.SplitAt) < 0 {
				below++
			}
		}
		if f := float64(below) / float64(total); math.Abs(f-0.5) > 0.03 || math.Abs(f-v.LowerShare) > 0.03 {
			t.Fatalf("max %d: split at %s puts %v below (said %v)", max, v.SplitAt, f, v.LowerShare)
		}
	}
}
