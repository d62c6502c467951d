package reshard

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// TestHotOnTheEmulator: the window reader and the analysis against the
// emulator. Shard 0 takes 1,000 records, 600 of them with one key; shard 1
// 1,000 records of distinct keys. Read whole and sampled, the analysis
// finds shard 0's key with its share and says "one key", and gives shard 1
// a split point whose children carry near half each.
func TestHotOnTheEmulator(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 2)
	g, err := lineage.Load(t.Context(), c, lineage.ListOptions{StreamName: name})
	if err != nil {
		t.Fatal(err)
	}
	open := g.Open()
	hotKey := ""
	for i := 0; hotKey == ""; i++ {
		if k := fmt.Sprintf("customer-%d", i); open[0].Range.Contains(lineage.PartitionKeyHash(k)) {
			hotKey = k
		}
	}
	var keys [2][]string // the distinct keys of each shard
	for i := 0; len(keys[0]) < 400 || len(keys[1]) < 1000; i++ {
		k := fmt.Sprintf("user-%d", i)
		s := 1
		if open[0].Range.Contains(lineage.PartitionKeyHash(k)) {
			s = 0
		}
		if len(keys[s]) < [2]int{400, 1000}[s] {
			keys[s] = append(keys[s], k)
		}
	}
	// Ten batches a tenth of a second apart, each with a tenth of every
	// shard's records, the hot key on 6 of each 10 of shard 0's.
	from := time.Now().Add(-time.Second)
	data := make([]byte, 100)
	for b := range 10 {
		var recs []emulator.Rec
		for i := b * 100; i < (b+1)*100; i++ {
			k := hotKey
			if i%10 >= 6 {
				k = keys[0][i/10*4+i%10-6]
			}
			recs = append(recs, emulator.Rec{PartitionKey: k, Data: data}, emulator.Rec{PartitionKey: keys[1][i], Data: data})
		}
		e.Put(t, c, name, recs)
		time.Sleep(100 * time.Millisecond)
	}
	until := time.Now()
	time.Sleep(200 * time.Millisecond)

	for _, max := range []int{100000, 400} {
		ws, err := ReadWindows(t.Context(), c, kstream.Ref{Name: name}, open, WindowOptions{From: from, Until: until, MaxRecords: max})
		if err != nil {
			t.Fatal(err)
		}
		r := Analyze(name, ws, HotOptions{HotShare: 1e-9}) // any traffic is hot here
		hot, many := r.Shards[0], r.Shards[1]
		if max == 100000 && (r.Sampled || hot.Records != 1000 || many.Records != 1000) {
			t.Fatalf("whole window: sampled %v, %d and %d records", r.Sampled, hot.Records, many.Records)
		}
		if max == 400 && (hot.RecordsRead > 600 || hot.RecordsRead < 100) {
			t.Fatalf("sampled: %d records read", hot.RecordsRead)
		}
		// The key writes far less than a shard's quota by itself (600
		// records in over a second): a split beside it helps.
		if v := hot.Verdict; v.Kind != VerdictManyKeys || v.SplitAt == nil || !strings.HasPrefix(v.Text, "one key, "+hotKey+", is ") || math.Abs(hot.TopKeys[0].RecordShare-0.6) > 0.05 {
			t.Fatalf("max %d: shard 0: %+v, top %+v", max, v, hot.TopKeys)
		}
		v := many.Verdict
		if v.Kind != VerdictManyKeys {
			t.Fatalf("max %d: shard 1: %+v", max, v)
		}
		below := 0
		for _, k := range keys[1] {
			if lineage.PartitionKeyHash(k).Cmp(*v.SplitAt) < 0 {
				below++
			}
		}
		tol := 0.05 // read whole: the median within a few keys
		if max == 400 {
			tol = 0.1 // a weighted sample of 400 of 1,000 records
		}
		if f := float64(below) / 1000; math.Abs(f-0.5) > tol {
			t.Fatalf("max %d: the split at %s puts %v of shard 1's records below it", max, v.SplitAt, f)
		}
		t.Logf("max %d: read %d and %d records in %d and %d calls; shard 0: %s; shard 1: %s", max, hot.RecordsRead, many.RecordsRead, ws[0].Calls, ws[1].Calls, hot.Verdict.Text, v.Text)
	}
}
