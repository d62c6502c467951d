package cmd

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/hotstub"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// hotDoc is the part of `hot -o json` the tests read.
type hotDoc struct {
	Stream      string    `json:"stream"`
	WindowStart time.Time `json:"windowStart"`
	WindowEnd   time.Time `json:"windowEnd"`
	Sampled     bool      `json:"sampled"`
	Shards      []struct {
		ShardID          string  `json:"shardId"`
		Records          int64   `json:"records"`
		Bytes            int64   `json:"bytes"`
		RecordsPerSecond float64 `json:"recordsPerSecond"`
		BytesPerSecond   float64 `json:"bytesPerSecond"`
		WriteQuotaShare  float64 `json:"writeQuotaShare"`
		SampledShare     float64 `json:"sampledShare"`
		TopKeys          []struct {
			PartitionKey string  `json:"partitionKey"`
			Records      int64   `json:"records"`
			Bytes        int64   `json:"bytes"`
			Share        float64 `json:"share"`
		} `json:"topKeys"`
		Verdict struct {
			Kind    string `json:"kind"`
			Text    string `json:"text"`
			SplitAt string `json:"splitAt"`
		} `json:"verdict"`
	} `json:"shards"`
}

// Skewed traffic on the emulator: shard 0 takes 500 small records, 60 %
// of them with one key and the rest with 200 other keys; shard 1 takes 500
// records of 500 distinct keys. Over the window of the writes (well under
// a second) both are hot by their record rate. `hot` finds shard 0's key
// with its share within a few percent and says "one key"; it gives shard 1
// a split point whose children carry near half of its records each; read
// whole and sampled (--max-records 300, the figures then estimates).
func TestHotSkewedTraffic(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	g, err := lineage.Load(t.Context(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	open := g.Open()
	// The hot key and 200 others on shard 0, 500 keys on shard 1.
	keys := [2][]string{hotstub.KeysIn(open[0].Range, 201), hotstub.KeysIn(open[1].Range, 500)}
	hotKey := keys[0][0]
	keys[0] = keys[0][1:]
	sum, err := kstream.Describe(t.Context(), c, kstream.Ref{Name: stream})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"order":1}`)
	// The emulator stamps arrivals with this machine's clock, in ms.
	from := time.Now().Truncate(time.Millisecond)
	if !from.After(sum.Created) {
		from = sum.Created.Add(time.Millisecond) // no note about the creation time
	}
	// Twenty PutRecords calls of 50 records, each with a twentieth of
	// every shard's records (the sampler cuts between calls, never inside
	// one: records of one call arrive together).
	for b := range 20 {
		var recs []emulator.Rec
		for i := b * 25; i < (b+1)*25; i++ {
			k := hotKey
			if i%10 >= 6 {
				k = keys[0][i/10*4+i%10-6]
			}
			recs = append(recs, emulator.Rec{PartitionKey: k, Data: data}, emulator.Rec{PartitionKey: keys[1][i], Data: data})
		}
		e.Put(t, c, stream, recs)
	}
	until := time.Now().Add(time.Millisecond)
	t.Logf("wrote 1,000 records in %s", until.Sub(from))
	window := []string{"--from-timestamp", from.UTC().Format(time.RFC3339Nano), "--until", until.UTC().Format(time.RFC3339Nano)}

	for _, max := range []string{"100000", "300"} {
		// --threshold 1: hot at any rate the emulator can write at, however
		// loaded the machine (the default, 50 %, needs 500 records/s).
		res := runCLI(t, "", "", append([]string{"hot", stream, "-o", "json", "--max-records", max, "--threshold", "1"}, window...)...)
		if res.code != 0 || res.stderr != "" {
			t.Fatalf("--max-records %s: exit %d, stderr %q", max, res.code, res.stderr)
		}
		var doc hotDoc
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
			t.Fatalf("%v: %s", err, res.stdout)
		}
		if doc.Stream != stream || len(doc.Shards) != 2 || doc.Shards[0].ShardID != open[0].ID || doc.Sampled != (max == "300") {
			t.Fatalf("--max-records %s: %s", max, res.stdout)
		}
		hot, many := doc.Shards[0], doc.Shards[1]
		if max == "100000" && (hot.Records != 500 || many.Records != 500 || hot.SampledShare != 1) {
			t.Fatalf("whole window: %d and %d records, sampled share %v", hot.Records, many.Records, hot.SampledShare)
		}
		// A sample of 300 of a 0.2 s burst of 500 estimates the burst within
		// about a fifth; on kinesalite it once came to 394 (the estimate
		// leans low when a whole burst shares a few arrival times), hence a
		// quarter.
		if max == "300" && (hot.SampledShare > 0.8 || math.Abs(float64(hot.Records)-500) > 125) {
			t.Fatalf("sampled: share %v, %d records estimated", hot.SampledShare, hot.Records)
		}
		// Whether a split helps depends on the key's own rate: over a
		// shard's quota by itself (the writes took under 0.3 s) it
		// cannot; under it, a split beside the key can.
		keyQuota := hot.RecordsPerSecond * hot.TopKeys[0].Share / 1000
		if hot.TopKeys[0].PartitionKey != hotKey || math.Abs(hot.TopKeys[0].Share-0.6) > 0.05 {
			t.Fatalf("--max-records %s: shard 0: %+v", max, hot)
		}
		if keyQuota > 1.02 && (hot.Verdict.Kind != "one-key" || !strings.HasPrefix(hot.Verdict.Text, "one key: "+hotKey+" is ") || !strings.Contains(hot.Verdict.Text, "splitting cannot spread one key")) ||
			keyQuota < 0.98 && (hot.Verdict.Kind != "many-keys" || !strings.HasPrefix(hot.Verdict.Text, "one key, "+hotKey+", is ")) {
			t.Fatalf("--max-records %s: shard 0, key at %.2f of the quota: %+v", max, keyQuota, hot.Verdict)
		}
		if many.Verdict.Kind != "many-keys" || !strings.HasPrefix(many.Verdict.Text, "many keys: splitting at hash "+many.Verdict.SplitAt+" would put ") {
			t.Fatalf("--max-records %s: shard 1: %+v", max, many.Verdict)
		}
		at, err := lineage.ParseHashKey(many.Verdict.SplitAt)
		if err != nil {
			t.Fatal(err)
		}
		below := 0
		for _, k := range keys[1] {
			if lineage.PartitionKeyHash(k).Cmp(at) < 0 {
				below++
			}
		}
		// Read whole, the split is the median within a few keys; from a
		// sample of 300 of the 500 records, read in slices whose records
		// stand for their whole slice, it is placed less exactly (0.444
		// was seen on kinesalite).
		tol := 0.05
		if max == "300" {
			tol = 0.1
		}
		if f := float64(below) / 500; math.Abs(f-0.5) > tol {
			t.Fatalf("--max-records %s: the split at %s puts %v of shard 1's records below it", max, at, f)
		}
		t.Logf("--max-records %s: shard 0 %.0f %% of its quota: %s; shard 1: %s", max, hot.WriteQuotaShare*100, hot.Verdict.Text, many.Verdict.Text)
	}

	// On a terminal, stderr shows the shards read of all; stdout is the same.
	tty := runCLIWith(t, func(f *Factory) { f.IO.StderrTTY = true }, "", append([]string{"hot", stream, "-o", "json", "--threshold", "1"}, window...)...)
	if tty.code != 0 || !strings.Contains(tty.stderr, "reading the window of 2 open shards: ") || !strings.Contains(tty.stderr, " of 2 read") || !strings.HasSuffix(tty.stderr, "\r\033[K") ||
		!json.Valid([]byte(tty.stdout)) {
		t.Errorf("on a terminal: exit %d, stderr %q", tty.code, tty.stderr)
	}

	// The table says the same in words, and how to act on it.
	res := runCLI(t, "", "", append([]string{"hot", stream, "--threshold", "1"}, window...)...)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"many-keys", "one key", hotKey,
		"preview that split: kinesis-shards split " + stream + " " + open[1].ID + " --at "} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, res.stdout)
		}
	}
}
