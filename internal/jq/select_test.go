package jq

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// selected lists what a Select kept: each record's data, with its Out
// after "=>" when it has one.
func selected(out []tail.Record) []string {
	var got []string
	for _, r := range out {
		s := string(r.Data)
		if r.Log != nil {
			s = r.Log.Message
		}
		if r.Out != nil {
			s += " => " + strings.TrimSuffix(strings.ReplaceAll(string(r.Out), "\n", " | "), " | ")
		}
		got = append(got, s)
	}
	return got
}

func batchOf(data ...string) []tail.Record {
	var b []tail.Record
	for i, d := range data {
		r := rec(d)
		r.SequenceNumber = "49" + string(rune('0'+i))
		b = append(b, *r)
	}
	return b
}

// Filters and transforms over JSON and non-JSON payloads, together and
// alone, and a failing expression: which records come out, with what Out,
// and that every record is decided.
func TestSelect(t *testing.T) {
	batch := batchOf(`{"level":"error","msg":"declined","n":1}`, `plain text with error in it`, `{"level":"info","msg":"ok","n":2}`,
		`{"level":"error","msg":"timeout","n":3}`, "\xff\xfe")
	for _, tt := range []struct {
		name, filter, jq string
		raw              bool
		want             []string
		warned           int
	}{
		{name: "filter on the payload", filter: `.payload.level == "error"`,
			want: []string{`{"level":"error","msg":"declined","n":1}`, `{"level":"error","msg":"timeout","n":3}`}},
		{name: "filter on the data of any payload", filter: `.data | test("error")`,
			want: []string{`{"level":"error","msg":"declined","n":1}`, `plain text with error in it`, `{"level":"error","msg":"timeout","n":3}`}},
		{name: "filter on what is not JSON", filter: `has("payload") | not`,
			want: []string{`plain text with error in it`, "\xff\xfe"}},
		{name: "binary data is base64", filter: `.dataEncoding == "base64" and .data == "//4="`, want: []string{"\xff\xfe"}},
		{name: "transform", jq: `.payload.msg // empty`,
			want: []string{`{"level":"error","msg":"declined","n":1} => "declined"`, `{"level":"info","msg":"ok","n":2} => "ok"`, `{"level":"error","msg":"timeout","n":3} => "timeout"`}},
		{name: "transform, raw", jq: `.payload.msg // empty`, raw: true,
			want: []string{`{"level":"error","msg":"declined","n":1} => declined`, `{"level":"info","msg":"ok","n":2} => ok`, `{"level":"error","msg":"timeout","n":3} => timeout`}},
		{name: "filter then transform", filter: `.payload.level == "error"`, jq: `.payload.n, .payload.msg`,
			want: []string{`{"level":"error","msg":"declined","n":1} => 1 | "declined"`, `{"level":"error","msg":"timeout","n":3} => 3 | "timeout"`}},
		{name: "a failing filter skips the records it fails on", filter: `.payload.n * 2 > 2`, warned: 1,
			want: []string{`{"level":"info","msg":"ok","n":2}`, `{"level":"error","msg":"timeout","n":3}`}},
		{name: "a failing transform skips the records it fails on", jq: `.payload.msg | ascii_upcase`, warned: 1,
			want: []string{`{"level":"error","msg":"declined","n":1} => "DECLINED"`, `{"level":"info","msg":"ok","n":2} => "OK"`, `{"level":"error","msg":"timeout","n":3} => "TIMEOUT"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w warnings
			var f *Filter
			var tr *Transform
			if tt.filter != "" {
				f = mustCompile(t, "--filter", tt.filter).Filter(w.add)
			}
			if tt.jq != "" {
				tr = mustCompile(t, "--jq", tt.jq).Transform(tt.raw, w.add)
			}
			in := append([]tail.Record(nil), batch...)
			out, decided := Select(f, tr)(context.Background(), in)
			if got := selected(out); !reflect.DeepEqual(got, tt.want) || decided != len(batch) {
				t.Fatalf("kept %q (decided %d)\nwant %q", got, decided, tt.want)
			}
			if len(w) != tt.warned {
				t.Fatalf("warnings %q, want %d", w, tt.warned)
			}
			// The two records without a payload fail alike: one warning.
			if skipped := int64(2 * tt.warned); (f != nil && f.Skipped() != skipped) || (tr != nil && tr.Skipped() != skipped) {
				t.Fatalf("skipped %v %v, want %d", f, tr, skipped)
			}
			if !reflect.DeepEqual(in, batch) {
				t.Fatal("Select changed its batch")
			}
		})
	}
}

// --cwlogs: a log event's input is its object; Out holds its lines.
func TestSelectLogEvents(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tail", "testdata", "cwlogs", "data-message.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cw := tail.DecodeCWLogs(data)
	var batch []tail.Record
	for i := range cw.Events {
		r := *rec("")
		r.Data, r.Log = nil, &cw.Events[i]
		batch = append(batch, r)
	}
	f := mustCompile(t, "--filter", `.message | test("ERROR|error")`).Filter(nil)
	tr := mustCompile(t, "--jq", `"\(.logEventIndex) \(.payload.msg // .message)"`).Transform(true, nil)
	out, decided := Select(f, tr)(context.Background(), batch)
	want := []string{cw.Events[1].Message + " => 1 payment declined", cw.Events[2].Message + " => 2 ERROR java.lang.IllegalStateException: café closed | \tat Checkout.pay(Checkout.java:42)"}
	if got := selected(out); !reflect.DeepEqual(got, want) || decided != 5 {
		t.Fatalf("kept %q (decided %d)\nwant %q", got, decided, want)
	}
}

// stopAfter is a context that ends by itself once it has been asked
// whether it ended n times (gojq asks at every step of an evaluation): far
// more than a few small records take, so it ends inside an evaluation that
// does not end.
type stopAfter struct {
	context.Context
	n, limit atomic.Int64
	done     chan struct{}
}

func newStopAfter(limit int64) *stopAfter {
	c := &stopAfter{Context: context.Background(), done: make(chan struct{})}
	c.limit.Store(limit)
	return c
}

func (c *stopAfter) Done() <-chan struct{} {
	if c.n.Add(1) == c.limit.Load() {
		close(c.done)
	}
	return c.done
}

func (c *stopAfter) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// The context ending stops a Select at the record it was evaluating: the
// records before it are decided, that one and the rest are not.
func TestSelectInterrupted(t *testing.T) {
	batch := batchOf(`{"n":1}`, `{"n":2}`, `{"stop":true}`, `{"n":4}`)
	f := mustCompile(t, "--filter", `if .payload.stop then last(range(infinite)) else true end`).Filter(nil)
	tr := mustCompile(t, "--jq", `.payload.n`).Transform(false, nil)
	out, decided := Select(f, tr)(newStopAfter(100000), batch)
	if got := selected(out); decided != 2 || !reflect.DeepEqual(got, []string{`{"n":1} => 1`, `{"n":2} => 2`}) {
		t.Fatalf("kept %q, decided %d; want the first two", got, decided)
	}
	if f.Skipped() != 0 {
		t.Fatalf("the interrupted record counted as failing (%d)", f.Skipped())
	}
}
