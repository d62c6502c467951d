package jq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

var at = time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)

func rec(data string) *tail.Record {
	return &tail.Record{ShardID: "shardId-000000000001", SequenceNumber: "4959", PartitionKey: "k", ArrivalTime: at, Data: []byte(data)}
}

func mustCompile(t *testing.T, flag, expr string) *Program {
	t.Helper()
	p, err := Compile(flag, expr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// warnings collects what a Filter or Transform warns.
type warnings []string

func (w *warnings) add(s string) { *w = append(*w, s) }

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expr         string
		line, column int
		want         string
	}{
		{`.payload.level = = "error"`, 1, 18, `--filter: unexpected token "=" at column 18 in the jq expression '.payload.level = = "error"'`},
		{`.payload.level ==`, 1, 18, `--filter: unexpected end at column 18 in the jq expression '.payload.level =='`},
		{`"é" | )`, 1, 7, `--filter: unexpected token ")" at column 7 in the jq expression '"é" | )'`},
		{".a |\n  .b )", 2, 6, `--filter: unexpected token ")" at line 2, column 6 in the jq expression '.a |\n  .b )'`},
		{`{a:}`, 1, 4, `--filter: unexpected token "}" at column 4 in the jq expression '{a:}'`},
		{`.a | "\x"`, 1, 7, `--filter: invalid escape sequence "\x" in string literal at column 7 in the jq expression '.a | "\x"'`},
		// Compile errors have no position.
		{`.a | foo`, 0, 0, `--filter: function not defined: foo/0 in the jq expression '.a | foo'`},
		{`$x`, 0, 0, `--filter: variable not defined: $x in the jq expression '$x'`},
		{`input`, 0, 0, `--filter: input(s)/0 is not allowed in the jq expression 'input'`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			p, err := Compile("--filter", tt.expr)
			var ee *ExprError
			if p != nil || !errors.As(err, &ee) {
				t.Fatalf("Compile = %v, %v; want an *ExprError", p, err)
			}
			if ee.Line != tt.line || ee.Column != tt.column || err.Error() != tt.want {
				t.Fatalf("line %d column %d: %s\nwant line %d column %d: %s", ee.Line, ee.Column, err, tt.line, tt.column, tt.want)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	tests := []struct {
		data string
		want any // nil: absent
	}{
		{`{"level":"error"}`, map[string]any{"level": "error"}},
		{" [1, 2]\n", []any{jsonNum("1"), jsonNum("2")}},
		{`42`, jsonNum("42")},
		{`"s"`, "s"},
		{`true`, true},
		{`{"a":1} x`, nil},
		{`{}{}`, nil},
		{`{"a":`, nil},
		{`nul`, nil},
		{`hello`, nil},
		{``, nil},
		{"   ", nil},
		{"{\"a\":\"\xff\"}", nil}, // not UTF-8: data is base64 in the line
	}
	for _, tt := range tests {
		in := RecordInput(rec(tt.data))
		got, ok := in["payload"]
		if (tt.want != nil) != ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: payload %#v (present %v), want %#v", tt.data, got, ok, tt.want)
		}
		delete(in, "payload")
		if !reflect.DeepEqual(in, render.RecordObject(rec(tt.data))) {
			t.Errorf("%q: input besides payload is not the record's object", tt.data)
		}
	}
	// null is a payload, present.
	if in := RecordInput(rec("null")); !hasKey(in, "payload") || in["payload"] != nil {
		t.Errorf("null payload: %#v", in)
	}
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func TestFilter(t *testing.T) {
	agg := rec(`{"level":"info"}`)
	agg.Aggregated, agg.SubSequence = true, 3
	binary := rec("\xff\x00")
	tests := []struct {
		name, expr string
		r          *tail.Record
		keep       bool
	}{
		{"match", `.payload.level == "error"`, rec(`{"level":"error","msg":"payment declined"}`), true},
		{"no match", `.payload.level == "error"`, rec(`{"level":"info"}`), false},
		{"not JSON: no payload, no error", `.payload.level == "error"`, rec(`ERROR payment declined`), false},
		{"text search in data", `.data | test("ERROR")`, rec(`ERROR payment declined`), true},
		{"false is false", `.payload`, rec(`false`), false},
		{"null is false", `.payload`, rec(`null`), false},
		{"zero is true", `.payload`, rec(`0`), true},
		{"empty string is true", `.payload`, rec(`""`), true},
		{"empty array is true", `.payload`, rec(`[]`), true},
		{"no output drops", `empty`, rec(`{}`), false},
		{"the first output decides", `false, true`, rec(`{}`), false},
		{"outputs after the first are not computed", `true, error("never")`, rec(`{}`), true},
		{"select keeps its input: truthy", `select(.partitionKey == "k")`, rec(`{}`), true},
		{"an integer beyond 2^53 compares exactly", `.payload.id == 12345678901234567891`, rec(`{"id":12345678901234567891}`), true},
		{"... and differs from its neighbour", `.payload.id == 12345678901234567890`, rec(`{"id":12345678901234567891}`), false},
		{"numbers compare as numbers", `.payload.amount > 19.5`, rec(`{"amount":19.99}`), true},
		{"binary data is base64", `.dataEncoding == "base64" and .data == "/wA="`, binary, true},
		{"KPL sub-sequence", `.subSequenceNumber == 3`, agg, true},
		{"arrival time", `.arrivalTime == "2026-11-30T10:00:00.123Z"`, rec(`x`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w warnings
			f := mustCompile(t, "--filter", tt.expr).Filter(w.add)
			keep, err := f.Keep(context.Background(), RecordInput(tt.r))
			if err != nil || keep != tt.keep {
				t.Fatalf("Keep = %v, %v; want %v", keep, err, tt.keep)
			}
			if len(w) != 0 || f.Skipped() != 0 {
				t.Fatalf("warned %q, skipped %d", w, f.Skipped())
			}
		})
	}
}

// A failing expression skips the record and warns once per distinct
// message, naming the first record it failed on.
func TestFilterErrors(t *testing.T) {
	var w warnings
	f := mustCompile(t, "--filter", `.payload.level | test("err")`).Filter(w.add)
	inputs := []*tail.Record{rec(`{"level":5}`), rec(`{"level":"error"}`), rec(`{"level":5}`), rec(`[1]`), rec(`{"level":5}`)}
	inputs[3].SequenceNumber = "4960"
	var kept []int
	for i, r := range inputs {
		keep, err := f.Keep(context.Background(), RecordInput(r))
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			kept = append(kept, i)
		}
	}
	if !reflect.DeepEqual(kept, []int{1}) || f.Skipped() != 4 {
		t.Fatalf("kept %v, skipped %d; want [1], 4", kept, f.Skipped())
	}
	want := warnings{
		`--filter failed on the record shardId-000000000001 4959 and skipped it: test("err"; null) cannot be applied to: number (5) (shown once; every record it fails on is skipped)`,
		`--filter failed on the record shardId-000000000001 4960 and skipped it: expected an object but got: array ([1]) (shown once; every record it fails on is skipped)`,
	}
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(w, "\n"), strings.Join(want, "\n"))
	}
}

func TestWarningsAreBounded(t *testing.T) {
	var w warnings
	f := mustCompile(t, "--filter", `error("bad \(.payload)")`).Filter(w.add)
	for i := range maxDistinctErrors + 5 {
		if keep, err := f.Keep(context.Background(), RecordInput(rec(fmt.Sprint(i)))); keep || err != nil {
			t.Fatalf("record %d: %v, %v", i, keep, err)
		}
	}
	if len(w) != maxDistinctErrors+1 || f.Skipped() != maxDistinctErrors+5 {
		t.Fatalf("%d warnings, %d skipped", len(w), f.Skipped())
	}
	if last := w[len(w)-1]; last != "--filter failed with 20 different errors; further ones are not shown (the records are skipped)" {
		t.Fatalf("last warning %q", last)
	}
}

func TestTransform(t *testing.T) {
	payload := `{"level":"error","msg":"payment declined","id":12345678901234567891,"amount":19.99,"one":1.0,"items":[1,2,3],"big":1e400}`
	tests := []struct {
		name, expr string
		raw        bool
		data       string
		want       string
		n          int
	}{
		{"a string", `.payload.msg`, false, payload, "\"payment declined\"\n", 1},
		{"a string, raw", `.payload.msg`, true, payload, "payment declined\n", 1},
		{"raw prints other values as JSON", `.payload.items`, true, payload, "[1,2,3]\n", 1},
		{"every output on its line", `.payload.items[]`, false, payload, "1\n2\n3\n", 3},
		{"numbers as written", `.payload.id, .payload.amount, .payload.one, .payload.big`, false, payload, "12345678901234567891\n19.99\n1.0\n1e400\n", 4},
		{"objects with sorted keys", `{msg: .payload.msg, id: .payload.id, at: .arrivalTime}`, false, payload,
			"{\"at\":\"2026-11-30T10:00:00.123Z\",\"id\":12345678901234567891,\"msg\":\"payment declined\"}\n", 1},
		{"no output", `empty`, false, payload, "", 0},
		{"the whole input", `.`, false, `{"b":1}`,
			`{"arrivalTime":"2026-11-30T10:00:00.123Z","data":"{\"b\":1}","partitionKey":"k","payload":{"b":1},"sequenceNumber":"4959","shardId":"shardId-000000000001"}` + "\n", 1},
		{"non-JSON data", `.data`, false, "plain text", "\"plain text\"\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w warnings
			tr := mustCompile(t, "--jq", tt.expr).Transform(tt.raw, w.add)
			out, n, err := tr.Append(context.Background(), []byte("before\n"), RecordInput(rec(tt.data)))
			if err != nil || string(out) != "before\n"+tt.want || n != tt.n || len(w) != 0 {
				t.Fatalf("Append = %q, %d, %v (warnings %q)\nwant %q, %d", out, n, err, w, "before\n"+tt.want, tt.n)
			}
		})
	}
}

// A record that fails part way prints nothing at all, not its first
// outputs; so does one whose output has no end.
func TestTransformErrors(t *testing.T) {
	for _, tt := range []struct{ expr, warning string }{
		{`.payload.items[] | if . == 2 then error("two") else . end`, "error: two"},
		{`repeat(.)`, "more than 16 MiB of output for one record"},
	} {
		var w warnings
		tr := mustCompile(t, "--jq", tt.expr).Transform(false, w.add)
		out, n, err := tr.Append(context.Background(), []byte("before\n"), RecordInput(rec(`{"items":[1,2,3]}`)))
		if err != nil || string(out) != "before\n" || n != 0 || tr.Skipped() != 1 {
			t.Fatalf("%s: Append = %.40q, %d, %v; skipped %d", tt.expr, out, n, err, tr.Skipped())
		}
		if len(w) != 1 || !strings.Contains(w[0], "--jq failed on the record shardId-000000000001 4959 and skipped it: "+tt.warning) {
			t.Fatalf("%s: warnings %q", tt.expr, w)
		}
	}
}

// Stopping during an evaluation is not the record's error: it is
// reported, not warned about, and the record is not decided.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var w warnings
	p := mustCompile(t, "--filter", `last(range(infinite))`)
	if keep, err := p.Filter(w.add).Keep(ctx, RecordInput(rec(`{}`))); keep || !errors.Is(err, context.Canceled) {
		t.Fatalf("Keep = %v, %v", keep, err)
	}
	if out, n, err := p.Transform(false, w.add).Append(ctx, []byte("x"), RecordInput(rec(`{}`))); string(out) != "x" || n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Append = %q, %d, %v", out, n, err)
	}
	if len(w) != 0 {
		t.Fatalf("warned %q", w)
	}
}

// --cwlogs: expressions see the log event's object, with the message's
// JSON as payload.
func TestLogEventInput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tail", "testdata", "cwlogs", "data-message.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	batch := tail.DecodeCWLogs(data)
	r := rec("")
	r.Data = data
	for _, tt := range []struct {
		expr string
		want []int64
	}{
		{`.message | test("ERROR")`, []int64{2}},
		{`.payload.level == "error"`, []int64{1}},
		{`.payload.orderId == 12345678901234567890`, []int64{1}},
		{`has("payload")`, []int64{1, 3}},
		{`.logGroup == "/aws/lambda/checkout" and .logEventIndex >= 3`, []int64{3, 4}},
		{`.timestamp == "2026-11-30T10:00:00.130Z"`, []int64{2}},
	} {
		f := mustCompile(t, "--filter", tt.expr).Filter(nil)
		var got []int64
		for i := range batch.Events {
			ev := &batch.Events[i]
			in := LogEventInput(r, ev)
			if keep, err := f.Keep(context.Background(), in); err != nil {
				t.Fatal(err)
			} else if keep {
				got = append(got, ev.Index)
			}
			delete(in, "payload")
			if !reflect.DeepEqual(in, render.LogEventObject(r, ev)) {
				t.Fatalf("input besides payload is not the event's object")
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: kept events %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func jsonNum(s string) any { return json.Number(s) }
