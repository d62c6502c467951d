package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// logEventLines are the events of tail's CloudWatch Logs fixture (a batch
// as a subscription writes it), once in a plain record and once in a KPL
// user record, plus an event written to attack a terminal.
func logEventLines(t *testing.T) (recs []tail.Record, evs []tail.LogEvent) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "tail", "testdata", "cwlogs", "data-message.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	batch := tail.DecodeCWLogs(data)
	if batch.Kind != tail.CWLogsData || len(batch.Events) != 5 {
		t.Fatalf("fixture decoded as kind %d with %d events", batch.Kind, len(batch.Events))
	}
	plain := tail.Record{ShardID: "shardId-000000000002", SequenceNumber: "49590338271490256608559692538361571095921575989136588898",
		PartitionKey: "8f5e3c1a", ArrivalTime: at, Data: data}
	agg := plain
	agg.SequenceNumber, agg.Aggregated, agg.SubSequence = "49590338271490256608559692538361571095921575989136588899", true, 3
	for _, r := range []tail.Record{plain, agg} {
		for _, ev := range batch.Events {
			recs, evs = append(recs, r), append(evs, ev)
		}
	}
	hostile := tail.LogEvent{Index: 0, Last: true, Owner: "123456789012", LogGroup: "g\x1b[31m", LogStream: "s\x07",
		ID: "1\"2", Timestamp: 1796032800999, Message: "\x1b[2Jcleared\r\n"}
	return append(recs, plain), append(evs, hostile)
}

func TestLogEventGolden(t *testing.T) {
	recs, evs := logEventLines(t)
	for _, f := range []struct {
		file   string
		format RecordFormat
		color  bool
	}{
		{"events.jsonl", RecordJSON, false},
		{"events.txt", RecordText, false},
		{"events-color.ansi", RecordText, true},
		{"events.raw", RecordRaw, false},
	} {
		t.Run(f.file, func(t *testing.T) {
			var b []byte
			for i := range recs {
				b = AppendLogEvent(b, f.format, NewTheme(f.color), time.UTC, &recs[i], &evs[i])
			}
			golden.Check(t, filepath.Join("testdata", "cwlogs", f.file), b)
			// On a terminal, no control character of the event gets through.
			if f.format == RecordText && (strings.ContainsAny(string(b), "\x07\r") || strings.Contains(string(b), "\x1b[2J") || (!f.color && strings.Contains(string(b), "\x1b"))) {
				t.Fatalf("a control character of the log event reached the terminal: %q", b)
			}
		})
	}
}

// The JSON line holds exactly the event, and nothing can be injected.
func TestLogEventJSONFields(t *testing.T) {
	recs, evs := logEventLines(t)
	for i := range recs {
		line := AppendLogEventJSON(nil, &recs[i], &evs[i])
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		want := map[string]any{"shardId": recs[i].ShardID, "sequenceNumber": recs[i].SequenceNumber, "logEventIndex": float64(evs[i].Index),
			"logGroup": evs[i].LogGroup, "logStream": evs[i].LogStream, "owner": evs[i].Owner, "id": evs[i].ID,
			"timestamp": evs[i].Time().UTC().Format("2006-01-02T15:04:05.000Z"), "message": evs[i].Message}
		if recs[i].Aggregated {
			want["subSequenceNumber"] = float64(recs[i].SubSequence)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("line %d:\n got %v\nwant %v", i, m, want)
		}
	}
}

// The objects jq sees are the JSON lines, value for value.
func TestObjectsAreTheJSONLines(t *testing.T) {
	recs, evs := logEventLines(t)
	for i := range recs {
		checkSameJSON(t, AppendLogEventJSON(nil, &recs[i], &evs[i]), LogEventObject(&recs[i], &evs[i]))
	}
	for _, r := range sampleRecords() {
		checkSameJSON(t, AppendRecordJSON(nil, &r), RecordObject(&r))
	}
}

func checkSameJSON(t *testing.T, line []byte, obj map[string]any) {
	t.Helper()
	var want any
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("object differs from its line:\n got %v\nline %s", got, line)
	}
}

// sampleRecords has every optional field of a record's line, each alone.
func sampleRecords() []tail.Record {
	base := tail.Record{ShardID: "shardId-000000000001", SequenceNumber: "4959", PartitionKey: "k\"ey", ArrivalTime: at, Data: []byte(`{"level":"error"}`)}
	out := []tail.Record{base}
	add := func(f func(r *tail.Record)) {
		r := base
		f(&r)
		out = append(out, r)
	}
	add(func(r *tail.Record) { r.Aggregated, r.SubSequence = true, 7 })
	add(func(r *tail.Record) { r.ExplicitHashKey = "170141183460469231731687303715884105728" })
	add(func(r *tail.Record) { r.Data = []byte{0xff, 0xfe, 0} })
	add(func(r *tail.Record) { r.Data = []byte("line\n\u2028\x01é") })
	add(func(r *tail.Record) { r.Decompressed = true })
	add(func(r *tail.Record) { r.OutsideShard = true })
	add(func(r *tail.Record) { r.ArrivalTime = at.In(time.FixedZone("x", -7*3600)) })
	add(func(r *tail.Record) { r.Data = nil })
	return out
}

// RecordWriter writes a delivered log event (Record.Log, no Data) as its
// AppendLogEvent line in every format, a record with Out as Out, and the
// others as records, in batch order; a message bigger than the output
// buffer included.
func TestRecordWriterLogEventsAndOut(t *testing.T) {
	recs, evs := logEventLines(t)
	big := evs[0]
	big.Message = strings.Repeat("é", 300<<10)
	batch := []tail.Record{{ShardID: "shardId-000000000001", SequenceNumber: "7", PartitionKey: "k", ArrivalTime: at, Data: []byte("plain")}}
	for i := range recs {
		r := recs[i]
		r.Data, r.Log = nil, &evs[i]
		batch = append(batch, r)
	}
	withBig := recs[0]
	withBig.Data, withBig.Log = nil, &big
	batch = append(batch, withBig)
	batch = append(batch, tail.Record{ShardID: "shardId-000000000001", SequenceNumber: "8", Data: []byte("ignored"), Out: []byte("{\"a\":1}\n\"b\"\n")})
	for _, format := range []RecordFormat{RecordJSON, RecordText, RecordRaw} {
		var got bytes.Buffer
		if err := NewRecordWriter(&got, format, NewTheme(false)).Write(batch); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := NewRecordWriter(&want, format, NewTheme(false)).Write(batch[:1]); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for i := range recs {
			b = AppendLogEvent(b, format, NewTheme(false), time.Local, &recs[i], &evs[i])
		}
		b = AppendLogEvent(b, format, NewTheme(false), time.Local, &recs[0], &big)
		want.Write(b)
		want.WriteString("{\"a\":1}\n\"b\"\n")
		if got.String() != want.String() {
			t.Errorf("format %d:\n got %.400q\nwant %.400q", format, got.String(), want.String())
		}
	}
}
