package cmd

// The fault matrix: every command that talks to the
// service runs as the real binary against the package's emulator through a
// fault-injecting proxy (internal/kinesistest/faults), once per fault and mode:
//
//   - transient: the fault fires on the command's main call once, then
//     never again. The command must ride it through (exit 0 and the right
//     output) unless the fault is one the tool reports at once by design
//     (LimitExceeded on a call that changes the stream: a daily quota must
//     not be retried for a minute); then it ends like a persistent fault.
//     LimitExceeded on a read-only listing (ListStreams, ListShards,
//     DescribeStreamSummary) is a moment's crowd and is waited out.
//   - persistent: the fault fires on every such call. The command must end
//     with exit 1 and exactly one "error: " line on stderr, the last one,
//     that names the problem, within a stated bound.
//
// Either way: no panic, and for the commands that change the stream, what
// the output claims (records written, steps done, the layout shown) is
// what the stream's listing shows: no half-done change goes unreported.
//
// Cases run concurrently (their own proxies and, where they change
// something, their own streams), so the matrix takes about as long as its
// slowest case. KINESIS_SHARDS_FAULT_SEED=N replays it with another seed
// (the seed only matters where a rule is probabilistic; every case prints
// the seed it used when it fails).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
)

// Bounds the matrix holds the commands to. The client allows 10 s for the
// response headers and 25 s for one call with all its retries (cmd/aws.go).
const (
	fmBoundQuick   = 12 * time.Second                       // a fault that is retried or refused at once
	fmBoundStall   = responseHeaderTimeout + 12*time.Second // one stalled call, then a retry
	fmBoundTimeout = operationTimeout + 12*time.Second      // a call that never answers
	fmConcurrency  = 8
)

// fmSeed is the base seed; KINESIS_SHARDS_FAULT_SEED overrides it.
func fmSeed(t *testing.T) uint64 {
	if s := os.Getenv("KINESIS_SHARDS_FAULT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KINESIS_SHARDS_FAULT_SEED=%q: %v", s, err)
		}
		return n
	}
	return 8
}

// fmFault is one column of the matrix.
type fmFault struct {
	name string
	kind faults.Kind // Throttle means LimitExceeded on control-plane calls
	// dur is a Stall's length when transient (longer than the client's
	// header timeout, so the client gives up and retries).
	dur time.Duration
	// mutatingOnly: only for commands that change the stream (a dropped
	// answer to a read is the same as a dropped request).
	mutatingOnly bool
	// re matches the error line a persistent fault ends with.
	re *regexp.Regexp
}

var fmFaults = []fmFault{
	{name: "throttle", kind: faults.Throttle, re: regexp.MustCompile(`limit exceeded|Rate exceeded|throttl|still failed after`)},
	{name: "500", kind: faults.InternalFailure500, re: regexp.MustCompile(`InternalFailure`)},
	{name: "503", kind: faults.Unavailable503, re: regexp.MustCompile(`ServiceUnavailable`)},
	{name: "drop", kind: faults.Drop, re: regexp.MustCompile(`cannot reach the Kinesis endpoint http://127\.0\.0\.1:\d+|connection (was )?(lost|dropped)`)},
	{name: "drop-response", kind: faults.DropResponse, mutatingOnly: true, re: regexp.MustCompile(`cannot reach the Kinesis endpoint http://127\.0\.0\.1:\d+|took effect|may have been written`)},
	{name: "stall", kind: faults.Stall, dur: responseHeaderTimeout + 2*time.Second, re: regexp.MustCompile(`timed out`)},
}

// dataPlane operations answer throttling with
// ProvisionedThroughputExceeded; the others with LimitExceeded.

// fmReadOnly are the listings that wait out a transient LimitExceeded.
var fmReadOnly = map[string]bool{"ListStreams": true, "ListShards": true, "DescribeStreamSummary": true}
var fmDataPlane = map[string]bool{"GetRecords": true, "GetShardIterator": true, "PutRecords": true}

func (f fmFault) rule(op string, persistent bool) faults.Rule {
	r := faults.Rule{Op: op, Kind: f.kind}
	if f.kind == faults.Throttle && !fmDataPlane[op] {
		r.Kind = faults.LimitExceeded
	}
	if !persistent {
		r.Times = 1
		r.Duration = f.dur
	}
	return r
}

// fmCase is one cell: a command, a fault and a mode.
type fmCase struct {
	cmd, op    string
	fault      fmFault
	persistent bool
	// wantOK: exit 0 with the right output; else exit 1 and one error line.
	wantOK bool
	why    string // why a transient fault is not ridden through
	bound  time.Duration
	seed   uint64
}

func (c fmCase) name() string {
	mode := "transient"
	if c.persistent {
		mode = "persistent"
	}
	return c.cmd + "/" + c.fault.name + "/" + mode
}

// fmOutcome is one result row, for the summary the test logs.
type fmOutcome struct {
	name, result string
	took         time.Duration
}

// fmWorld holds what the cases share: the emulator, a private account on
// kinesis-mock (so `streams` lists only what the matrix made), and the
// read-only streams.
type fmWorld struct {
	e *emulator.Emulator
	// account and c: the matrix's own namespace and a client in it;
	// listAccount holds a single stream for `streams`.
	account, listAccount string
	c                    *kinesis.Client
	// readStream (tree, tail) is split once and holds readKeys' records.
	readStream string
	written    map[string][]string
	listStream string
}

func fmClient(e *emulator.Emulator, account string) *kinesis.Client {
	return kinesis.New(e.ClientOptions(), func(o *kinesis.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(account, "kinesis-shards-test", "")
	})
}

// env is the binary's environment through endpoint, in account.
func (w *fmWorld) env(t *testing.T, endpoint, account string) []string {
	return append(w.e.Env(), "AWS_ENDPOINT_URL_KINESIS="+endpoint, "AWS_ACCESS_KEY_ID="+account, "XDG_STATE_HOME="+t.TempDir())
}

func newFMWorld(t *testing.T) *fmWorld {
	t.Helper()
	e := emulator.Require(t)
	w := &fmWorld{e: e, account: "801800180018", listAccount: "802800280028"}
	if !e.Caps.AccountPerKey {
		w.account, w.listAccount = e.AccessKeyID(), e.AccessKeyID()
	}
	w.c = fmClient(e, w.account)
	w.readStream = emulator.StreamName(t)
	e.CreateStream(t, w.c, w.readStream, 2)
	kw := &keyedWriter{t: t, e: e, c: w.c, stream: w.readStream, keys: 6, written: map[string][]string{}}
	kw.round(2)
	if e.Caps.Reshard {
		splitShard(t, e, w.c, w.readStream, "shardId-000000000001")
	}
	kw.round(2)
	w.written = kw.written
	w.listStream = emulator.StreamName(t)
	e.CreateStream(t, fmClient(e, w.listAccount), w.listStream, 1)
	return w
}

// fmCommands is the matrix's rows: the call each one's faults go to.
var fmCommands = []struct {
	cmd, op  string
	mutating bool
}{
	{"streams", "ListStreams", false},
	{"tree", "ListShards", false},
	{"tail", "GetRecords", false},
	{"put", "PutRecords", true},
	{"create", "CreateStream", true},
	{"split", "SplitShard", true},
	{"merge", "MergeShards", true},
	{"scale", "UpdateShardCount", true},
}

// fmCases builds the matrix with what each cell must do.
func fmCases(t *testing.T, e *emulator.Emulator) []fmCase {
	seed := fmSeed(t)
	var cases []fmCase
	for _, cmd := range fmCommands {
		for _, f := range fmFaults {
			if f.mutatingOnly && !cmd.mutating {
				continue
			}
			for _, persistent := range []bool{false, true} {
				c := fmCase{cmd: cmd.cmd, op: cmd.op, fault: f, persistent: persistent, wantOK: !persistent, bound: fmBoundQuick}
				c.seed = seed + uint64(len(cases))
				if c.cmd == "scale" && !e.Caps.UpdateShardCount {
					c.op = "SplitShard" // scale --method splits
				}
				switch {
				case f.kind == faults.Stall && persistent:
					c.bound = fmBoundTimeout
				case f.kind == faults.Stall:
					c.bound = fmBoundStall
				}
				// LimitExceeded on a call that changes the stream reaches the
				// user at once (a daily quota must not be retried for a
				// minute); read-only listings wait a moment's crowd out.
				if !persistent && f.kind == faults.Throttle && !fmDataPlane[c.op] && !fmReadOnly[c.op] {
					c.wantOK, c.why = false, "LimitExceeded is reported at once, not retried"
				}
				// A dropped answer to a call that changes the stream: the
				// tool looks whether it took effect (create, split, merge,
				// scale: it did, so the command succeeds and says the answer
				// was lost); put cannot look, and says its records may have
				// been written.
				if f.kind == faults.DropResponse && c.cmd != "put" {
					c.wantOK = true
				}
				if c.cmd == "tail" && persistent {
					// A reader whose GetRecords is throttled or fails waits
					// and asks again for as long as it takes (README,
					// Pacing): no end to test. Its start-up listing is the
					// persistent case instead.
					c.op = "DescribeStreamSummary"
				}
				cases = append(cases, c)
			}
		}
	}
	return cases
}

// TestFaultMatrix runs every cell against the real binary.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the fault matrix runs the binary about 90 times")
	}
	w := newFMWorld(t)
	cases := fmCases(t, w.e)
	// The slowest first, so they overlap the rest.
	slices.SortStableFunc(cases, func(a, b fmCase) int { return int(b.bound - a.bound) })
	binary(t)

	var (
		mu       sync.Mutex
		outcomes []fmOutcome
		wg       sync.WaitGroup
		sem      = make(chan struct{}, fmConcurrency)
	)
	start := time.Now()
	for _, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		// t.Run may be called from several goroutines; these subtests do not
		// call t.Parallel, so go test's -parallel (2 on this machine) does not
		// cap them: the matrix is mostly waiting on timeouts and backoff.
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			o := fmOutcome{result: "skipped (see the log)"}
			if !t.Run(c.name(), func(t *testing.T) {
				o = w.run(t, c)
			}) {
				o.result = "FAILED"
			}
			o.name = c.name()
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.SortFunc(outcomes, func(a, b fmOutcome) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	fmt.Fprintf(&b, "fault matrix on %s (%d cells, %s wall):\n", w.e.Backend, len(outcomes), time.Since(start).Round(time.Second))
	for _, o := range outcomes {
		fmt.Fprintf(&b, "  %-38s %-60s %s\n", o.name, o.result, o.took.Round(100*time.Millisecond))
	}
	t.Log(b.String())
}

// run runs one cell and checks it; the outcome is for the summary.
func (w *fmWorld) run(t *testing.T, c fmCase) fmOutcome {
	e := w.e
	reshards := c.cmd == "merge" || c.cmd == "split" || c.cmd == "scale"
	if reshards && !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	if reshards && c.fault.kind == faults.DropResponse && e.Backend == emulator.Kinesalite {
		// kinesalite accepts a split or merge of a closed
		// shard, which AWS refuses. The SDK's retry of a call whose answer
		// was lost then reshards a second time once the stream is ACTIVE
		// again (on AWS and kinesis-mock it is refused), and the layout is
		// not the planned one.
		t.Skip("kinesalite reshards closed shards: a retried call after a lost answer reshards twice")
	}
	rule := c.fault.rule(c.op, c.persistent)
	inj := faults.New(c.seed, rule)
	t.Logf("seed %d, rule %+v", c.seed, rule)

	// Each command's set-up (its own stream where it changes one) goes
	// straight to the emulator; only the command's run goes through the proxy.
	var (
		args    []string
		stdin   string
		account = w.account
		stream  string
		before  []string
	)
	switch c.cmd {
	case "streams":
		args, account = []string{"streams"}, w.listAccount
	case "tree":
		args = []string{"tree", w.readStream, "-o", "json"}
	case "tail":
		args = []string{"tail", w.readStream, "--no-checkpoint", "--idle-exit", "1s", "--poll-interval", "200ms", "--relist-interval", "1s"}
	case "put":
		stream = emulator.StreamName(t)
		e.CreateStream(t, w.c, stream, 2)
		var in strings.Builder
		for i := range 30 {
			fmt.Fprintf(&in, "{\"k\":\"key-%d\",\"n\":%d}\n", i%5, i)
		}
		stdin = in.String()
		args = []string{"put", stream, "--key-field", "k", "--retries", "2", "-o", "json"}
	case "create":
		stream = emulator.StreamName(t)
		t.Cleanup(func() {
			w.c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
		})
		args = []string{"create", stream, "--shards", "2", "-o", "json", "--wait", "20s"}
	case "split":
		stream = emulator.StreamName(t)
		e.CreateStream(t, w.c, stream, 2)
		args = []string{"split", stream, "1", "--yes", "-o", "json"}
	case "merge":
		stream = emulator.StreamName(t)
		e.CreateStream(t, w.c, stream, 3)
		args = []string{"merge", stream, "2", "1", "--yes", "-o", "json"}
	case "scale":
		stream = emulator.StreamName(t)
		e.CreateStream(t, w.c, stream, 2)
		args = []string{"scale", stream, "--to", "3", "--yes", "-o", "json"}
		if !e.Caps.UpdateShardCount {
			args = append(args, "--method", "splits")
		}
	}
	if stream != "" && c.cmd != "create" {
		before = fmOpenLayout(t, w.c, stream)
	}
	proxy := inj.Proxy(t, e.Endpoint)
	begin := time.Now()
	res := runBinary(t, w.env(t, proxy.URL, account), stdin, args...)
	took := time.Since(begin)
	fired := inj.Fired()
	t.Logf("exit %d in %s; fired %v; calls %v\nstdout:\n%s\nstderr:\n%s", res.code, took.Round(time.Millisecond), fired, inj.Counts(), res.stdout, res.stderr)

	if strings.Contains(res.stderr, "panic") || strings.Contains(res.stderr, "goroutine ") {
		t.Fatalf("seed %d: the command panicked", c.seed)
	}
	if len(fired) == 0 {
		t.Fatalf("seed %d: the fault never fired (calls %v): the cell tests nothing", c.seed, inj.Counts())
	}
	if took > c.bound {
		t.Errorf("seed %d: took %s, more than the bound %s", c.seed, took.Round(time.Millisecond), c.bound)
	}
	result := ""
	if c.wantOK {
		if res.code != 0 {
			t.Fatalf("seed %d: exit %d, want 0 (the fault is transient)", c.seed, res.code)
		}
		if strings.HasPrefix(res.stderr, "error: ") || strings.Contains(res.stderr, "\nerror: ") {
			t.Errorf("seed %d: exit 0 with an error line", c.seed)
		}
		result = "ridden through (exit 0)"
	} else {
		line := fmErrorLine(t, res)
		if !c.fault.re.MatchString(line) {
			t.Errorf("seed %d: the error line does not name the %s fault (want /%s/): %s", c.seed, c.fault.name, c.fault.re, line)
		}
		result = "exit 1: " + fmShort(line)
		if c.why != "" {
			result = "exit 1 (" + c.why + ")"
		}
	}
	w.check(t, c, stream, before, res, stdin)
	return fmOutcome{result: result, took: took}
}

// fmErrorLine asserts exit 1 with exactly one "error: " line on stderr, the
// last one, and returns it.
func fmErrorLine(t *testing.T, res cliResult) string {
	t.Helper()
	if res.code != 1 {
		t.Fatalf("exit %d, want 1", res.code)
	}
	lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "error: ") {
			n++
		}
	}
	last := lines[len(lines)-1]
	if n != 1 || !strings.HasPrefix(last, "error: ") || !strings.HasSuffix(res.stderr, "\n") {
		t.Fatalf("stderr must end with exactly one \"error: \" line:\n%s", res.stderr)
	}
	return last
}

func fmShort(s string) string {
	s = strings.TrimPrefix(s, "error: ")
	if len(s) > 56 {
		s = s[:55] + "…"
	}
	return s
}

// check compares what the command says with the stream.
func (w *fmWorld) check(t *testing.T, c fmCase, stream string, before []string, res cliResult, stdin string) {
	t.Helper()
	switch c.cmd {
	case "streams":
		if res.code == 0 && !strings.Contains(res.stdout, w.listStream) {
			t.Errorf("streams does not list %s", w.listStream)
		}
		if res.code != 0 && res.stdout != "" {
			t.Errorf("stdout on failure: %q", res.stdout)
		}
	case "tree":
		if res.code == 0 {
			var doc struct {
				Shards []struct{ ShardID string }
			}
			if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
				t.Fatalf("tree -o json: %v", err)
			}
			if want := len(fmShardIDs(t, w.c, w.readStream)); len(doc.Shards) != want {
				t.Errorf("tree shows %d shards, the stream has %d", len(doc.Shards), want)
			}
		} else if res.stdout != "" {
			t.Errorf("stdout on failure: %q", res.stdout)
		}
	case "tail":
		if res.code == 0 {
			kw := &keyedWriter{t: t, written: w.written}
			kw.check(fmTailLines(t, res.stdout), false)
		} else if res.stdout != "" && !c.persistent {
			t.Errorf("stdout on failure: %q", res.stdout)
		}
	case "put":
		w.checkPut(t, c, stream, res, stdin)
	case "create":
		w.checkCreate(t, stream, res)
	case "split", "merge", "scale":
		w.checkReshard(t, c, stream, before, res)
	}
}

// checkPut: the summary's record count is what the stream holds, except
// where the error says an answer was lost; every key stays in order.
func (w *fmWorld) checkPut(t *testing.T, c fmCase, stream string, res cliResult, stdin string) {
	t.Helper()
	var st putStats
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("put -o json: %v\n%s", err, res.stdout)
	}
	want := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdin), "\n") {
		var v struct{ K string }
		json.Unmarshal([]byte(l), &v)
		want[v.K] = append(want[v.K], l)
	}
	got := map[string][]string{}
	stored := 0
	for _, recs := range w.e.ReadAll(t, w.c, stream) {
		for _, r := range recs {
			var v struct{ K string }
			json.Unmarshal(r.Data, &v)
			got[v.K] = append(got[v.K], string(r.Data))
			stored++
		}
	}
	// A dropped answer means the call may have taken effect; the SDK's
	// retry of it then writes the batch again. Duplicates are allowed only
	// then, and only right after the record they repeat.
	lost := c.fault.kind == faults.DropResponse
	distinct := 0
	for k, seq := range got {
		next := 0
		for i, d := range seq {
			switch {
			case next < len(want[k]) && d == want[k][next]:
				next++
			case lost && i > 0 && d == seq[i-1], lost && next > 0 && d == want[k][next-1]:
			default:
				t.Fatalf("key %s stored out of order or unknown: %v", k, seq)
			}
		}
		distinct += next
	}
	if stored > distinct && !strings.Contains(res.stderr, "may be stored twice") && !strings.Contains(res.stderr, "more than once") {
		t.Fatalf("%d records are stored twice and no warning says so:\n%s", stored-distinct, res.stderr)
	}
	if res.code == 0 {
		if st.Records != 30 || distinct != 30 {
			t.Fatalf("exit 0: summary says %d records, the stream holds %d distinct of 30", st.Records, distinct)
		}
		return
	}
	if distinct < st.Records {
		t.Fatalf("the summary claims %d records; the stream holds %d", st.Records, distinct)
	}
	if distinct > st.Records && !strings.Contains(res.stderr, "may have been written") {
		t.Fatalf("the stream holds %d records (%d stored) but the summary says %d and the error does not say more may have been written:\n%s",
			distinct, stored, st.Records, res.stderr)
	}
}

// checkCreate: exit 0 means the stream is there and ACTIVE; exit 1 that it
// is not, or that the error says it may be.
func (w *fmWorld) checkCreate(t *testing.T, stream string, res cliResult) {
	t.Helper()
	sum, err := kstream.Describe(context.Background(), w.c, kstream.Ref{Name: stream})
	if res.code == 0 {
		if err != nil || sum.Status != "ACTIVE" || !strings.Contains(res.stdout, `"status": "ACTIVE"`) {
			t.Fatalf("exit 0 but the stream is %v / %v", sum, err)
		}
		return
	}
	if res.stdout != "" {
		t.Errorf("stdout on failure: %q", res.stdout)
	}
	if err == nil && !strings.Contains(res.stderr, "may have been created") {
		t.Fatalf("create failed, yet stream %s exists (%s) and the error does not say so", stream, sum.Status)
	}
}

// checkReshard: the JSON document's result (steps done, layout) is the
// stream's open layout, and the layout changed only if a step is reported
// done (or the error says a call may have taken effect).
func (w *fmWorld) checkReshard(t *testing.T, c fmCase, stream string, before []string, res cliResult) {
	t.Helper()
	w.e.WaitActive(t, w.c, stream)
	after := fmOpenLayout(t, w.c, stream)
	d := rsParse(t, res.stdout)
	if d.Result == nil {
		t.Fatalf("no result in the document")
	}
	var shown []string
	for _, s := range d.Result.Layout {
		shown = append(shown, s.HashKeyRange.Start+".."+s.HashKeyRange.End)
	}
	if !slices.Equal(shown, after) {
		t.Fatalf("the result's layout %v is not the stream's open layout %v", shown, after)
	}
	changed := !slices.Equal(before, after)
	done := len(d.Result.StepsDone) > 0
	switch {
	case res.code == 0:
		if !d.Result.Completed || !changed {
			t.Fatalf("exit 0: completed %v, layout changed %v", d.Result.Completed, changed)
		}
	case changed && !done && !strings.Contains(res.stderr, "took effect"):
		t.Fatalf("the stream was changed, yet no step is reported done:\n%s", res.stderr)
	case !changed && done:
		t.Fatalf("a step is reported done, yet the layout is unchanged")
	}
}

// fmOpenLayout is the open shards' ranges, in key order.
func fmOpenLayout(t *testing.T, c *kinesis.Client, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := lineage.Load(ctx, c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range g.Open() {
		out = append(out, s.Range.Start.String()+".."+s.Range.End.String())
	}
	return out
}

// fmShardIDs is the id of every shard of the stream.
func fmShardIDs(t *testing.T, c *kinesis.Client, stream string) []string {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range shards {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	return ids
}

func fmTailLines(t *testing.T, stdout string) []tailLine {
	t.Helper()
	var lines []tailLine
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("bad line %q", l)
		}
		lines = append(lines, tl)
	}
	return lines
}

// TestFaultMatrixDashboardRefresh drives the dashboard's model in-process,
// as bubbletea would (its commands run concurrently, their messages come
// back to Update), against a client whose listing calls go through the
// proxy. A transient fault is ridden through by the first listing; a
// persistent one puts one line on the status bar within the bound, the
// screen keeps working, and the next refresh after the fault clears shows
// the stream again.
func TestFaultMatrixDashboardRefresh(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	seed := fmSeed(t)
	for i, f := range fmFaults {
		if f.mutatingOnly {
			continue
		}
		for _, persistent := range []bool{false, true} {
			name := f.name + "/transient"
			if persistent {
				name = f.name + "/persistent"
			}
			t.Run(name, func(t *testing.T) {
				if f.kind == faults.Stall && persistent && testing.Short() {
					t.Skip("waits for the call timeout")
				}
				t.Parallel()
				s := seed + uint64(100+i)
				rule := f.rule("ListShards", persistent)
				inj := faults.New(s, rule)
				p := inj.Proxy(t, e.Endpoint)
				t.Logf("seed %d, rule %+v", s, rule)
				d := newFMDash(t, e, p.URL, stream)
				start := time.Now()
				wantOK := !persistent // a transient rate limit on ListShards is waited out
				screen := d.until(fmBoundTimeout, func(v string) bool {
					return strings.Contains(v, "cannot list stream") || strings.Contains(v, "open / 2 shards")
				})
				took := time.Since(start)
				if took > map[bool]time.Duration{true: fmBoundTimeout, false: fmBoundStall}[f.kind == faults.Stall] {
					t.Errorf("the first listing took %s", took)
				}
				if len(inj.Fired()) == 0 {
					t.Fatalf("the fault never fired")
				}
				if wantOK {
					if !strings.Contains(screen, "2 open / 2 shards") || strings.Contains(screen, "cannot list") {
						t.Fatalf("after %s the screen is:\n%s", took, screen)
					}
					return
				}
				status := fmStatusLine(screen)
				if !strings.HasPrefix(status, "cannot list stream "+stream+": ") || !f.re.MatchString(status) {
					t.Fatalf("status line %q (after %s); screen:\n%s", status, took, screen)
				}
				// The fault clears: the next refresh shows the stream.
				inj.SetRules()
				d.until(fmBoundStall, func(v string) bool {
					return strings.Contains(v, "2 open / 2 shards") && !strings.Contains(v, "cannot list")
				})
				t.Logf("status %q after %s; recovered", status, took.Round(time.Millisecond))
			})
		}
	}
}

// fmDash runs a dashboard model the way bubbletea does.
type fmDash struct {
	t    *testing.T
	m    *dashboard.Model
	msgs chan tea.Msg
}

func newFMDash(t *testing.T, e *emulator.Emulator, endpoint, stream string) *fmDash {
	t.Helper()
	o := e.ClientOptions()
	// The product's HTTP client (its header timeout), retryer and
	// operation timeout; static test credentials.
	cfg := aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: newHTTPClient(), Retryer: awscall.KinesisRetryer}
	api := newKinesisClient(cfg, clientConfig{EndpointURL: endpoint})
	ec := errContext{stream: stream, region: o.Region, endpoint: endpoint}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := dashboard.New(dashboard.Options{
		Backend:         &dashboardBackend{api: api},
		Stream:          kstream.Ref{Name: stream},
		Theme:           render.NewTheme(false),
		NoReader:        true,
		RefreshInterval: time.Second,
		FigureInterval:  time.Hour,
		DescribeError:   func(err error) string { return text.OneLine(wordError(err, ec)) },
		Context:         ctx,
	})
	d := &fmDash{t: t, m: m, msgs: make(chan tea.Msg, 256)}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	d.start(m.Init())
	return d
}

func (d *fmDash) start(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				d.start(c)
			}
			return
		}
		if msg != nil {
			d.msgs <- msg
		}
	}()
}

// until feeds messages to Update until the view satisfies ok.
func (d *fmDash) until(timeout time.Duration, ok func(string) bool) string {
	d.t.Helper()
	deadline := time.After(timeout)
	for {
		v := d.m.View()
		if ok(v) {
			return v
		}
		select {
		case msg := <-d.msgs:
			_, cmd := d.m.Update(msg)
			d.start(cmd)
		case <-deadline:
			d.t.Fatalf("after %s the screen is:\n%s", timeout, v)
		}
	}
}

// fmStatusLine is the screen line holding the status message.
func fmStatusLine(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, "cannot list stream"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return ""
}
