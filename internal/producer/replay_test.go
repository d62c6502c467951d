package producer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

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
		if CheckPartitionKey(key) != nil {
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

// FormatJSON writes each record with its own keys, in order; a line that is
// not a record stops the run there, with what came before written. (The
// note of what was written is cmd's TestPutFormatJSON.)
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
	opts := testOpts()
	opts.Format = FormatJSON
	var warnings []string
	opts.Warnf = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	st, err := runTest(t, fake, in.String()+`{"level":"error"}`+"\n"+string(render.AppendRecordJSON(nil, &recs[0])), opts)
	if err == nil || err.Error() != `line 5: not a tail JSON record: it has no "shardId"` || len(warnings) != 0 {
		t.Fatalf("err = %v, warnings %q", err, warnings)
	}
	if len(fake.written) != 3 || st.Records != 3 || st.Skipped != 1 {
		t.Fatalf("written %d records, want 3 (stats %+v)", len(fake.written), st)
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

// The warning about unpacked records goes to Warnf, once. (cmd's
// TestPutFormatJSONWarnsOnceOfUnpackedRecords checks it on stderr.)
func TestPutFormatJSONWarnsOnceOfUnpackedRecords(t *testing.T) {
	line := `{"shardId":"s","sequenceNumber":"1","partitionKey":"k","data":"x","decompressed":true}` + "\n"
	opts := testOpts()
	opts.Format = FormatJSON
	var warnings []string
	opts.Warnf = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	_, err := runTest(t, &fakePut{}, "\n"+line+line, opts)
	want := "line 2: tail had unpacked this record (--decompress); it is written unpacked, not as it was stored (tail without --decompress copies records byte for byte)"
	if err != nil || len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("err %v, warnings %q", err, warnings)
	}
}
