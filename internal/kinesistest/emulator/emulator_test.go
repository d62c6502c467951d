package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

func TestMain(m *testing.M) { os.Exit(Main(m, Options{})) }

// needBackend skips (or, in CI, fails) when b cannot run here. moto is
// opt-in: it is skipped even in CI.
func needBackend(t *testing.T, b Backend) {
	t.Helper()
	if err := Available(b); err != nil {
		if InCI() && b != Moto {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func startT(t *testing.T, o Options) *Emulator {
	t.Helper()
	needBackend(t, o.Backend)
	e, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("%s (pid %d) ready in %v", e.Backend, e.PID, e.StartupTime.Round(time.Millisecond))
	return e
}

// TestStartStop starts each backend, uses it and stops it, and checks that
// nothing is left: no process, no listener, no temporary log directory.
func TestStartStop(t *testing.T) {
	for _, tc := range []struct {
		b    Backend
		opts Options
	}{
		// INITIALIZE_STREAMS lands in the package's account because Start
		// sets kinesis-mock's AWS_ACCOUNT_ID to it.
		{Fake, Options{}},
		{KinesisMock, Options{Env: []string{"INITIALIZE_STREAMS=initialized:3"}}},
		{Kinesalite, Options{}},
		{Moto, Options{}},
	} {
		t.Run(string(tc.b), func(t *testing.T) {
			tc.opts.Backend = tc.b
			e := startT(t, tc.opts)
			if e.Caps != CapsOf(tc.b) || !strings.HasPrefix(e.Endpoint, "http://127.0.0.1:") {
				t.Fatalf("emulator = %+v", e)
			}
			c := e.Client(t, func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
			name := StreamName(t)
			e.CreateStream(t, c, name, 2)

			out, err := c.ListStreams(t.Context(), &kinesis.ListStreamsInput{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(out.StreamNames, name) {
				t.Fatalf("ListStreams = %v, want %s in it", out.StreamNames, name)
			}
			if tc.b == KinesisMock {
				e.WaitActive(t, c, "initialized")
				s, err := c.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("initialized")})
				if err != nil {
					t.Fatal(err)
				}
				if n := aws.ToInt32(s.StreamDescriptionSummary.OpenShardCount); n != 3 {
					t.Errorf("initialized stream has %d open shards, want 3", n)
				}
			}

			lim, err := c.DescribeLimits(t.Context(), &kinesis.DescribeLimitsInput{})
			switch {
			case e.Caps.DescribeLimits && err != nil:
				t.Errorf("DescribeLimits: %v", err)
			case e.Caps.DescribeLimits && e.Caps.ShardLimit && aws.ToInt32(lim.ShardLimit) != 1000:
				t.Errorf("DescribeLimits shard limit = %d, want Options' default 1000", aws.ToInt32(lim.ShardLimit))
			case !e.Caps.DescribeLimits && err == nil:
				t.Errorf("DescribeLimits works on %s: update Caps", e.Backend)
			}

			recs := []Rec{{"a", []byte("one"), ""}, {"b", []byte("two"), ""}, {"c", []byte("three"), ""}}
			res := e.Put(t, c, name, recs)
			got := e.ReadAll(t, c, name)
			if len(got) != 2 {
				t.Fatalf("read %d shards, want 2", len(got))
			}
			for i, r := range res {
				idx := slices.IndexFunc(got[aws.ToString(r.ShardId)], func(g types.Record) bool {
					return aws.ToString(g.SequenceNumber) == aws.ToString(r.SequenceNumber)
				})
				if idx < 0 || string(got[aws.ToString(r.ShardId)][idx].Data) != string(recs[i].Data) {
					t.Errorf("record %d (%s/%s) not read back", i, aws.ToString(r.ShardId), aws.ToString(r.SequenceNumber))
				}
			}

			pid, dir := e.PID, e.dir
			began := time.Now()
			if err := e.Stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
			if err := e.Stop(); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if e.Running() {
				t.Error("Running after Stop")
			}
			if pid != 0 {
				assertGone(t, pid)
			}
			if portAnswers(e.plainPort) {
				t.Errorf("port %d still answers after Stop", e.plainPort)
			}
			if _, err := os.Stat(dir); dir != "" && !os.IsNotExist(err) {
				t.Errorf("temporary log dir %s left after Stop (%v)", dir, err)
			}
		})
	}
}

// TestStartPortAnswers: a port that already accepts connections is refused
// before anything is started (a probe would reach the other server).
func TestStartPortAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	for _, o := range []Options{
		{Backend: KinesisMock, Port: busy},
		{Backend: KinesisMock, TLSPort: busy},
		{Backend: Kinesalite, Port: busy},
	} {
		t.Run(fmt.Sprintf("%s/%d/%d", o.Backend, o.Port, o.TLSPort), func(t *testing.T) {
			needBackend(t, o.Backend)
			e, err := Start(t.Context(), o)
			if err == nil {
				e.Stop()
				t.Fatal("Start succeeded on a busy port")
			}
			if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), strconv.Itoa(busy)) {
				t.Fatalf("err = %v, want ErrPortInUse naming port %d", err, busy)
			}
			assertNoChildren(t)
		})
	}
}

// TestStartExitsEarly: when the emulator dies before it is ready, Start
// returns at once with the log's tail, and leaves no process behind.
func TestStartExitsEarly(t *testing.T) {
	t.Run("missing certificate", func(t *testing.T) {
		needBackend(t, KinesisMock)
		began := time.Now()
		_, err := Start(t.Context(), Options{Backend: KinesisMock, Env: []string{"KINESIS_MOCK_CERT_PATH=/nonexistent/server.json"}})
		if err == nil {
			t.Fatal("Start succeeded without a certificate")
		}
		t.Logf("failed after %v: %v", time.Since(began).Round(time.Millisecond), err)
		if !strings.Contains(err.Error(), "JavaScriptNoSuchFileException") || !strings.Contains(err.Error(), "exited before it was ready") {
			t.Fatalf("err = %v, want the log's tail with JavaScriptNoSuchFileException", err)
		}
		if errors.Is(err, ErrPortInUse) {
			t.Fatal("missing certificate reported as a busy port")
		}
		assertNoChildren(t)
	})
	t.Run("unit-less duration", func(t *testing.T) {
		needBackend(t, KinesisMock)
		_, err := Start(t.Context(), Options{Backend: KinesisMock, Env: []string{"CREATE_STREAM_DURATION=0"}})
		if err == nil || !strings.Contains(err.Error(), "Duration") {
			t.Fatalf("err = %v, want the log's tail about the Duration", err)
		}
		assertNoChildren(t)
	})
}

// TestStartBindFails: the port is held by a socket that is bound but not
// listening, so the pre-check's dial is refused and the emulator itself
// fails to bind; with the port fixed, Start reports its EADDRINUSE.
func TestStartBindFails(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a bound, non-listening socket (Linux semantics)")
	}
	port, release := bindOnly(t)
	defer release()
	for _, o := range []Options{
		{Backend: KinesisMock, TLSPort: port},
		{Backend: Kinesalite, Port: port},
	} {
		t.Run(string(o.Backend), func(t *testing.T) {
			needBackend(t, o.Backend)
			_, err := Start(t.Context(), o)
			if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "EADDRINUSE") {
				t.Fatalf("err = %v, want ErrPortInUse with the log's EADDRINUSE", err)
			}
			assertNoChildren(t)
		})
	}
}

// TestRestart keeps the endpoint, replaces the process and loses the state.
func TestRestart(t *testing.T) {
	for _, b := range []Backend{Fake, Kinesalite} {
		t.Run(string(b), func(t *testing.T) {
			e := startT(t, Options{Backend: b})
			c := e.Client(t)
			name := StreamName(t)
			e.CreateStream(t, c, name, 1)
			pid, endpoint := e.PID, e.Endpoint
			if err := e.Restart(t.Context()); err != nil {
				t.Fatal(err)
			}
			// The fake runs in the test process: no pid, before or after.
			newPID := (b == Fake) == (e.PID == 0) && (b == Fake || e.PID != pid)
			if e.Endpoint != endpoint || !newPID || !e.Running() || e.Attached() {
				t.Fatalf("after Restart: endpoint %s (was %s), pid %d (was %d), running %v, attached %v", e.Endpoint, endpoint, e.PID, pid, e.Running(), e.Attached())
			}
			if pid != 0 {
				assertGone(t, pid)
			}
			out, err := c.ListStreams(t.Context(), &kinesis.ListStreamsInput{})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.StreamNames) != 0 {
				t.Fatalf("streams after Restart = %v, want none (in-memory state)", out.StreamNames)
			}
		})
	}
}

// TestCrash: an emulator that dies under the tests is reported by Stop,
// with its log kept for a look.
func TestCrash(t *testing.T) {
	needBackend(t, Kinesalite)
	e, err := Start(t.Context(), Options{Backend: Kinesalite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(e.dir) })
	p, _ := os.FindProcess(e.PID)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	for e.Running() {
		time.Sleep(10 * time.Millisecond)
	}
	err = e.Stop()
	if err == nil || !strings.Contains(err.Error(), "exited before Stop") || !strings.Contains(err.Error(), "kinesalite listening") {
		t.Fatalf("Stop = %v, want the crash reported with the log's tail", err)
	}
	if _, err := os.Stat(e.LogPath); err != nil {
		t.Fatalf("log of a crashed emulator removed: %v", err)
	}
	if err := e.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestAttach(t *testing.T) {
	e := Require(t)
	a, err := Attach(t.Context(), e.Endpoint+"/", e.Backend)
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint != e.Endpoint || a.PID != 0 || a.AccessKeyID() != e.AccessKeyID() {
		t.Fatalf("Attach = %+v", a)
	}
	if err := a.Stop(); err != nil || !e.Running() {
		t.Fatalf("Stop of an attached emulator: %v; package emulator running: %v", err, e.Running())
	}

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := Attach(ctx, dead, KinesisMock); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("Attach to a closed port: %v", err)
	}
}

// TestMainWithoutNode runs this package's tests in a child whose PATH has
// no node: Main starts nothing; the emulator tests skip with one line, or
// the package fails when CI is set.
func TestMainWithoutNode(t *testing.T) {
	if os.Getenv(EnvBackend) == string(Moto) || os.Getenv(EnvEndpoint) != "" {
		t.Skip("checks the node backends started by Main")
	}
	run := func(ci string, b Backend) (string, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestWaitDeleted$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "CI="+ci, EnvBackend+"="+string(b))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	node := Backend(os.Getenv(EnvBackend))
	if node == "" || node == Fake {
		node = KinesisMock
	}
	// The default backend needs nothing but the test binary: with CI set
	// and no node, the emulator tests run.
	out, err := run("true", Fake)
	if err != nil || !strings.Contains(out, "--- PASS: TestWaitDeleted") {
		t.Errorf("the fake without node, CI set: %v\n%s", err, out)
	}
	out, err = run("", node)
	if err != nil || !strings.Contains(out, "--- SKIP: TestWaitDeleted") || !strings.Contains(out, "needs node on PATH") || strings.Contains(out, "ready at") {
		t.Errorf("without CI: %v\n%s", err, out)
	}
	out, err = run("true", node)
	if err == nil || !strings.Contains(out, "FAIL: emulator:") || strings.Contains(out, "=== RUN") {
		t.Errorf("with CI: %v\n%s", err, out)
	}
}

func TestRequire(t *testing.T) {
	if current == nil {
		t.Skip("needs the package emulator: ", unavailable)
	}
	saved, savedWhy := current, unavailable
	t.Cleanup(func() { current, unavailable = saved, savedWhy })
	if got := Require(t); got != saved {
		t.Fatalf("Require = %p, want the package emulator %p", got, saved)
	}

	current, unavailable = nil, "kinesis-mock needs node on PATH"
	t.Setenv("CI", "")
	if r := runTB(t, func(tb testing.TB) { Require(tb) }); r.skipped != "emulator: kinesis-mock needs node on PATH" || r.failed != "" {
		t.Errorf("without CI: %+v, want a one-line skip", r)
	}
	t.Setenv("CI", "true")
	if r := runTB(t, func(tb testing.TB) { Require(tb) }); r.failed == "" || r.skipped != "" {
		t.Errorf("with CI: %+v, want a failure", r)
	}
	t.Setenv("CI", "false")
	if InCI() {
		t.Error("CI=false counts as CI")
	}
}

// TestEnv runs this test binary as "the real binary": the SDK's config
// loader, given only e.Env(), must reach the emulator with the package's
// account, whatever AWS_* the developer has set.
func TestEnv(t *testing.T) {
	if stream := os.Getenv("EMULATOR_TEST_HELPER_STREAM"); stream != "" {
		helperListStreams(t, stream)
		return
	}
	e := Require(t)
	c := e.Client(t)
	name := StreamName(t)
	e.CreateStream(t, c, name, 1)

	// A developer's machine: each of these would break or redirect the child.
	t.Setenv("AWS_PROFILE", "no-such-profile")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIADEVELOPER")
	t.Setenv("AWS_SESSION_TOKEN", "developer-token")
	t.Setenv("AWS_CA_BUNDLE", "/no/such/bundle.pem")

	env := e.Env()
	for _, kv := range env {
		if strings.Contains(kv, "no-such-profile") || strings.Contains(kv, "AKIADEVELOPER") || strings.HasPrefix(kv, "AWS_SESSION_TOKEN=") {
			t.Errorf("Env leaks %s", kv)
		}
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestEnv$", "-test.count=1")
	cmd.Env = append(env, "EMULATOR_TEST_HELPER_STREAM="+name, EnvEndpoint+"="+e.Endpoint, EnvBackend+"="+string(e.Backend))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func helperListStreams(t *testing.T, stream string) {
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, err := kinesis.NewFromConfig(cfg).ListStreams(t.Context(), &kinesis.ListStreamsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out.StreamNames, stream) {
		t.Fatalf("ListStreams = %v, want %s (the parent's account)", out.StreamNames, stream)
	}
}

func TestWaitDeleted(t *testing.T) {
	e := Require(t)
	c := e.Client(t)
	name := StreamName(t)
	e.CreateStream(t, c, name, 1)
	if _, err := c.DeleteStream(t.Context(), &kinesis.DeleteStreamInput{StreamName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	e.WaitDeleted(t, c, name)
	_, err := c.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("after WaitDeleted: %v, want ResourceNotFoundException", err)
	}
}

// TestPut writes more than one batch and reads every record back where Put
// said it went, in order within each shard.
func TestPut(t *testing.T) {
	e := Require(t)
	c := e.Client(t)
	name := StreamName(t)
	e.CreateStream(t, c, name, 2)
	recs := make([]Rec, 700)
	for i := range recs {
		recs[i] = Rec{PartitionKey: strconv.Itoa(i), Data: []byte(fmt.Sprintf("record-%04d", i))}
	}
	res := e.Put(t, c, name, recs)
	got := e.ReadAll(t, c, name)
	want := map[string][]string{}
	for i, r := range res {
		want[aws.ToString(r.ShardId)] = append(want[aws.ToString(r.ShardId)], string(recs[i].Data))
	}
	total := 0
	for shard, rs := range got {
		var data []string
		for _, r := range rs {
			data = append(data, string(r.Data))
		}
		if !slices.Equal(data, want[shard]) {
			t.Errorf("shard %s holds %d records, want %d in Put's order", shard, len(data), len(want[shard]))
		}
		total += len(rs)
	}
	if total != len(recs) {
		t.Errorf("read %d records, want %d", total, len(recs))
	}
}

func TestBatches(t *testing.T) {
	mb := make([]byte, 1<<20)
	for _, tc := range []struct {
		name string
		recs []Rec
		want [][2]int
	}{
		{"empty", nil, nil},
		{"one", make([]Rec, 1), [][2]int{{0, 1}}},
		{"by count", make([]Rec, 1201), [][2]int{{0, 500}, {500, 1000}, {1000, 1201}}},
		{"by size", slices.Repeat([]Rec{{PartitionKey: "k", Data: mb[:1<<20-1]}}, 6), [][2]int{{0, 5}, {5, 6}}},
		{"oversized alone", []Rec{{Data: make([]byte, 6<<20)}, {Data: mb}}, [][2]int{{0, 1}, {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := batches(tc.recs); !slices.Equal(got, tc.want) {
				t.Fatalf("batches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStreamName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
	seen := map[string]bool{}
	for _, tc := range []struct{ in, prefix string }{
		{"TestX", "TestX-"},
		{"TestX/sub case/ü#1", "TestX.sub_case.___1-"},
		{strings.Repeat("n", 300), strings.Repeat("n", 100)},
		{"", "stream-"},
	} {
		for range 50 {
			got := streamName(tc.in)
			if !valid.MatchString(got) || !strings.HasPrefix(got, tc.prefix) || seen[got] {
				t.Fatalf("streamName(%q) = %q: want valid, unique, prefix %q", tc.in, got, tc.prefix)
			}
			seen[got] = true
		}
	}
	if got := StreamName(t); !strings.HasPrefix(got, "TestStreamName-") {
		t.Errorf("StreamName = %q", got)
	}
}

func TestAccountID(t *testing.T) {
	here := AccountID()
	if !regexp.MustCompile(`^\d{12}$`).MatchString(here) || here == "000000000000" || AccountID() != here {
		t.Fatalf("AccountID = %q: want 12 stable digits, not the default account", here)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	if AccountID() == here {
		t.Fatal("two package directories share an account id")
	}
}

// runTB runs f with a testing.TB that records Skip and Fatal instead of
// acting on t.
func runTB(t *testing.T, f func(testing.TB)) recTB {
	r := &recTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return *r
}

type recTB struct {
	testing.TB
	skipped, failed string
}

func (r *recTB) Helper() {}
func (r *recTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recTB) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// assertGone fails unless no process has the pid any more (reaped: no
// zombie either).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); runtime.GOOS == "linux" && err == nil {
		t.Errorf("process %d still exists", pid)
	}
}

// assertNoChildren fails if this test process has a child other than the
// package emulator: a failed Start must not leave one, running or zombie.
func assertNoChildren(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	for _, pid := range children(t) {
		if current == nil || pid != current.PID {
			t.Errorf("stray child process %d", pid)
		}
	}
}
