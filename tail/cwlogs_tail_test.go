package tail

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// cwBatch is a DATA_MESSAGE as a subscription writes it (gzip of compact
// JSON) with one log event per message.
func cwBatch(t testing.TB, messages ...string) []byte {
	t.Helper()
	type event struct {
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"`
		Message   string `json:"message"`
	}
	doc := struct {
		MessageType         string   `json:"messageType"`
		Owner               string   `json:"owner"`
		LogGroup            string   `json:"logGroup"`
		LogStream           string   `json:"logStream"`
		SubscriptionFilters []string `json:"subscriptionFilters"`
		LogEvents           []event  `json:"logEvents"`
	}{MessageType: CWLogsDataMessage, Owner: "123456789012", LogGroup: "/aws/lambda/checkout", LogStream: "2026/11/30/[$LATEST]0f3c",
		SubscriptionFilters: []string{"to-kinesis"}}
	for i, m := range messages {
		doc.LogEvents = append(doc.LogEvents, event{ID: fmt.Sprintf("3937216420139281239014682354234171642961234567890123456%d", i), Timestamp: 1796032800000 + int64(i), Message: m})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return gz(t, string(b))
}

// messages lists what was delivered: a log event's message, or a record's
// data.
func messages(recs []Record) []string {
	var out []string
	for _, r := range recs {
		if r.Log != nil {
			out = append(out, r.Log.Message)
			continue
		}
		out = append(out, string(r.Data))
	}
	return out
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) f(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			out = append(out, x)
		}
	}
	return out
}

// --cwlogs: one record per log event (the fixture's five, and the events
// of the batches a KPL aggregate holds), nothing for a CONTROL_MESSAGE
// (counted in the debug lines), and a record that is not a batch passed
// through unpacked, with one warning for the shard.
func TestCWLogsDelivery(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		_, dataSeq := w.fake.Put("s", "k", cwlogsFixture(t, "data-message"))
		w.fake.Put("s", "k", cwlogsFixture(t, "control-message"))
		w.fake.Put("s", "k", []byte("plain text"))
		w.fake.Put("s", "k", gz(t, `{"not":"a batch"}`))
		_, aggSeq := w.fake.Put("s", "agg", aggregate([]string{"a", "b"}, nil, []UserRecord{
			{PartitionKey: "a", Data: cwBatch(t, "a0", "a1")}, {PartitionKey: "b", Data: cwBatch(t, "b0")}}))
		opts := fastOptions()
		opts.CWLogs = true
		var warns, logs logLines
		opts.Warnf, opts.Logf = warns.f, logs.f
		out := &sink{}
		store := NewMemoryStore(nil)
		res := w.run(store, opts, out)
		recs := out.records()
		want := []string{
			"START RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b Version: $LATEST\n",
			`{"level":"error","msg":"payment declined","orderId":12345678901234567890,"amount":19.99}`,
			"ERROR java.lang.IllegalStateException: café closed\n\tat Checkout.pay(Checkout.java:42)",
			`{"level":"info","msg":"retrying"}`,
			"END RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b\n",
			"plain text", `{"not":"a batch"}`, "a0", "a1", "b0",
		}
		if got := messages(recs); !slices.Equal(got, want) {
			t.Fatalf("delivered\n%q\nwant\n%q", got, want)
		}
		if res.Records != int64(len(want)) {
			t.Fatalf("%d records counted, want %d", res.Records, len(want))
		}
		for i := range 5 {
			r := recs[i]
			if r.SequenceNumber != dataSeq || r.Log.Index != int64(i) || r.Log.Last != (i == 4) || r.Data != nil || r.Log.LogGroup != "/aws/lambda/checkout" {
				t.Fatalf("event %d: %+v %+v", i, r, r.Log)
			}
		}
		if r := recs[6]; r.Log != nil || !r.Decompressed {
			t.Fatalf("the gzip record that is not a batch: %+v, want it unpacked", r)
		}
		if r := recs[8]; r.SequenceNumber != aggSeq || !r.Aggregated || r.SubSequence != 0 || r.Log.Index != 1 || !r.Log.Last || r.PartitionKey != "a" {
			t.Fatalf("event a1: %+v %+v", r, r.Log)
		}
		if got := warns.matching("is not a CloudWatch Logs batch"); len(got) != 1 || !strings.Contains(got[0], "shard shardId-000000000000: record ") || !strings.Contains(got[0], "not gzip data") {
			t.Fatalf("warnings %q, want one for the shard (the first such record)", warns.lines)
		}
		if got := logs.matching("CONTROL_MESSAGE"); len(got) != 1 || !strings.Contains(got[0], "1 on this shard so far") {
			t.Fatalf("debug lines about CONTROL_MESSAGE: %q", got)
		}
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: aggSeq, SubSequence: 1, Aggregated: true}) {
			t.Fatalf("checkpoint %v: a batch written out to its end checkpoints as its record", got)
		}
	})
}

// Resume inside a batch: --max-records stops after log event 3 (index 2)
// of a batch; the checkpoint names the event, and the next run starts at
// event 4. Inside a KPL aggregate of batches too, and at a batch's last
// event the checkpoint is the record's own.
func TestCWLogsResumeInsideBatch(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		_, s1 := w.fake.Put("s", "k", cwBatch(t, "e0", "e1", "e2", "e3", "e4"))
		_, s2 := w.fake.Put("s", "agg", aggregate([]string{"a", "b"}, nil, []UserRecord{
			{PartitionKey: "a", Data: cwBatch(t, "a0", "a1", "a2")}, {PartitionKey: "b", Data: cwBatch(t, "b0", "b1")}}))
		_, s3 := w.fake.Put("s", "k", []byte("after"))
		store := NewMemoryStore(nil)
		type step struct {
			printed []string
			saved   Position
		}
		want := []step{
			{[]string{"e0", "e1", "e2"}, Position{SequenceNumber: s1, InBatch: true, LogEventIndex: 2}},
			{[]string{"e3", "e4", "a0"}, Position{SequenceNumber: s2, Aggregated: true, SubSequence: 0, InBatch: true, LogEventIndex: 0}},
			{[]string{"a1", "a2", "b0"}, Position{SequenceNumber: s2, Aggregated: true, SubSequence: 1, InBatch: true, LogEventIndex: 0}},
			{[]string{"b1", "after"}, Position{SequenceNumber: s3}},
		}
		for i, st := range want {
			opts := fastOptions()
			opts.CWLogs = true
			opts.MaxRecords = 3
			out := &sink{}
			w.run(store, opts, out)
			got := step{messages(out.records()), store.Saved()["shardId-000000000000"]}
			if !slices.Equal(got.printed, st.printed) || got.saved != st.saved {
				t.Fatalf("run %d: printed %v, checkpoint %v; want %v, %v", i, got.printed, got.saved, st.printed, st.saved)
			}
		}

		// Stopped at a batch's last event: the checkpoint is the record's, and
		// the resume starts after it.
		store = NewMemoryStore(nil)
		opts := fastOptions()
		opts.CWLogs, opts.MaxRecords = true, 5
		w.run(store, opts, &sink{})
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: s1}) {
			t.Fatalf("checkpoint after a whole batch: %v", got)
		}
	})
}

// A checkpoint inside a batch read by a run without --cwlogs (or of a
// record that is not a batch): the record is delivered whole again, as it
// was not delivered whole; the records before it are not.
func TestInBatchResumeWithoutCWLogs(t *testing.T) {
	w := newWorld(t, 1)
	_, s0 := w.fake.Put("s", "k", []byte("before"))
	_, s1 := w.fake.Put("s", "k", cwBatch(t, "e0", "e1", "e2"))
	w.fake.Put("s", "k", []byte("after"))
	_ = s0
	store := NewMemoryStore(map[string]Position{"shardId-000000000000": {SequenceNumber: s1, InBatch: true, LogEventIndex: 0}})
	opts := fastOptions()
	opts.Decompress = true
	out := &sink{}
	runTail(t, w.fake, store, opts, out)
	recs := out.records()
	if len(recs) != 2 || recs[0].SequenceNumber != s1 || !recs[0].Decompressed || !strings.Contains(string(recs[0].Data), `"e2"`) || string(recs[1].Data) != "after" {
		t.Fatalf("delivered %q", messages(recs))
	}
}

// A filter that drops log events moves the checkpoint past them, inside
// the batch.
func TestCWLogsSelectInsideBatch(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		_, s1 := w.fake.Put("s", "k", cwBatch(t, "ERROR a", "ok b", "ERROR c", "ok d", "ok e"))
		store := NewMemoryStore(nil)
		opts := fastOptions()
		opts.CWLogs = true
		opts.IdleExit = 0
		opts.MaxRecords = 1
		opts.Select = func(_ context.Context, batch []Record) ([]Record, int) {
			var out []Record
			for _, r := range batch {
				if strings.HasPrefix(r.Log.Message, "ERROR") {
					out = append(out, r)
				}
			}
			return out, len(batch)
		}
		out := &sink{}
		w.run(store, opts, out)
		if got := messages(out.records()); !slices.Equal(got, []string{"ERROR a"}) {
			t.Fatalf("printed %v", got)
		}
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: s1, InBatch: true, LogEventIndex: 0}) {
			t.Fatalf("checkpoint %v after a --max-records stop", got)
		}
		opts.MaxRecords = 0
		opts.IdleExit = fastOptions().IdleExit
		out = &sink{}
		w.run(store, opts, out)
		if got := messages(out.records()); !slices.Equal(got, []string{"ERROR c"}) {
			t.Fatalf("printed %v", got)
		}
		// The dropped "ok e" was read: the batch is done.
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: s1}) {
			t.Fatalf("checkpoint %v, want past the whole batch", got)
		}
	})
}

func TestResumeSkipAt(t *testing.T) {
	for _, tt := range []struct {
		skip      resumeSkip
		atSkip    bool
		sub       int64
		skipped   bool
		afterEvnt int64
	}{
		{resumeSkip{seq: "5", sub: 2}, false, 0, false, -1},
		{resumeSkip{seq: "5", sub: 2}, true, 1, true, 0},
		{resumeSkip{seq: "5", sub: 2}, true, 2, true, 0},
		{resumeSkip{seq: "5", sub: 2}, true, 3, false, -1},
		{resumeSkip{seq: "5", sub: 2, inBatch: true, event: 4}, true, 1, true, 0},
		{resumeSkip{seq: "5", sub: 2, inBatch: true, event: 4}, true, 2, false, 4},
		{resumeSkip{seq: "5", sub: 2, inBatch: true, event: 4}, true, 3, false, -1},
		{resumeSkip{seq: "5", sub: 0, inBatch: true, event: 0}, true, 0, false, 0},
	} {
		skipped, after := tt.skip.at(tt.atSkip, tt.sub)
		if skipped != tt.skipped || (!skipped && after != tt.afterEvnt) {
			t.Errorf("%+v.at(%v, %d) = %v, %d; want %v, %d", tt.skip, tt.atSkip, tt.sub, skipped, after, tt.skipped, tt.afterEvnt)
		}
	}
}
