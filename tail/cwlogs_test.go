package tail

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// cwlogsFixture reads testdata/cwlogs/NAME.json.gz, the data of a record as
// a subscription writes it, and checks it is the gzip of NAME.json beside it.
func cwlogsFixture(t testing.TB, name string) []byte {
	t.Helper()
	dir := filepath.Join("testdata", "cwlogs")
	data, err := os.ReadFile(filepath.Join(dir, name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	plain, ok := gunzip(data)
	if !ok || string(plain) != strings.TrimSuffix(string(src), "\n") {
		t.Fatalf("%s.json.gz is not the gzip of %s.json", name, name)
	}
	return data
}

func TestDecodeCWLogsDataMessage(t *testing.T) {
	got := DecodeCWLogs(cwlogsFixture(t, "data-message"))
	if got.Kind != CWLogsData || got.Data != nil || got.Decompressed || got.Reason != "" {
		t.Fatalf("kind %d, data %q, decompressed %v, reason %q", got.Kind, got.Data, got.Decompressed, got.Reason)
	}
	batch := LogEvent{Owner: "123456789012", LogGroup: "/aws/lambda/checkout", LogStream: "2026/11/30/[$LATEST]0f3c2a9d8e7b4c1a9f6e5d4c3b2a1908",
		SubscriptionFilters: []string{"checkout-to-kinesis"}}
	want := []struct {
		id      string
		ts      int64
		message string
	}{
		{"39372164201392812390146823542341716429612345678901234560", 1796032800123, "START RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b Version: $LATEST\n"},
		{"39372164201392812390146823542341716429612345678901234561", 1796032800125, `{"level":"error","msg":"payment declined","orderId":12345678901234567890,"amount":19.99}`},
		{"39372164201392812390146823542341716429612345678901234562", 1796032800130, "ERROR java.lang.IllegalStateException: café closed\n\tat Checkout.pay(Checkout.java:42)"},
		{"39372164201392812390146823542341716429612345678901234563", 1796032800131, `{"level":"info","msg":"retrying"}`},
		{"39372164201392812390146823542341716429612345678901234564", 1796032800140, "END RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b\n"},
	}
	if len(got.Events) != len(want) {
		t.Fatalf("%d events, want %d", len(got.Events), len(want))
	}
	for i, w := range want {
		e := batch
		e.Index, e.Last, e.ID, e.Timestamp, e.Message = int64(i), i == len(want)-1, w.id, w.ts, w.message
		if !reflect.DeepEqual(got.Events[i], e) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got.Events[i], e)
		}
	}
	if s := got.Events[0].Time().UTC().Format("2006-01-02T15:04:05.000Z"); s != "2026-11-30T10:00:00.123Z" {
		t.Errorf("time of event 0 = %s", s)
	}
}

func TestDecodeCWLogsControlMessage(t *testing.T) {
	got := DecodeCWLogs(cwlogsFixture(t, "control-message"))
	if !reflect.DeepEqual(got, CWLogs{Kind: CWLogsControl}) {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodeCWLogsNotABatch(t *testing.T) {
	bomb := gz(t, strings.Repeat("\x00", maxDecompressed+1))
	truncated := cwlogsFixture(t, "data-message")
	truncated = truncated[:len(truncated)-10]
	tests := []struct {
		name       string
		data       []byte
		unpacked   string // "" with decompressed false: the data as it came
		reasonHint string
	}{
		{"plain text", []byte("hello"), "", "not gzip"},
		{"plain JSON batch, not gzip", []byte(`{"messageType":"DATA_MESSAGE","logEvents":[]}`), "", "not gzip"},
		{"corrupt gzip", truncated, "", "not gzip"},
		{"gzip bomb over the bound", bomb, "", "not gzip"},
		{"gzip text", gz(t, "just a line"), "just a line", "not a CloudWatch Logs batch"},
		{"gzip JSON of another shape", gz(t, `{"level":"error"}`), `{"level":"error"}`, "without a messageType"},
		{"gzip JSON array", gz(t, `[1,2]`), `[1,2]`, "not a CloudWatch Logs batch"},
		{"unknown message type", gz(t, `{"messageType":"OTHER","logEvents":[]}`), `{"messageType":"OTHER","logEvents":[]}`, `"OTHER"`},
		{"messageType not a string", gz(t, `{"messageType":1}`), `{"messageType":1}`, "not a CloudWatch Logs batch"},
		{"data message without events", gz(t, `{"messageType":"DATA_MESSAGE"}`), `{"messageType":"DATA_MESSAGE"}`, "without logEvents"},
		{"event without message", gz(t, `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1}]}`), `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1}]}`, "log event 0 lacks"},
		{"event message null", gz(t, `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1,"message":null}]}`), `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1,"message":null}]}`, "log event 0 lacks"},
		{"fractional timestamp", gz(t, `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1.5,"message":"m"}]}`), `{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1.5,"message":"m"}]}`, "not whole milliseconds"},
		{"two JSON values", gz(t, `{"messageType":"CONTROL_MESSAGE"} {}`), `{"messageType":"CONTROL_MESSAGE"} {}`, "more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeCWLogs(tt.data)
			if got.Kind != NotCWLogs || got.Events != nil {
				t.Fatalf("kind %d with %d events, want NotCWLogs", got.Kind, len(got.Events))
			}
			want, decompressed := tt.data, false
			if tt.unpacked != "" {
				want, decompressed = []byte(tt.unpacked), true
			}
			if !bytes.Equal(got.Data, want) || got.Decompressed != decompressed {
				t.Fatalf("data %.80q (decompressed %v), want %.80q (%v)", got.Data, got.Decompressed, want, decompressed)
			}
			if !strings.Contains(got.Reason, tt.reasonHint) {
				t.Fatalf("reason %q does not say %q", got.Reason, tt.reasonHint)
			}
		})
	}
}

func TestDecodeCWLogsEdges(t *testing.T) {
	// What the service may add is ignored; an empty batch has no events.
	got := DecodeCWLogs(gz(t, `{"messageType":"DATA_MESSAGE","policyLevel":"ACCOUNT_LEVEL_POLICY","owner":"o","logGroup":"g","logStream":"s","subscriptionFilters":["f"],"logEvents":[{"id":"7","timestamp":-1,"message":"","extra":true}]}`))
	want := CWLogs{Kind: CWLogsData, Events: []LogEvent{{Index: 0, Last: true, Owner: "o", LogGroup: "g", LogStream: "s", SubscriptionFilters: []string{"f"}, ID: "7", Timestamp: -1}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	got = DecodeCWLogs(gz(t, `{"messageType":"DATA_MESSAGE","logEvents":[]}`))
	if got.Kind != CWLogsData || len(got.Events) != 0 {
		t.Fatalf("empty batch: %+v", got)
	}
}

func FuzzDecodeCWLogs(f *testing.F) {
	f.Add([]byte(`{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":2,"message":"m"}]}`), false)
	f.Add([]byte(`{"messageType":"CONTROL_MESSAGE"}`), false)
	f.Add([]byte("\x1f\x8b"), true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		in := data
		if !raw {
			in = gz(t, string(data))
		}
		got := DecodeCWLogs(in)
		switch got.Kind {
		case CWLogsData:
			for i, e := range got.Events {
				if e.Index != int64(i) || e.Last != (i == len(got.Events)-1) {
					t.Fatalf("event %d: index %d, last %v", i, e.Index, e.Last)
				}
			}
			if got.Data != nil {
				t.Fatal("data with events")
			}
		case CWLogsControl:
			if got.Events != nil || got.Data != nil {
				t.Fatal("a control message delivers nothing")
			}
		case NotCWLogs:
			if got.Events != nil || got.Reason == "" || (!got.Decompressed && !bytes.Equal(got.Data, in)) {
				t.Fatalf("pass-through %+v", got)
			}
		}
	})
}
