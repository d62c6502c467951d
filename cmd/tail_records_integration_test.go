package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/kpl"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// `tail --filter`, `--jq` and `--cwlogs`, through the real binary on the
// emulator: what is printed, what goes to stderr, and where the checkpoint
// stands.

// putOneByOne writes the records in order, one call each (one shard: the
// stream keeps them in this order).
func putOneByOne(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream string, recs ...emulator.Rec) {
	t.Helper()
	for _, r := range recs {
		e.Put(t, c, stream, []emulator.Rec{r})
	}
}

// oneShardStream is a new one-shard stream on the emulator (which keeps
// the records of a shard in the order they were put) and the environment
// for running the binary on it. The test runs in parallel.
func oneShardStream(t *testing.T) (*emulator.Emulator, *kinesis.Client, string, []string) {
	t.Helper()
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	return e, c, stream, append(e.Env(), "XDG_STATE_HOME="+t.TempDir())
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// dataOf reads the data field of tail's JSON lines.
func dataOf(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, l := range lines(out) {
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		got = append(got, tl.Data)
	}
	return got
}

func TestTailFilterAndJQ(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	payloads := []string{
		`{"level":"error","msg":"payment declined","orderId":12345678901234567891}`,
		`plain text: a timeout in the log line`,
		`{"level":"info","msg":"payment authorised","orderId":2}`,
		`{"level":"error","msg":"timeout","orderId":3}`,
		"\xff\xfe binary",
		`{"level":"error","msg":"card expired","orderId":4}`,
	}
	var recs []emulator.Rec
	for i, p := range payloads {
		recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("key-%d", i), Data: []byte(p)})
	}
	putOneByOne(t, e, c, stream, recs...)
	tailArgs := func(extra ...string) []string {
		return append([]string{"tail", stream, "--no-checkpoint", "--idle-exit", "1s", "--poll-interval", "200ms"}, extra...)
	}
	seqs := dataSeqs(t, env, stream)
	for _, tt := range []struct {
		name   string
		args   []string
		stdout []string // exact lines; JSON lines of records are compared by data
		data   bool     // stdout holds record lines: compare their data
		stderr []string // exact warning lines
	}{
		{name: "filter on JSON payloads", args: tailArgs("--filter", `.payload.level == "error"`), data: true,
			stdout: []string{payloads[0], payloads[3], payloads[5]}},
		{name: "filter on any payload's data", args: tailArgs("--filter", `.data | test("timeout")`), data: true,
			stdout: []string{payloads[1], payloads[3]}},
		{name: "filter on binary payloads", args: tailArgs("--filter", `.dataEncoding == "base64"`), data: true,
			stdout: []string{"//4gYmluYXJ5"}},
		{name: "numbers keep every digit", args: tailArgs("--filter", `.payload.orderId == 12345678901234567891`), data: true,
			stdout: []string{payloads[0]}},
		{name: "jq", args: tailArgs("--jq", `{key: .partitionKey, order: .payload.orderId} | select(.order)`),
			stdout: []string{`{"key":"key-0","order":12345678901234567891}`, `{"key":"key-2","order":2}`, `{"key":"key-3","order":3}`, `{"key":"key-5","order":4}`}},
		{name: "jq, raw", args: tailArgs("--jq", `.payload.msg // empty`, "--format", "raw"),
			stdout: []string{"payment declined", "payment authorised", "timeout", "card expired"}},
		{name: "jq in text format prints JSON", args: tailArgs("--jq", `.payload.msg // empty`, "--format", "text"),
			stdout: []string{`"payment declined"`, `"payment authorised"`, `"timeout"`, `"card expired"`}},
		{name: "filter and jq", args: tailArgs("--filter", `.payload.level == "error"`, "--jq", `.payload.orderId`),
			stdout: []string{"12345678901234567891", "3", "4"}},
		{name: "max-records counts what is printed", args: tailArgs("--filter", `.payload.level == "error"`, "--max-records", "2"), data: true,
			stdout: []string{payloads[0], payloads[3]}},
		{name: "a failing filter skips and warns once per error", args: tailArgs("--filter", `.payload.orderId * 2 > 4`), data: true,
			stdout: []string{payloads[0], payloads[3], payloads[5]},
			stderr: []string{"warning: --filter failed on the record shardId-000000000000 SEQ1 and skipped it: cannot multiply: null and number (2) (shown once; every record it fails on is skipped)"}},
		{name: "a failing jq skips and warns once per error", args: tailArgs("--jq", `.payload.msg | ascii_upcase`, "--format", "raw"),
			stdout: []string{"PAYMENT DECLINED", "PAYMENT AUTHORISED", "TIMEOUT", "CARD EXPIRED"},
			stderr: []string{"warning: --jq failed on the record shardId-000000000000 SEQ1 and skipped it: ascii_upcase cannot be applied to: null (shown once; every record it fails on is skipped)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := runBinary(t, env, "", tt.args...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			got := lines(res.stdout)
			if tt.data {
				got = dataOf(t, res.stdout)
			}
			if !slices.Equal(got, tt.stdout) {
				t.Fatalf("stdout\n%q\nwant\n%q", got, tt.stdout)
			}
			var want []string
			for _, w := range tt.stderr {
				want = append(want, strings.ReplaceAll(w, "SEQ1", seqs[1]))
			}
			if got := lines(res.stderr); !slices.Equal(got, want) {
				t.Fatalf("stderr\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// dataSeqs lists the stream's sequence numbers in order (a plain tail).
func dataSeqs(t *testing.T, env []string, stream string) []string {
	t.Helper()
	res := runBinary(t, env, "", "tail", stream, "--no-checkpoint", "--idle-exit", "1s", "--poll-interval", "200ms")
	var out []string
	for _, l := range lines(res.stdout) {
		var tl tailLine
		json.Unmarshal([]byte(l), &tl)
		out = append(out, tl.SequenceNumber)
	}
	return out
}

// A --filter run's checkpoint moves past what it dropped: resumed, it
// prints the next match; its default checkpoint file is its own, so a run
// without it starts afresh instead of skipping what the filter dropped.
func TestTailFilterCheckpoint(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	var recs []emulator.Rec
	for i := range 8 {
		level := "info"
		if i%3 == 0 {
			level = "error"
		}
		recs = append(recs, emulator.Rec{PartitionKey: "k", Data: []byte(fmt.Sprintf(`{"level":%q,"n":%d}`, level, i))})
	}
	putOneByOne(t, e, c, stream, recs...)
	filtered := []string{"tail", stream, "--idle-exit", "1s", "--poll-interval", "200ms", "--filter", `.payload.level == "error"`, "-o", "raw"}
	var got []string
	for _, max := range []string{"1", "1", "0"} {
		res := runBinary(t, env, "", append(filtered, "--max-records", max)...)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		got = append(got, lines(res.stdout)...)
	}
	if want := []string{`{"level":"error","n":0}`, `{"level":"error","n":3}`, `{"level":"error","n":6}`}; !slices.Equal(got, want) {
		t.Fatalf("three filtered runs printed %q, want %q", got, want)
	}
	// Caught up: nothing more, although the last record (n=7) was dropped.
	if res := runBinary(t, env, "", filtered...); res.code != 0 || res.stdout != "" {
		t.Fatalf("a fourth run: exit %d, printed %q", res.code, res.stdout)
	}
	res := runBinary(t, env, "", "tail", stream, "--idle-exit", "1s", "--poll-interval", "200ms", "-o", "raw")
	if n := len(lines(res.stdout)); res.code != 0 || n != 8 {
		t.Fatalf("an unfiltered run on the default checkpoint printed %d records (exit %d), want all 8: its file is not the filtered run's", n, res.code)
	}
}

// cwBatchData is a DATA_MESSAGE as a subscription writes it.
func cwBatchData(t *testing.T, messages ...string) []byte {
	t.Helper()
	var evs []string
	for i, m := range messages {
		b, _ := json.Marshal(m)
		evs = append(evs, fmt.Sprintf(`{"id":"3937216420139281239014682354234171642961234567890123456%d","timestamp":%d,"message":%s}`, i, 1796032800000+int64(i), b))
	}
	doc := `{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/aws/lambda/checkout","logStream":"2026/11/30/[$LATEST]0f3c","subscriptionFilters":["to-kinesis"],"logEvents":[` + strings.Join(evs, ",") + `]}`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(doc))
	zw.Close()
	return buf.Bytes()
}

func cwFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tail", "testdata", "cwlogs", name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logEventLine is tail --cwlogs's JSON line.
type logEventLine struct {
	ShardID           string `json:"shardId"`
	SequenceNumber    string `json:"sequenceNumber"`
	SubSequenceNumber *int64 `json:"subSequenceNumber"`
	LogEventIndex     *int64 `json:"logEventIndex"`
	LogGroup          string `json:"logGroup"`
	LogStream         string `json:"logStream"`
	Owner             string `json:"owner"`
	ID                string `json:"id"`
	Timestamp         string `json:"timestamp"`
	Message           string `json:"message"`
	Data              string `json:"data"`
}

func logEventLines(t *testing.T, out string) []logEventLine {
	t.Helper()
	var got []logEventLine
	for _, l := range lines(out) {
		var ll logEventLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		got = append(got, ll)
	}
	return got
}

// --cwlogs on batches as the service writes them: one line per log event
// in json, raw and text, the CONTROL_MESSAGE skipped (and counted with
// --debug), a record that is not a batch passed through with one warning,
// and --filter on the log event's object.
func TestTailCWLogs(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	putOneByOne(t, e, c, stream,
		emulator.Rec{PartitionKey: "sub", Data: cwFixture(t, "control-message")},
		emulator.Rec{PartitionKey: "sub", Data: cwFixture(t, "data-message")},
		emulator.Rec{PartitionKey: "other", Data: []byte("not a batch")},
		emulator.Rec{PartitionKey: "agg", Data: kpl.Aggregate([]kpl.Record{{PartitionKey: "a", Data: cwBatchData(t, "a0 ERROR x", "a1")}, {PartitionKey: "b", Data: cwBatchData(t, "b0")}})})
	run := func(extra ...string) cliResult {
		t.Helper()
		res := runBinary(t, env, "", append([]string{"tail", stream, "--no-checkpoint", "--idle-exit", "1s", "--poll-interval", "200ms", "--cwlogs"}, extra...)...)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		return res
	}
	messages := []string{
		"START RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b Version: $LATEST\n",
		`{"level":"error","msg":"payment declined","orderId":12345678901234567890,"amount":19.99}`,
		"ERROR java.lang.IllegalStateException: café closed\n\tat Checkout.pay(Checkout.java:42)",
		`{"level":"info","msg":"retrying"}`,
		"END RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b\n",
	}
	warning := "warning: shard shardId-000000000000: record SEQ is not a CloudWatch Logs batch (not gzip data); it is printed as with --decompress, as is every such record of this shard (said once per shard)"

	t.Run("json", func(t *testing.T) {
		res := run("-o", "json")
		got := logEventLines(t, res.stdout)
		if len(got) != 9 {
			t.Fatalf("%d lines, want 5 events, a record and 3 events:\n%s", len(got), res.stdout)
		}
		for i, m := range messages {
			l := got[i]
			if l.Message != m || l.LogEventIndex == nil || *l.LogEventIndex != int64(i) || l.LogGroup != "/aws/lambda/checkout" || l.Owner != "123456789012" ||
				l.LogStream != "2026/11/30/[$LATEST]0f3c2a9d8e7b4c1a9f6e5d4c3b2a1908" || l.SubSequenceNumber != nil || l.ID != fmt.Sprintf("3937216420139281239014682354234171642961234567890123456%d", i) {
				t.Fatalf("event %d: %+v", i, l)
			}
		}
		if got[0].Timestamp != "2026-11-30T10:00:00.123Z" || got[4].Timestamp != "2026-11-30T10:00:00.140Z" {
			t.Fatalf("timestamps %s, %s", got[0].Timestamp, got[4].Timestamp)
		}
		if got[5].LogEventIndex != nil || got[5].Data != "not a batch" {
			t.Fatalf("the record that is not a batch: %+v", got[5])
		}
		for i, want := range []struct {
			sub, idx int64
			msg      string
		}{{0, 0, "a0 ERROR x"}, {0, 1, "a1"}, {1, 0, "b0"}} {
			l := got[6+i]
			if l.SubSequenceNumber == nil || *l.SubSequenceNumber != want.sub || *l.LogEventIndex != want.idx || l.Message != want.msg {
				t.Fatalf("event %d of the aggregate: %+v", i, l)
			}
		}
		if w := strings.ReplaceAll(warning, "SEQ", got[5].SequenceNumber); res.stderr != w+"\n" {
			t.Fatalf("stderr %q, want %q", res.stderr, w)
		}
	})
	t.Run("raw", func(t *testing.T) {
		res := run("-o", "raw")
		want := "START RequestId: 8f5e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b Version: $LATEST\n" + messages[1] + "\n" + messages[2] + "\n" + messages[3] + "\n" + messages[4] +
			"not a batch\na0 ERROR x\na1\nb0\n"
		if res.stdout != want {
			t.Fatalf("raw:\n%q\nwant\n%q", res.stdout, want)
		}
	})
	t.Run("text", func(t *testing.T) {
		res := run("--format", "text")
		got := lines(res.stdout)
		if len(got) != 9 || !strings.Contains(got[2], "[0#2] /aws/lambda/checkout 2026/11/30/[$LATEST]0f3c2a9d8e7b4c1a9f6e5d4c3b2a1908 ERROR java.lang.IllegalStateException: café closed\\n\\tat Checkout.pay(Checkout.java:42)") ||
			!strings.Contains(got[8], "[0.1#0] /aws/lambda/checkout 2026/11/30/[$LATEST]0f3c b0") || !strings.HasSuffix(got[5], "[0] other not a batch") {
			t.Fatalf("text:\n%s", res.stdout)
		}
	})
	t.Run("filter", func(t *testing.T) {
		res := run("--filter", `.message | test("ERROR")`, "-o", "raw")
		if want := messages[2] + "\na0 ERROR x\n"; res.stdout != want {
			t.Fatalf("filtered:\n%q\nwant\n%q", res.stdout, want)
		}
		res = run("--filter", `.payload.level == "error"`, "--jq", `.payload.orderId`)
		if res.stdout != "12345678901234567890\n" {
			t.Fatalf("filter and jq on the payload of a message: %q", res.stdout)
		}
	})
	t.Run("debug counts CONTROL_MESSAGE", func(t *testing.T) {
		res := run("-o", "raw", "--debug")
		if n := strings.Count(res.stderr, "skipped a CloudWatch Logs CONTROL_MESSAGE"); n != 1 || !strings.Contains(res.stderr, "1 on this shard so far") {
			t.Fatalf("--debug says %d times that it skipped a CONTROL_MESSAGE:\n%s", n, res.stderr)
		}
		if !strings.Contains(res.stderr, "read 9 log events from 1 shard") {
			t.Fatalf("no summary in:\n%s", res.stderr)
		}
	})
}

// Resume inside a batch after --max-records: a run stopped after log event
// 3 resumes at event 4, inside a KPL aggregate of batches too; the file
// says where: version 4, a --cwlogs run's file, which names the option
// (its positions count log events) so that builds before it refuse it.
func TestTailCWLogsResumeAfterMaxRecords(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	putOneByOne(t, e, c, stream,
		emulator.Rec{PartitionKey: "sub", Data: cwBatchData(t, "e0", "e1", "e2", "e3", "e4", "e5")},
		emulator.Rec{PartitionKey: "agg", Data: kpl.Aggregate([]kpl.Record{{PartitionKey: "a", Data: cwBatchData(t, "a0", "a1")}, {PartitionKey: "b", Data: cwBatchData(t, "b0", "b1", "b2")}})},
		emulator.Rec{PartitionKey: "sub", Data: cwBatchData(t, "f0")})
	cp := filepath.Join(t.TempDir(), "cp.json")
	type step struct {
		printed []string
		version int
		pos     string // the shard's position as Position.String, with SEQn for the nth record
	}
	var seqs []string
	var steps []step
	for range 5 {
		res := runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--cwlogs", "--max-records", "3", "--idle-exit", "1s", "--poll-interval", "200ms")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		var st step
		for _, l := range logEventLines(t, res.stdout) {
			st.printed = append(st.printed, l.Message)
			if !slices.Contains(seqs, l.SequenceNumber) {
				seqs = append(seqs, l.SequenceNumber)
			}
		}
		b, err := os.ReadFile(cp)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version int `json:"version"`
		}
		json.Unmarshal(b, &doc)
		_, pos, err := tail.ReadCheckpoint(cp)
		if err != nil {
			t.Fatal(err)
		}
		st.version, st.pos = doc.Version, pos["shardId-000000000000"].String()
		for i, s := range seqs {
			st.pos = strings.ReplaceAll(st.pos, s, fmt.Sprintf("SEQ%d", i))
		}
		steps = append(steps, st)
		if len(st.printed) == 0 {
			break
		}
	}
	want := []step{
		{[]string{"e0", "e1", "e2"}, 4, "SEQ0#2"},
		{[]string{"e3", "e4", "e5"}, 4, "SEQ0"},
		{[]string{"a0", "a1", "b0"}, 4, "SEQ1/1#0"},
		{[]string{"b1", "b2", "f0"}, 4, "SEQ2"},
		{nil, 4, "SEQ2"},
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("runs of --max-records 3:\n got %v\nwant %v", steps, want)
	}
}

// messagesOf lists the messages of --cwlogs JSON lines.
func messagesOf(ls []tailLine) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Message)
	}
	return out
}

// kill9 kills a tail (SIGKILL: no final save) and waits for it.
func kill9(t *testing.T, p *tailProc) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
}

// Resume inside a batch after kill -9. A run stopped by --max-records
// after event 2 of a batch inside a KPL aggregate has its checkpoint
// there; the next run prints the rest and is killed before it saves (its
// --checkpoint-interval is an hour), so the file is as it was and the run
// after prints exactly that rest again, from the same event: the replay
// is what was printed since the last save, and nothing is lost. Killed
// after a save, the next run prints none of it again.
func TestTailCWLogsKillInsideBatch(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	putOneByOne(t, e, c, stream,
		emulator.Rec{PartitionKey: "sub", Data: cwBatchData(t, "e0", "e1", "e2")},
		emulator.Rec{PartitionKey: "agg", Data: kpl.Aggregate([]kpl.Record{{PartitionKey: "a", Data: cwBatchData(t, "a0", "a1", "a2", "a3")}, {PartitionKey: "b", Data: cwBatchData(t, "b0", "b1")}})},
		emulator.Rec{PartitionKey: "sub", Data: cwBatchData(t, "c0", "c1")})
	cp := filepath.Join(t.TempDir(), "cp.json")
	tailArgs := func(extra ...string) []string {
		return append([]string{"tail", stream, "--checkpoint", cp, "--cwlogs", "--poll-interval", "200ms"}, extra...)
	}
	position := func() tail.Position {
		t.Helper()
		_, pos, err := tail.ReadCheckpoint(cp)
		if err != nil {
			t.Fatal(err)
		}
		return pos["shardId-000000000000"]
	}

	res := runBinary(t, env, "", tailArgs("-o", "raw", "--max-records", "5", "--idle-exit", "1s")...)
	if got := lines(res.stdout); res.code != 0 || !slices.Equal(got, []string{"e0", "e1", "e2", "a0", "a1"}) {
		t.Fatalf("the --max-records run: exit %d, printed %q", res.code, got)
	}
	atA1 := position()
	if !atA1.Aggregated || atA1.SubSequence != 0 || !atA1.InBatch || atA1.LogEventIndex != 1 {
		t.Fatalf("checkpoint after a1: %v", atA1)
	}
	before, _ := os.ReadFile(cp)

	rest := []string{"a2", "a3", "b0", "b1", "c0", "c1"}
	p := startTail(t, env, tailArgs("-o", "json", "--checkpoint-interval", "1h")[1:]...)
	waitFor(t, 30*time.Second, "the rest of the records", func() bool { return len(p.output()) >= len(rest) })
	kill9(t, p)
	if got := messagesOf(p.output()); !slices.Equal(got, rest) {
		t.Fatalf("the run killed -9 printed %q, want %q", got, rest)
	}
	if after, _ := os.ReadFile(cp); !bytes.Equal(after, before) {
		t.Fatalf("the checkpoint changed without a save:\n%s\n%s", before, after)
	}

	res = runBinary(t, env, "", tailArgs("-o", "raw", "--idle-exit", "1s")...)
	if got := lines(res.stdout); res.code != 0 || !slices.Equal(got, rest) {
		t.Fatalf("after kill -9: exit %d, printed %q; want the unsaved rest %q again, from a2", res.code, got, rest)
	}

	// Killed after its save: nothing is printed again.
	atC := position()
	putOneByOne(t, e, c, stream, emulator.Rec{PartitionKey: "sub", Data: cwBatchData(t, "d0", "d1", "d2")})
	p = startTail(t, env, tailArgs("-o", "json", "--checkpoint-interval", "100ms")[1:]...)
	waitFor(t, 30*time.Second, "the new batch and its save", func() bool {
		pos := position()
		return len(p.output()) >= 3 && pos != atC && !pos.InBatch && !pos.Aggregated
	})
	kill9(t, p)
	if got := messagesOf(p.output()); !slices.Equal(got, []string{"d0", "d1", "d2"}) {
		t.Fatalf("the second run killed -9 printed %q", got)
	}
	res = runBinary(t, env, "", tailArgs("-o", "raw", "--idle-exit", "1s")...)
	if res.code != 0 || res.stdout != "" {
		t.Fatalf("after a kill -9 that followed its save: exit %d, printed %q", res.code, res.stdout)
	}
}
