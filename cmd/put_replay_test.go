package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

var replayAt = time.Date(2026, 11, 30, 10, 0, 0, 123e6, time.UTC)

func TestParseTailJSONLine(t *testing.T) {
	const ehk = "170141183460469231731687303715884105728"
	agg := &tail.Record{ShardID: "shardId-000000000003", SequenceNumber: "4968", Aggregated: true, SubSequence: 2,
		PartitionKey: "user-7", ExplicitHashKey: ehk, ArrivalTime: replayAt, Data: []byte(`{"order":17}`), OutsideShard: true}
	tests := []struct {
		name     string
		line     string
		key, ehk string
		data     string
		unpacked bool
	}{
		{"plain", `{"shardId":"shardId-000000000003","sequenceNumber":"4968","partitionKey":"user-7","arrivalTime":"2026-11-30T10:00:00.123Z","data":"{\"order\":17}"}`,
			"user-7", "", `{"order":17}`, false},
		{"base64", `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","arrivalTime":"2026-11-30T10:00:00.123Z","data":"/wAf","dataEncoding":"base64"}`,
			"k", "", "\xff\x00\x1f", false},
		{"a KPL user record is written as the user record", string(bytes.TrimSpace(render.AppendRecordJSON(nil, agg))), "user-7", ehk, `{"order":17}`, false},
		{"escapes", `{"shardId":"s","sequenceNumber":"1","partitionKey":"k\"ey","data":"l1\nl2\t\u2028é\u0001"}`, "k\"ey", "", "l1\nl2\t\u2028é\x01", false},
		{"unpacked by tail", `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","data":"x","decompressed":true}`, "k", "", "x", true},
		{"--jq . output: payload and key order do not matter", `{"payload":{"a":1},"data":"{\"a\":1}","partitionKey":"k","sequenceNumber":"1","shardId":"s"}`, "k", "", `{"a":1}`, false},
		{"empty data", `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","data":""}`, "k", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, unpacked, err := parseTailJSONLine([]byte(tt.line))
			if err != nil || e.key != tt.key || e.ehk != tt.ehk || string(e.data) != tt.data || unpacked != tt.unpacked {
				t.Fatalf("got key %q ehk %q data %q unpacked %v err %v", e.key, e.ehk, e.data, unpacked, err)
			}
		})
	}
}

func TestParseTailJSONLineRefuses(t *testing.T) {
	rec := func(extra string) string {
		return `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","data":"x"` + extra + `}`
	}
	tests := []struct{ name, line, want string }{
		{"text", `hello`, `not a tail JSON record: not JSON (invalid character 'h' looking for beginning of value)`},
		{"truncated", `{"shardId":"s"`, `not a tail JSON record: not JSON (unexpected end of JSON input)`},
		{"an array", `[1,2]`, `not a tail JSON record: an array, not an object`},
		{"a number", `42`, `not a tail JSON record: a number, not an object`},
		{"another object", `{"level":"error"}`, `not a tail JSON record: it has no "shardId"`},
		{"no data", `{"shardId":"s","sequenceNumber":"1","partitionKey":"k"}`, `not a tail JSON record: it has no "data"`},
		{"key a number", `{"shardId":"s","sequenceNumber":"1","partitionKey":7,"data":"x"}`, `not a tail JSON record: "partitionKey" is a number, not a string`},
		{"decompressed a string", rec(`,"decompressed":"yes"`), `not a tail JSON record: "decompressed" is a string, not a boolean`},
		{"empty key", `{"shardId":"s","sequenceNumber":"1","partitionKey":"","data":"x"}`, `partitionKey: a partition key must have 1 to 256 characters, not 0`},
		{"long key", `{"shardId":"s","sequenceNumber":"1","partitionKey":"` + strings.Repeat("k", 257) + `","data":"x"}`, `partitionKey: a partition key must have 1 to 256 characters, not 257`},
		{"unknown encoding", rec(`,"dataEncoding":"hex"`), `dataEncoding "hex" is not base64, the only one tail writes`},
		{"bad base64", rec(`,"dataEncoding":"base64"`), `data is not valid base64 (illegal base64 data at input byte 0)`},
		{"hash key with a leading zero", rec(`,"explicitHashKey":"042"`), `explicitHashKey: hash key "042" is not a canonical decimal: no sign, no leading zeros`},
		{"hash key out of range", rec(`,"explicitHashKey":"340282366920938463463374607431768211456"`), `explicitHashKey: hash key "340282366920938463463374607431768211456" is larger than 2^128-1 (340282366920938463463374607431768211455)`},
		{"hash key not a number", rec(`,"explicitHashKey":"1\",\"x"`), `explicitHashKey: hash key "1\",\"x" is not a canonical decimal: no sign, no leading zeros`},
		{"a --cwlogs line", `{"shardId":"s","sequenceNumber":"1","logEventIndex":3,"logGroup":"g","logStream":"l","owner":"o","id":"i","timestamp":"2026-11-30T10:00:00.123Z","message":"m"}`,
			`a log event of tail --cwlogs, not a record: put replays records (tail them without --cwlogs)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseTailJSONLine([]byte(tt.line))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant  %s", err, tt.want)
			}
		})
	}
}

// Whatever tail writes, put reads back byte for byte: payloads of any
// bytes, keys with anything in them.
func TestTailJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("ab\"\\\n\x00\x1fé\u2028\u2029😀{}")
	for i := range 2000 {
		data := make([]byte, rng.IntN(64))
		if i%2 == 0 {
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		} else {
			data = data[:0]
			for range rng.IntN(30) {
				data = append(data, string(alphabet[rng.IntN(len(alphabet))])...)
			}
		}
		key := string(alphabet[rng.IntN(len(alphabet))]) + fmt.Sprint(i)
		r := tail.Record{ShardID: "shardId-000000000001", SequenceNumber: fmt.Sprint(4959 + i), PartitionKey: key, ArrivalTime: replayAt, Data: data,
			Aggregated: i%3 == 0, SubSequence: int64(i % 7)}
		checkRoundTrip(t, &r)
	}
}

func FuzzTailJSONRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), "key")
	f.Add([]byte{0xff, 0xe2, 0x80, 0xa8, '"'}, "k\x00é")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		if checkPartitionKey(key) != nil {
			return
		}
		checkRoundTrip(t, &tail.Record{ShardID: "s", SequenceNumber: "1", PartitionKey: key, ArrivalTime: replayAt, Data: data})
	})
}

func checkRoundTrip(t *testing.T, r *tail.Record) {
	t.Helper()
	line := bytes.TrimSuffix(render.AppendRecordJSON(nil, r), []byte("\n"))
	e, _, err := parseTailJSONLine(line)
	if err != nil || e.key != r.PartitionKey || !bytes.Equal(e.data, r.Data) {
		t.Fatalf("%s\nread back as key %q data %q: %v", line, e.key, e.data, err)
	}
}

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
	if len(fake.written) != 3 {
		t.Fatalf("written %d records, want 3", len(fake.written))
	}
	for i, w := range fake.written {
		r := recs[i]
		if aws.ToString(w.PartitionKey) != r.PartitionKey || !bytes.Equal(w.Data, r.Data) {
			t.Errorf("record %d: key %q data %q, want %q %q", i, aws.ToString(w.PartitionKey), w.Data, r.PartitionKey, r.Data)
		}
		if want := r.ExplicitHashKey; aws.ToString(w.ExplicitHashKey) != want || (want == "") != (w.ExplicitHashKey == nil) {
			t.Errorf("record %d: explicit hash key %v, want %q", i, w.ExplicitHashKey, want)
		}
	}
	// Key order: the two records of "a" were never in one call.
	if fmt.Sprint(fake.calls) != "[[a u] [a]]" && fmt.Sprint(fake.calls) != "[[a] [a u]]" {
		t.Errorf("calls = %v", fake.calls)
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

func TestPutLimiter(t *testing.T) {
	ctx := context.Background()
	t.Run("a rate past any stream", func(t *testing.T) {
		// Its bucket is the largest there is, not an int overflown to 1.
		if r, _ := newPutLimiter(1e300, 0, &fakeClock{t: replayAt}).batchLimits(); r != maxBatchRecords {
			t.Fatalf("batch limit %d records at --rate 1e300", r)
		}
	})
	t.Run("records", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newPutLimiter(100, 0, clock)
		if r, b := l.batchLimits(); r != 10 || b != maxBatchBytes {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		// 100 calls of 10 records: the first from the full bucket, then
		// one every 0.1 s.
		for i := range 100 {
			if err := l.wait(ctx, 10, 1<<20); err != nil {
				t.Fatal(err)
			}
			if got, want := clock.Now().Sub(replayAt), time.Duration(i)*100*time.Millisecond; absDur(got-want) > time.Millisecond {
				t.Fatalf("call %d at %s, want %s", i, got, want)
			}
		}
	})
	t.Run("a record bigger than the byte bucket", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newPutLimiter(0, 1000, clock) // 100-byte bucket
		if r, b := l.batchLimits(); r != maxBatchRecords || b != 100 {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		if err := l.wait(ctx, 1, 100); err != nil { // the full bucket
			t.Fatal(err)
		}
		if err := l.wait(ctx, 1, 2500); err != nil {
			t.Fatal(err)
		}
		if got := clock.Now().Sub(replayAt); absDur(got-2500*time.Millisecond) > time.Millisecond {
			t.Fatalf("2,500 bytes at 1,000 B/s sent after %s, want 2.5s", got)
		}
	})
	t.Run("slow rates keep a bucket of one", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newPutLimiter(0.5, 5, clock)
		if r, b := l.batchLimits(); r != 1 || b != 1 {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		for range 3 {
			if err := l.wait(ctx, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		if got := clock.Now().Sub(replayAt); absDur(got-4*time.Second) > time.Millisecond {
			t.Fatalf("3 records at 0.5/s took %s, want 4s", got)
		}
	})
	t.Run("no cap", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newPutLimiter(0, 0, clock)
		if err := l.wait(ctx, 500, 5<<20); err != nil || !clock.Now().Equal(replayAt) {
			t.Fatalf("waited: %v", err)
		}
	})
	t.Run("stopping", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newPutLimiter(1, 0, clock)
		if err := l.wait(ctx, 1, 0); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := l.wait(cctx, 1, 0); err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
	})
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// timedPut records the (fake) time of every call.
type timedPut struct {
	fakePut
	clock *fakeClock
	at    []time.Duration
	sizes []int
}

func (f *timedPut) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, o ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	f.at = append(f.at, f.clock.Now().Sub(replayAt))
	f.sizes = append(f.sizes, len(in.Records))
	return f.fakePut.PutRecords(ctx, in, o...)
}

// --rate caps the records sent in any second, retries included, and the
// summary gives the achieved rate.
func TestPutRate(t *testing.T) {
	clock := &fakeClock{t: replayAt}
	fake := &timedPut{clock: clock, fakePut: fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool { return call == 3 && i < 4 }}}
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
	sent := 0
	for i, at := range fake.at {
		if fake.sizes[i] > 5 {
			t.Fatalf("call %d carried %d records, more than a tenth of a second's worth", i, fake.sizes[i])
		}
		sent += fake.sizes[i]
		// A bucket of 5, refilled at 50/s.
		if limit := 5 + 50*at.Seconds() + 1e-6; float64(sent) > limit {
			t.Fatalf("call %d at %s: %d records sent, more than %.0f", i, at, sent, limit)
		}
	}
	if sent != 204 { // 200 and the 4 retried
		t.Fatalf("%d entries sent, want 204", sent)
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
