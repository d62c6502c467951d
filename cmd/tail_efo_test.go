package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// `tail --efo` against the fanout stub: the consumer's life (first use,
// reuse, --consumer, the limit, a consumer in use elsewhere) and that a
// tail deregisters its consumer however it ends.

const stubShard = "shardId-000000000000"

// efoStub is a stub whose consumers leave CREATING after two polls and are
// gone at once when deregistered, with records on its shard, and a client.
func efoStub(t *testing.T, o fanout.StubOptions, records int) (*fanout.Stub, *kinesis.Client) {
	t.Helper()
	if o.DeletingPolls == 0 {
		o.DeletingPolls = -1
	}
	if o.Tick == 0 {
		o.Tick = 50 * time.Millisecond
	}
	s := fanout.NewStub(t, o)
	for i := range records {
		s.Put(stubShard, fanout.Record{PartitionKey: fmt.Sprintf("k%d", i), Data: []byte(fmt.Sprintf("r%d", i))})
	}
	return s, kinesis.New(kinesis.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1})
}

func registerStubConsumer(t *testing.T, s *fanout.Stub, c *kinesis.Client, name string) {
	t.Helper()
	if _, err := c.RegisterStreamConsumer(t.Context(), &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(s.StreamARN), ConsumerName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
}

func TestTailEFOConsumerLifeOnStub(t *testing.T) {
	def := defaultConsumerName("")
	for _, tt := range []struct {
		name     string
		args     []string
		existing []string
		faults   []fanout.Fault
		opts     fanout.StubOptions
		code     int
		stdout   int      // lines
		stderr   []string // each in order, and nothing else
		left     []string // consumers at the end
	}{
		{name: "first use: registered, waited for, billed, deregistered", code: exitOK, stdout: 3, stderr: []string{
			"waiting for consumer " + def + " of stream efo-stub to be ACTIVE (CREATING) ...",
			"consumer " + def + " is ACTIVE after ",
			"registered enhanced fan-out consumer " + def + " of stream efo-stub",
			efoBillingNote,
		}},
		{name: "left by a killed tail: reused, deregistered", existing: []string{def}, opts: fanout.StubOptions{CreatingPolls: -1}, code: exitOK, stdout: 3},
		{name: "still CREATING: waited for, deregistered", existing: []string{def}, code: exitOK, stdout: 3, stderr: []string{
			"waiting for consumer " + def + " of stream efo-stub to be ACTIVE (CREATING) ...",
			"consumer " + def + " is ACTIVE after ",
		}},
		{name: "--consumer: created, billed, kept", args: []string{"--consumer", "ops-tail"}, code: exitOK, stdout: 3, stderr: []string{
			"waiting for consumer ops-tail of stream efo-stub to be ACTIVE (CREATING) ...",
			"consumer ops-tail is ACTIVE after ",
			"registered enhanced fan-out consumer ops-tail of stream efo-stub",
			efoBillingNote,
		}, left: []string{"ops-tail"}},
		{name: "--consumer: used, kept", args: []string{"--consumer", "ops-tail"}, existing: []string{"ops-tail"}, opts: fanout.StubOptions{CreatingPolls: -1},
			code: exitOK, stdout: 3, left: []string{"ops-tail"}},
		{name: "--max-records: deregistered", args: []string{"--max-records", "2"}, existing: []string{def}, opts: fanout.StubOptions{CreatingPolls: -1},
			code: exitOK, stdout: 2},
		{name: "an error: deregistered", faults: []fanout.Fault{{CallError: "AccessDeniedException"}}, code: exitFailure, stderr: []string{
			"waiting for consumer", "consumer " + def + " is ACTIVE", "registered", efoBillingNote,
			"error: access denied in region us-east-1: fanout stub: scripted AccessDeniedException",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, c := efoStub(t, tt.opts, 3)
			for _, n := range tt.existing {
				registerStubConsumer(t, s, c, n)
			}
			s.Fail(stubShard, tt.faults...)
			r := runCLI(t, s.URL, "", append([]string{"tail", "efo-stub", "--efo", "--no-checkpoint", "--idle-exit", "300ms"}, tt.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.stderr == "" {
				lines = nil
			}
			ok := r.code == tt.code && strings.Count(r.stdout, "\n") == tt.stdout && len(lines) == len(tt.stderr)
			for i := range tt.stderr {
				ok = ok && i < len(lines) && strings.HasPrefix(lines[i], tt.stderr[i])
			}
			if !ok {
				t.Fatalf("exit %d (want %d), stdout %q (want %d lines)\nstderr %q\nwant lines starting\n%s", r.code, tt.code, r.stdout, tt.stdout, r.stderr, strings.Join(tt.stderr, "\n"))
			}
			if got := s.Consumers(); !slices.Equal(got, tt.left) {
				t.Fatalf("consumers at the end %q, want %q", got, tt.left)
			}
		})
	}
}

// At 20 consumers a first use fails in one line naming them, and
// registers nothing.
func TestTailEFOAtTheConsumerLimit(t *testing.T) {
	s, c := efoStub(t, fanout.StubOptions{CreatingPolls: -1}, 1)
	var names []string
	for i := range kstream.MaxConsumers {
		names = append(names, fmt.Sprintf("app-%02d", i))
		registerStubConsumer(t, s, c, names[i])
	}
	r := runCLI(t, s.URL, "", "tail", "efo-stub", "--efo", "--no-checkpoint", "--idle-exit", "300ms")
	checkFailure(t, r, exitFailure, "stream efo-stub already has 20 consumers, the most a stream can have (LimitExceededException): "+strings.Join(names, ", ")+"; deregister one to make room")
	if r.stdout != "" || !slices.Equal(s.Consumers(), names) {
		t.Fatalf("stdout %q, consumers %v", r.stdout, s.Consumers())
	}
}

// A consumer that another process keeps reading the shard with: the
// subscription is refused (ResourceInUseException) for longer than the
// reader waits; one line names the consumer and the shard, and the
// consumer is left for the other process.
func TestTailEFOConsumerInUseElsewhere(t *testing.T) {
	t.Parallel()
	s, c := efoStub(t, fanout.StubOptions{CreatingPolls: -1}, 1)
	def := defaultConsumerName("")
	registerStubConsumer(t, s, c, def)
	var refusals []fanout.Fault
	for range 200 {
		refusals = append(refusals, fanout.Fault{CallError: "ResourceInUseException"})
	}
	s.Fail(stubShard, refusals...)
	r := runCLI(t, s.URL, "", "tail", "efo-stub", "--efo", "--no-checkpoint", "--idle-exit", "300ms")
	checkFailure(t, r, exitFailure, "another tail with consumer "+def+" is reading shard "+stubShard+" (ResourceInUseException for over 30s): give each tail its own --consumer NAME")
	if !slices.Equal(s.Consumers(), []string{def}) {
		t.Fatalf("consumers %v: the one in use elsewhere was deregistered", s.Consumers())
	}
}

// The binary deregisters its consumer after Ctrl-C and after a closed
// pipe, and a kill -9 leaves it for the next run to reuse.
func TestTailEFOConsumerAtExit(t *testing.T) {
	e := emulator.Require(t)
	def := defaultConsumerName("")
	env := func(s *fanout.Stub) []string {
		return append(e.Env(), "AWS_ENDPOINT_URL_KINESIS="+s.URL, "AWS_REGION=us-east-1", "XDG_STATE_HOME="+t.TempDir())
	}
	args := []string{"efo-stub", "--efo", "--no-checkpoint"}
	t.Run("Ctrl-C", func(t *testing.T) {
		s, _ := efoStub(t, fanout.StubOptions{CreatingPolls: -1}, 3)
		p := startTail(t, env(s), args...)
		waitFor(t, 20*time.Second, "the records", func() bool { return len(p.output()) == 3 })
		p.cmd.Process.Signal(syscall.SIGINT)
		if code := p.wait(t, 15*time.Second); code != exitInterrupted || len(s.Consumers()) != 0 {
			t.Fatalf("exit %d, consumers %v; stderr:\n%s", code, s.Consumers(), p.errText())
		}
	})
	t.Run("closed pipe", func(t *testing.T) {
		s, _ := efoStub(t, fanout.StubOptions{CreatingPolls: -1}, 1)
		cmd := exec.Command(binary(t), append([]string{"tail"}, args...)...)
		cmd.Env = env(s)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		out.Close() // `tail | head -1`
		s.Put(stubShard, fanout.Record{PartitionKey: "k", Data: []byte("into a closed pipe")})
		err = cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != exitOK || len(s.Consumers()) != 0 {
			t.Fatalf("exit %d, consumers %v; stderr:\n%s", code, s.Consumers(), stderr.String())
		}
	})
	t.Run("kill -9, then the next run", func(t *testing.T) {
		s, _ := efoStub(t, fanout.StubOptions{CreatingPolls: -1, InUseWindow: -1}, 2)
		p := startTail(t, env(s), args...)
		waitFor(t, 20*time.Second, "the records", func() bool { return len(p.output()) == 2 })
		p.cmd.Process.Kill()
		p.wait(t, 10*time.Second)
		if got := s.Consumers(); !slices.Equal(got, []string{def}) {
			t.Fatalf("after kill -9: consumers %v, want %s left", got, def)
		}
		r := runBinary(t, env(s), "", append([]string{"tail"}, append(args, "--idle-exit", "300ms")...)...)
		if r.code != exitOK || strings.Count(r.stdout, "\n") != 2 || strings.Contains(r.stderr, "registered") || len(s.Consumers()) != 0 {
			t.Fatalf("next run: exit %d, stdout %q, consumers %v; stderr:\n%s", r.code, r.stdout, s.Consumers(), r.stderr)
		}
	})
}

// tailRead is how a test's tails read the emulator: polling, or
// subscribed (--efo) through the fanout shim in front of kinesis-mock,
// which ends a closed shard's subscriptions as AWS does, or straight from
// kinesis-mock, which never ends them (tail's own rule then finds the
// end: tail/efo.go).
type tailRead struct {
	name   string
	efo    bool
	direct bool // no shim
}

var tailReads = []tailRead{{name: "polling"}, {name: "efo", efo: true}, {name: "efo without the shim", efo: true, direct: true}}

// setup is the endpoint a tail of this kind talks to ("" for the
// emulator itself) and what it makes of a polling tail's arguments (with
// --efo: the flag added, --poll-interval taken out). With --efo it skips
// a backend without consumers, and fails the test if a consumer of the
// stream is left registered at its end (the tails of the test are
// stopped first).
func (r tailRead) setup(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream string) (endpoint string, args func(...string) []string) {
	t.Helper()
	if !r.efo {
		return "", func(a ...string) []string { return a }
	}
	if !e.Caps.Consumers {
		t.Skipf("emulator: %s has no enhanced fan-out", e.Backend)
	}
	arn := e.StreamARN(t, c, stream)
	t.Cleanup(func() { noConsumerLeft(t, c, arn) })
	if r.direct {
		return "", efoArgs
	}
	shim := fanout.NewShim(t, e.Endpoint, fanout.ShimOptions{})
	return shim.URL, efoArgs
}

// efoArgs are a polling tail's arguments for a tail --efo.
func efoArgs(a ...string) []string {
	var out []string
	for i := 0; i < len(a); i++ {
		if a[i] == "--poll-interval" {
			i++
			continue
		}
		out = append(out, a[i])
	}
	return append(out, "--efo")
}

// noConsumerLeft fails the test if the stream has a consumer that is not
// on its way out, and removes whatever is there.
func noConsumerLeft(t *testing.T, c *kinesis.Client, arn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := c.ListStreamConsumers(ctx, &kinesis.ListStreamConsumersInput{StreamARN: aws.String(arn)})
	if err != nil {
		t.Errorf("list consumers: %v", err)
		return
	}
	for _, x := range out.Consumers {
		if x.ConsumerStatus != types.ConsumerStatusDeleting {
			t.Errorf("consumer %s left %s by the test's tails", aws.ToString(x.ConsumerName), x.ConsumerStatus)
		}
		_, _ = c.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{StreamARN: aws.String(arn), ConsumerName: x.ConsumerName})
	}
}

// `tail --efo` on kinesis-mock under faults: every subscription ends after
// about 3 s (the shim, as AWS ends one after 5 minutes), calls are refused
// (ResourceInUseException, LimitExceededException), fail (500, 503), are
// dropped before or after the emulator took them (which leaves it holding
// the consumer and shard, refusing the next call inside the stream), and
// listings are throttled, while the stream is split and merged: every
// record once, each key in order, parents before children.
func TestTailEFOUnderFaults(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard || !e.Caps.Consumers {
		t.Skipf("%s cannot reshard or has no consumers", e.Backend)
	}
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	arn := e.StreamARN(t, c, stream)
	t.Cleanup(func() { noConsumerLeft(t, c, arn) })
	w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 10, written: map[string][]string{}}
	w.round(6)
	splitShard(t, e, c, stream, openIDs(t, c, stream)[1])
	w.round(6)
	mergeOpen(t, e, c, stream, 0)
	w.round(6)
	shim := fanout.NewShim(t, e.Endpoint, fanout.ShimOptions{EndAfter: 3 * time.Second})
	inj := faults.New(42,
		faults.Rule{Op: "SubscribeToShard", Kind: faults.ResourceInUse, Nth: []int{1}},
		faults.Rule{Op: "SubscribeToShard", Kind: faults.InternalFailure500, Nth: []int{3}},
		faults.Rule{Op: "SubscribeToShard", Kind: faults.Unavailable503, Nth: []int{5}},
		faults.Rule{Op: "SubscribeToShard", Kind: faults.LimitExceeded, Nth: []int{7}},
		faults.Rule{Op: "SubscribeToShard", Kind: faults.Drop, Nth: []int{9}},
		faults.Rule{Op: "SubscribeToShard", Kind: faults.DropResponse, Nth: []int{11}},
		faults.Rule{Op: "ListShards", Kind: faults.LimitExceeded, Prob: 0.2},
	)
	proxy := inj.Proxy(t, shim.URL)
	res := runBinary(t, tailEnv(e, t, proxy.URL), "", "tail", stream, "--efo", "--no-checkpoint", "--idle-exit", "4s", "--relist-interval", "1s")
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.stderr)
	}
	lines := fmTailLines(t, res.stdout)
	w.check(lines, false)
	checkParentsFirstLines(t, c, stream, lines)
	fired := inj.Fired()
	for _, k := range []string{"ResourceInUse", "InternalFailure500", "Unavailable503", "LimitExceeded", "Drop", "DropResponse"} {
		if fired["SubscribeToShard/"+k] != 1 {
			t.Fatalf("SubscribeToShard/%s did not fire: %v", k, fired)
		}
	}
	t.Logf("faults fired: %v; %d subscriptions", fired, len(shim.Calls()))
}

// dashboard --efo: the sampling reader subscribes from the tip of every
// open shard through the dashboard's own consumer, registered at its first
// read, and deregistered (and reported) once the dashboard quits.
func TestDashboardEFOSamplingReader(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	endpoint, _ := tailReads[1].setup(t, e, c, stream)
	e.Put(t, c, stream, []emulator.Rec{{PartitionKey: "before", Data: []byte("old")}})
	via := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(endpoint) })
	ios, _, _, errOut := TestIO()
	b := &dashboardBackend{api: via, efo: newDashboardEFO(NewFactory(ios), via)}
	ctx, cancel := context.WithCancel(t.Context())
	var (
		mu     sync.Mutex
		polled = map[string]bool{}
		keys   []string
	)
	done := make(chan error, 1)
	go func() {
		done <- b.Read(ctx, kstream.Ref{Name: stream}, dashboard.ReadOptions{
			OnPoll:    func(s tail.PollStats) { mu.Lock(); polled[s.ShardID] = true; mu.Unlock() },
			OnRecords: func(batch []tail.Record) { mu.Lock(); keys = append(keys, recordKeys(batch)...); mu.Unlock() },
		})
	}()
	locked := func(f func() bool) func() bool { return func() bool { mu.Lock(); defer mu.Unlock(); return f() } }
	waitFor(t, 20*time.Second, "an event of every open shard", locked(func() bool { return len(polled) == 2 }))
	var recs []emulator.Rec
	for i := range 6 {
		recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("new%d", i), Data: []byte("x")})
	}
	e.Put(t, c, stream, recs)
	waitFor(t, 20*time.Second, "the records", locked(func() bool { return len(keys) == 6 }))
	arn := e.StreamARN(t, c, stream)
	if got := consumerNames(t, c, arn); !slices.Equal(got, []string{defaultConsumerName("dashboard")}) {
		t.Fatalf("consumers while sampling %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Read: %v", err)
	}
	b.efo.close()
	slices.Sort(keys)
	name := defaultConsumerName("dashboard")
	want := "the dashboard registered enhanced fan-out consumer " + name + " of stream " + stream + "\n" + efoBillingNote + "\nderegistered consumer " + name + " of stream " + stream + "\n"
	if strings.Join(keys, ",") != "new0,new1,new2,new3,new4,new5" || errOut.String() != want {
		t.Fatalf("records %v; stderr %q, want %q", keys, errOut.String(), want)
	}
}

func recordKeys(batch []tail.Record) []string {
	var keys []string
	for _, r := range batch {
		keys = append(keys, r.PartitionKey)
	}
	return keys
}

// One checkpoint file, runs taking turns polling and subscribed, each
// stopped by --max-records (which saves exactly what it printed) across a
// split: every record printed exactly once, each key in order.
func TestTailEFOSharesCheckpointWithPolling(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	endpoint, efo := tailReads[1].setup(t, e, c, stream)
	w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 6, written: map[string][]string{}}
	w.round(4)
	splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
	w.round(4)
	cp := filepath.Join(t.TempDir(), "cp.json")
	env := tailEnv(e, t, endpoint)
	var all []tailLine
	for run := 0; ; run++ {
		args := []string{"tail", stream, "--checkpoint", cp, "--max-records", "13", "--idle-exit", "2s", "--relist-interval", "1s"}
		if run%2 == 1 {
			args = efo(args...)
		}
		r := runBinary(t, env, "", args...)
		if r.code != 0 {
			t.Fatalf("run %d %v: exit %d; stderr:\n%s", run, args, r.code, r.stderr)
		}
		lines := fmTailLines(t, r.stdout)
		all = append(all, lines...)
		if len(lines) < 13 || run > 20 {
			break
		}
	}
	w.check(all, false)
	checkParentsFirstLines(t, c, stream, all)
}

// Two tails of one stream that read different shards or records get
// consumers of their own by default; the same filter shares one (and the
// second is told about it by ResourceInUseException).
func TestTailConsumerNamePerFilter(t *testing.T) {
	name := func(args ...string) string {
		t.Helper()
		r := parseFlags(t, false, append([]string{"tail", "orders", "--efo"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
		}
		return tailConsumerName(as[*TailOptions](t, r.opts))
	}
	all := name()
	if all != defaultConsumerName("") {
		t.Fatalf("an unfiltered tail's consumer is %q, want %q", all, defaultConsumerName(""))
	}
	seen := map[string][]string{all: nil}
	for _, args := range [][]string{
		{"--shard", "shardId-000000000000"}, {"--shard", "shardId-000000000001"},
		{"--key", "customer-42"}, {"--key", "customer-43"},
		{"--filter", `.payload.level == "error"`}, {"--jq", ".payload"},
		{"--shard", "shardId-000000000000", "--filter", `.payload.level == "error"`},
		{"--cwlogs"}, {"--decompress"},
		{"--filter", `.payload.level == "error"`, "--decompress"},
		{"--filter", `.payload.level == "error"`, "--cwlogs"},
	} {
		n := name(args...)
		if prev, dup := seen[n]; dup {
			t.Errorf("%q and %q share the consumer %q", args, prev, n)
		}
		seen[n] = args
		if n != name(args...) || len(n) > 128 || kstream.ValidateConsumerName(n) != nil {
			t.Errorf("%q: consumer %q", args, n)
		}
	}
}
