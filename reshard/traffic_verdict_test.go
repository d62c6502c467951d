package reshard

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/hotstub"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Whether a split helps is a matter of rates against the quota: a key at
// 52 % of a shard running at 164 % of its write quota writes 85 % of a
// quota by itself, and a split beside it leaves both children under
// theirs. Only a key over the quota alone is "a split cannot help".
func TestHotVerdictComparesRatesWithTheQuota(t *testing.T) {
	two := evenLayout(t, 2)
	keysIn := hotstub.KeysIn(two[0], 2001)
	// The big key lowest in the range: a split just above it leaves it
	// alone on the lower child (85 %) and the others on the upper (79 %).
	slices.SortFunc(keysIn, func(a, b string) int { return lineage.PartitionKeyHash(a).Cmp(lineage.PartitionKeyHash(b)) })
	big, others := keysIn[0], keysIn[1:]
	// 16,400 records in 10 s: 1,640 records/s, 164 % of 1,000.
	w := window(two[0], 10, 16400, func(i int) string {
		if i%100 < 52 {
			return big
		}
		return others[i%2000]
	}, func(int) int { return 100 })
	st := AnalyzeShard(&w, HotOptions{})
	v := st.Verdict
	if v.Kind != VerdictManyKeys || v.SplitAt == nil {
		t.Fatalf("%+v", v)
	}
	if math.Abs(v.LowerQuotaShare-0.8528) > 0.001 || math.Abs(v.UpperQuotaShare-0.7872) > 0.001 {
		t.Fatalf("children at %v and %v of the quota", v.LowerQuotaShare, v.UpperQuotaShare)
	}
	want := fmt.Sprintf("one key, %s, is 52 %% of its traffic but writes 85 %% of a shard's quota by itself: splitting at hash %s would put ", big, v.SplitAt)
	if !strings.HasPrefix(v.Text, want) || strings.Contains(v.Text, "cannot") {
		t.Fatalf("%q", v.Text)
	}
	// The truth: the records on each side of the split.
	below := 0
	for _, r := range w.Records {
		if lineage.PartitionKeyHash(r.PartitionKey).Cmp(*v.SplitAt) < 0 {
			below++
		}
	}
	if f := float64(below) / 16400; math.Abs(f-v.LowerShare) > 1e-9 {
		t.Fatalf("%v below the split, said %v", f, v.LowerShare)
	}

	// The same key at 70 % of a shard at 164 %: 115 % by itself.
	w = window(two[0], 10, 16400, func(i int) string {
		if i%100 < 70 {
			return big
		}
		return others[i%2000]
	}, func(int) int { return 100 })
	if v := AnalyzeShard(&w, HotOptions{}).Verdict; v.Kind != VerdictOneKey || v.KeyQuotaShare < 1.14 || v.SplitAt != nil {
		t.Fatalf("over the quota alone: %+v", v)
	}
}

// GetRecords does not return a record's explicit hash key: a record whose
// partition key hashes outside its shard was placed by one, somewhere
// unknown in the range. Its share is said; no split point is claimed from
// a shard mostly fed that way, and a split point of the rest says the
// unknown part may fall on either side.
func TestHotExplicitHashKeyTraffic(t *testing.T) {
	two := evenLayout(t, 2)
	inside, outsideKeys := hotstub.KeysIn(two[0], 1000), hotstub.KeysIn(two[1], 1000)
	mixed := func(explicitPct int) ShardWindow {
		return window(two[0], 10, 10000, func(i int) string {
			if i%100 < explicitPct {
				return outsideKeys[i%1000]
			}
			return inside[i%1000]
		}, func(int) int { return 100 })
	}
	w := mixed(90)
	st := AnalyzeShard(&w, HotOptions{})
	if st.Verdict.Kind != VerdictExplicit || st.Verdict.SplitAt != nil || math.Abs(st.ExplicitShare-0.9) > 1e-9 ||
		!strings.HasPrefix(st.Verdict.Text, "explicit hash keys: 90 % of its traffic was written with explicit hash keys") ||
		!strings.Contains(st.Verdict.Text, "ExplicitHashKey values would tell") {
		t.Fatalf("90 %% explicit: %+v (share %v)", st.Verdict, st.ExplicitShare)
	}
	w = mixed(10)
	st = AnalyzeShard(&w, HotOptions{})
	v := st.Verdict
	if v.Kind != VerdictManyKeys || v.SplitAt == nil || math.Abs(v.LowerShare+v.UpperShare-0.9) > 1e-9 ||
		!strings.Contains(v.Text, "with 10 % of its traffic (written with explicit hash keys") {
		t.Fatalf("10 %% explicit: %+v", v)
	}
}

// A sampled window whose slices disagree (bursts one slice caught and the
// next did not) is given as a range; a shard whose range straddles the hot
// threshold is "uncertain", never "cold". A steady sample that is well
// under the threshold is cold.
func TestHotThinSampleIsUncertain(t *testing.T) {
	sampled := func(slices []SliceEstimate) ShardWindow {
		w := ShardWindow{ShardID: sid(0), Range: lineage.WholeSpace, From: t0, Until: t0.Add(time.Minute), Covered: time.Minute, Sampled: true, Slices: slices}
		for si, s := range slices {
			for i := range s.Read {
				w.Records = append(w.Records, WindowRecord{Arrival: t0.Add(time.Duration(si*6000+i) * time.Millisecond), PartitionKey: keyN(si*1000 + i), Bytes: 100, Weight: s.Records / float64(s.Read)})
			}
			w.Estimated += s.Records
		}
		return w
	}
	// Ten slices of 6 s, 100 records read from each: bursts of 250 make
	// some slices stand for 10,000 records and others for 100.
	var bursty, steady []SliceEstimate
	for i := range 10 {
		n := 100.0
		if i%3 == 0 {
			n = 6000
		}
		bursty = append(bursty, SliceEstimate{Seconds: 6, ReadSeconds: 0.5, Read: 100, Records: n, Cut: true})
		steady = append(steady, SliceEstimate{Seconds: 6, ReadSeconds: 3, Read: 100, Records: 2000 + float64(i), Cut: true})
	}
	w := sampled(bursty)
	st := AnalyzeShard(&w, HotOptions{})
	if st.WriteQuotaShare >= 0.5 || st.WriteQuotaLow >= 0.5 || st.WriteQuotaHigh < 0.5 || st.Verdict.Kind != VerdictUncertain ||
		!strings.HasPrefix(st.Verdict.Text, "uncertain: ") || !strings.Contains(st.Verdict.Text, "1000 records read, from 8.3 % of the window's time") {
		t.Fatalf("bursty: %v (%v..%v): %+v", st.WriteQuotaShare, st.WriteQuotaLow, st.WriteQuotaHigh, st.Verdict)
	}
	if st.WriteQuotaLow*60*1000 < 1000 {
		t.Fatalf("the low bound %v is below the records read", st.WriteQuotaLow)
	}
	// One cut slice gives no spread to measure: a factor of two either
	// way, so a shard far below the threshold is still cold.
	w = sampled([]SliceEstimate{{Seconds: 60, ReadSeconds: 6, Read: 100, Records: 1000, Cut: true}})
	if st := AnalyzeShard(&w, HotOptions{}); st.Verdict.Kind != VerdictCold || math.Abs(st.WriteQuotaHigh-2*st.WriteQuotaShare) > 1e-9 {
		t.Fatalf("one cut slice: %v (%v..%v): %+v", st.WriteQuotaShare, st.WriteQuotaLow, st.WriteQuotaHigh, st.Verdict)
	}
	w = sampled(steady)
	st = AnalyzeShard(&w, HotOptions{})
	if st.Verdict.Kind != VerdictCold || st.WriteQuotaHigh >= 0.5 || st.ReadTimeShare != 0.5 {
		t.Fatalf("steady: %v (%v..%v), read %v: %+v", st.WriteQuotaShare, st.WriteQuotaLow, st.WriteQuotaHigh, st.ReadTimeShare, st.Verdict)
	}
}
