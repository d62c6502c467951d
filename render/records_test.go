package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

var at = time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)

func TestRecordJSON(t *testing.T) {
	tests := []struct {
		name string
		rec  tail.Record
		want string
	}{
		{"plain", tail.Record{ShardID: "shardId-000000000001", SequenceNumber: "4959", PartitionKey: "k", ArrivalTime: at, Data: []byte("hello")},
			`{"shardId":"shardId-000000000001","sequenceNumber":"4959","partitionKey":"k","arrivalTime":"2026-11-30T10:00:00.123Z","data":"hello"}`},
		{"escapes", tail.Record{ShardID: "s", SequenceNumber: "1", PartitionKey: "a\"b", ArrivalTime: at, Data: []byte("l1\nl2\t\"q\"\\\x01\u2028é")},
			`{"shardId":"s","sequenceNumber":"1","partitionKey":"a\"b","arrivalTime":"2026-11-30T10:00:00.123Z","data":"l1\nl2\t\"q\"\\\u0001\u2028é"}`},
		{"binary", tail.Record{ShardID: "s", SequenceNumber: "1", PartitionKey: "k", ArrivalTime: at, Data: []byte{0xff, 0x00, 0x1f}},
			`{"shardId":"s","sequenceNumber":"1","partitionKey":"k","arrivalTime":"2026-11-30T10:00:00.123Z","data":"/wAf","dataEncoding":"base64"}`},
		{"aggregated", tail.Record{ShardID: "s", SequenceNumber: "7", Aggregated: true, SubSequence: 3, PartitionKey: "u", ExplicitHashKey: "42", ArrivalTime: at, Data: []byte("{}"), OutsideShard: true},
			`{"shardId":"s","sequenceNumber":"7","subSequenceNumber":3,"partitionKey":"u","explicitHashKey":"42","arrivalTime":"2026-11-30T10:00:00.123Z","data":"{}","outsideShard":true}`},
		{"explicit hash key from a hostile aggregate", tail.Record{ShardID: "s", SequenceNumber: "7", Aggregated: true, PartitionKey: "u", ExplicitHashKey: `1","injected":"x`, ArrivalTime: at, Data: []byte("d")},
			`{"shardId":"s","sequenceNumber":"7","subSequenceNumber":0,"partitionKey":"u","explicitHashKey":"1\",\"injected\":\"x","arrivalTime":"2026-11-30T10:00:00.123Z","data":"d"}`},
		{"decompressed, zone", tail.Record{ShardID: "s", SequenceNumber: "1", PartitionKey: "k", ArrivalTime: at.In(time.FixedZone("x", 3600)), Data: []byte("x"), Decompressed: true},
			`{"shardId":"s","sequenceNumber":"1","partitionKey":"k","arrivalTime":"2026-11-30T10:00:00.123Z","data":"x","decompressed":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendRecordJSON(nil, &tt.rec))
			if got != tt.want+"\n" {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			// And it is JSON that decodes back to the payload.
			var m map[string]any
			if err := json.Unmarshal([]byte(got), &m); err != nil {
				t.Fatal(err)
			}
			data := m["data"].(string)
			if m["dataEncoding"] == "base64" {
				b, _ := base64.StdEncoding.DecodeString(data)
				data = string(b)
			}
			if data != string(tt.rec.Data) {
				t.Fatalf("data round trip: %q", data)
			}
		})
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add([]byte("hello"), "key")
	f.Add([]byte{0xe2, 0x80, 0xa8, '"', '\\', 0}, "k\x00")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		if !utf8Valid(key) {
			return
		}
		// The key doubles as an explicit hash key: both come from the
		// writer of an aggregate.
		r := tail.Record{ShardID: "s", SequenceNumber: "1", PartitionKey: key, ExplicitHashKey: key, ArrivalTime: at, Data: data}
		var m map[string]any
		line := AppendRecordJSON(nil, &r)
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("invalid JSON for %q: %v", data, err)
		}
		if m["partitionKey"] != key || (key != "" && m["explicitHashKey"] != key) {
			t.Fatalf("key %q came back as %q / %q", key, m["partitionKey"], m["explicitHashKey"])
		}
		// No field but the format's: nothing injected.
		want := 5 + min(len(key), 1)
		if _, ok := m["dataEncoding"]; ok {
			want++
		}
		if len(m) != want {
			t.Fatalf("%d fields in %s", len(m), line)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }

func TestRecordWriterFormats(t *testing.T) {
	recs := []tail.Record{{ShardID: "shardId-000000000002", SequenceNumber: "1", PartitionKey: "k", ArrivalTime: at, Data: []byte("a\nb")},
		{ShardID: "shardId-000000000002", SequenceNumber: "2", PartitionKey: "k", ArrivalTime: at, Data: []byte{0xff}}}
	var raw, text bytes.Buffer
	if err := NewRecordWriter(&raw, RecordRaw, NewTheme(false)).Write(recs); err != nil {
		t.Fatal(err)
	}
	if raw.String() != "a\nb\n\xff\n" {
		t.Fatalf("raw = %q", raw.String())
	}
	if err := NewRecordWriter(&text, RecordText, NewTheme(false)).Write(recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "[2] k a\\nb") || !strings.HasSuffix(lines[1], "[2] k base64:/w==") {
		t.Fatalf("text = %q", text.String())
	}
	// The key is the writer's too: no escape sequence reaches the terminal.
	text.Reset()
	hostile := []tail.Record{{ShardID: "shardId-000000000002", SequenceNumber: "3", PartitionKey: "k\x1b[31mRED\x1b]0;title\x07", ArrivalTime: at, Data: []byte("x")}}
	if err := NewRecordWriter(&text, RecordText, NewTheme(false)).Write(hostile); err != nil {
		t.Fatal(err)
	}
	if got := text.String(); strings.ContainsAny(got, "\x1b\x07") || !strings.HasSuffix(got, `[2] k\x1b[31mRED\x1b]0;title\x07 x`+"\n") {
		t.Fatalf("text = %q", got)
	}
	if _, err := ParseRecordFormat("yaml"); err == nil {
		t.Fatal("yaml accepted")
	}
}
