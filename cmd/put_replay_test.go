package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

var replayAt = time.Date(2026, 11, 30, 10, 0, 0, 123e6, time.UTC)

func TestValidatePutInput(t *testing.T) {
	tests := []struct {
		name  string
		opts  PutOptions
		given []string
		want  string // "" valid
		bytes int64
	}{
		{"defaults", PutOptions{}, nil, "", 0},
		{"json", PutOptions{Format: "json"}, nil, "", 0},
		{"unknown format", PutOptions{Format: "yaml"}, nil, `unknown --format "yaml": use lines or json`, 0},
		{"json with --key", PutOptions{Format: "json", Key: "k"}, []string{"key"}, "--key does not go with --format json: each record brings its own partitionKey", 0},
		{"json with --key-field", PutOptions{Format: "json", KeyField: "k"}, []string{"key-field"}, "--key-field does not go with --format json: each record brings its own partitionKey", 0},
		{"negative rate", PutOptions{Rate: -1}, []string{"rate"}, "--rate must be a positive number of records per second", 0},
		{"zero rate", PutOptions{}, []string{"rate"}, "--rate must be a positive number of records per second (leave it out for no cap)", 0},
		{"rate 0.5", PutOptions{Rate: 0.5}, []string{"rate"}, "", 0},
		{"bytes", PutOptions{RateBytesText: "2048"}, []string{"rate-bytes"}, "", 2048},
		{"KiB", PutOptions{RateBytesText: "1.5KiB"}, []string{"rate-bytes"}, "", 1536},
		{"MiB/s", PutOptions{RateBytesText: "1MiB/s"}, []string{"rate-bytes"}, "", 1 << 20},
		{"kB", PutOptions{RateBytesText: "500kB"}, []string{"rate-bytes"}, "", 500000},
		{"zero bytes", PutOptions{RateBytesText: "0"}, []string{"rate-bytes"}, "--rate-bytes: it must be at least 1 byte per second", 0},
		{"empty bytes", PutOptions{RateBytesText: ""}, []string{"rate-bytes"}, `--rate-bytes: "" is not a number of bytes per second`, 0},
		{"unknown unit", PutOptions{RateBytesText: "3parsec"}, []string{"rate-bytes"}, `--rate-bytes: unknown unit "parsec" in "3parsec": use bytes, KiB, MiB, GiB, kB, MB or GB (per second)`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			err := validatePutInput(&o, func(name string) bool { return strings.Contains(" "+strings.Join(tt.given, " ")+" ", " "+name+" ") })
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("err = %v, want %q", err, tt.want)
			case tt.want != "" && exitCode(err) != exitUsage:
				t.Fatalf("exit code %d, want 2", exitCode(err))
			case tt.want == "" && o.RateBytes != tt.bytes:
				t.Fatalf("RateBytes = %d, want %d", o.RateBytes, tt.bytes)
			}
		})
	}
}

func exitCode(err error) int {
	_, code := describeError(context.Background(), err, errContext{})
	return code
}

// put --format json writes each record with its own keys, in order; a line
// that is not a record stops the run there, with what came before written.
func TestPutFormatJSON(t *testing.T) {
	recs := []tail.Record{
		{ShardID: "shardId-000000000001", SequenceNumber: "1", PartitionKey: "a", ArrivalTime: replayAt, Data: []byte("a#0")},
		{ShardID: "shardId-000000000001", SequenceNumber: "2", PartitionKey: "a", ArrivalTime: replayAt, Data: []byte{0xff, 0}},
		{ShardID: "shardId-000000000002", SequenceNumber: "3", Aggregated: true, SubSequence: 0, PartitionKey: "u", ExplicitHashKey: "42", ArrivalTime: replayAt, Data: []byte("u#0")},
	}
	var in strings.Builder
	for i := range recs {
		in.Write(render.AppendRecordJSON(nil, &recs[i]))
	}
	in.WriteString("\n") // a blank line is skipped, as with lines
	fake := &fakePut{}
	opts := putOpts()
	opts.Format = putFormatJSON
	_, stderr, err := runPutTest(t, fake, in.String()+`{"level":"error"}`+"\n"+string(render.AppendRecordJSON(nil, &recs[0])), opts)
	if err == nil || err.Error() != `line 5: not a tail JSON record: it has no "shardId"; 3 records written before it` || stderr != "" {
		t.Fatalf("err = %v, stderr %q", err, stderr)
	}
	// What was written, field by field, and in which calls: the
	// producer's TestPutFormatJSON.
	if len(fake.written) != 3 {
		t.Fatalf("written %d records, want 3", len(fake.written))
	}
}

func TestPutFormatJSONWarnsOnceOfUnpackedRecords(t *testing.T) {
	line := `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","data":"x","decompressed":true}` + "\n"
	opts := putOpts()
	opts.Format = putFormatJSON
	_, stderr, err := runPutTest(t, &fakePut{}, "\n"+line+line, opts)
	want := "warning: line 2: tail had unpacked this record (--decompress); it is written unpacked, not as it was stored (tail without --decompress copies records byte for byte)\n"
	if err != nil || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "warning:") != 1 {
		t.Fatalf("err %v, stderr %q", err, stderr)
	}
}

// fakeClock is time that passes only when put sleeps.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return nil
}

// The summary gives the achieved rate and the cap of --rate (the pacing
// itself, retries included, is the producer's TestPutRate).
func TestPutRate(t *testing.T) {
	clock := &fakeClock{t: replayAt}
	fake := &fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool { return call == 3 && i < 4 }}
	opts := putOpts()
	opts.Rate, opts.clock = 50, clock
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "{\"k\":\"key%d\"}\n", i)
	}
	opts.KeyField = "k"
	_, stderr, err := runPutTest(t, fake, in.String(), opts)
	if err != nil || len(fake.written) != 200 {
		t.Fatalf("err %v, %d written", err, len(fake.written))
	}
	// 204 entries: 5 at once, then 199 at 50/s.
	if want := "put 200 records (2.6 KiB) to s in 4.0s with 41 calls, 4 retried, at 50.3 records/s and 675 B/s (cap 50 records/s) [000000000000:200]\n"; stderr != want {
		t.Fatalf("summary %q\nwant %q", stderr, want)
	}
}

// -o json adds the achieved rates, and the caps when there are.
func TestPutRateJSON(t *testing.T) {
	for _, capped := range []bool{false, true} {
		clock := &fakeClock{t: replayAt}
		opts := putOpts()
		opts.Output, opts.clock, opts.Key = "json", clock, "k"
		if capped {
			opts.Rate, opts.RateBytes = 2, 100
		}
		stdout, _, err := runPutTest(t, &fakePut{}, "aaaa\nbbbb\ncccc\n", opts)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if !capped {
			// No time passed on the fake clock: no rate to give.
			if doc["recordsPerSecond"] != 0.0 || doc["bytesPerSecond"] != 0.0 || hasField(doc, "maxRecordsPerSecond") || hasField(doc, "maxBytesPerSecond") {
				t.Fatalf("uncapped: %s", stdout)
			}
			continue
		}
		// 3 records of 5 bytes (with the key) at 2/s and 100 B/s: the
		// first at once, then 0.5 s each.
		if doc["seconds"] != 1.0 || doc["recordsPerSecond"] != 3.0 || doc["bytesPerSecond"] != 12.0 || doc["maxRecordsPerSecond"] != 2.0 || doc["maxBytesPerSecond"] != 100.0 {
			t.Fatalf("capped: %s", stdout)
		}
	}
}

func hasField(m map[string]any, k string) bool { _, ok := m[k]; return ok }
