package cmd

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// runCLIEndpoint runs the CLI against a Kinesis endpoint of the test's own
// (no emulator), with static credentials.
func runCLIEndpoint(t *testing.T, endpoint, stdin string, args ...string) cliResult {
	t.Helper()
	ios, in, out, errOut := TestIO()
	in.WriteString(stdin)
	f := NewFactory(ios)
	f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
		if region == "" {
			region = "us-east-1"
		}
		cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
			HTTPClient: &http.Client{Timeout: 30 * time.Second}, Retryer: awscall.KinesisRetryer}
		return newKinesisClient(cfg, clientConfig{EndpointURL: endpoint}), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, f, args)
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// syncText is a stderr the server writes while the test reads it.
type syncText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncText) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncText) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLocal runs `kinesis-shards local` on a free port until the test
// ends and returns its URL, its stdout (the export lines) and its stderr.
// Options left zero get the command's defaults.
func startLocal(t *testing.T, o LocalOptions) (url, stdout string, stderr *syncText) {
	t.Helper()
	ios, _, out, _ := TestIO()
	stderr = &syncText{}
	ios.ErrOut = stderr
	f := NewFactory(ios)
	ready := make(chan string, 1)
	o.Host, o.ready = "127.0.0.1", func(u string) { ready <- u }
	if o.ShardLimit == 0 {
		o.ShardLimit = 500
	}
	if o.MaxBytesText == "" {
		o.MaxBytesText = "1GiB"
	}
	if o.Retention == 0 {
		o.Retention = 24 * time.Hour
	}
	o.Quotas = true
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.run(ctx, f) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local stopped with %v", err)
		}
	})
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("local: %v", err)
	}
	return url, out.String(), stderr
}

// The commands work against `kinesis-shards local` as against the service:
// create, put, tree, split with a preview, and a tail that reads the
// parent to its end before the children, every key in order.
func TestLocalServesTheCommands(t *testing.T) {
	url, exports, _ := startLocal(t, LocalOptions{})
	if !strings.Contains(exports, "export AWS_ENDPOINT_URL_KINESIS="+url+"\n") || !strings.Contains(exports, "export AWS_REGION=us-east-1\n") {
		t.Fatalf("export lines:\n%s", exports)
	}
	run := func(stdin string, args ...string) cliResult {
		t.Helper()
		r := runCLIEndpoint(t, url, stdin, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	run("", "create", "orders", "--shards", "1")
	var in strings.Builder
	for i := range 40 {
		in.WriteString(`{"k":"key-` + string(rune('a'+i%4)) + `","n":` + strings.Repeat("1", i%3+1) + "}\n")
	}
	run(in.String(), "put", "orders", "--key-field", "k")
	run("", "split", "orders", "shardId-000000000000", "--yes")
	run(in.String(), "put", "orders", "--key-field", "k")
	tree := run("", "tree", "orders")
	for _, id := range []string{"shardId-000000000000", "shardId-000000000001", "shardId-000000000002"} {
		if !strings.Contains(tree.stdout, strings.TrimPrefix(id, "shardId-00000000000")) {
			t.Fatalf("tree has no %s:\n%s", id, tree.stdout)
		}
	}
	tail := run("", "tail", "orders", "--no-checkpoint", "--idle-exit", "1s", "-o", "json")
	if n := strings.Count(tail.stdout, "\n"); n != 80 {
		t.Fatalf("tail printed %d records, want 80:\n%s", n, tail.stdout)
	}
	// The parent's records come before any child's.
	lastParent, firstChild := -1, -1
	for i, l := range strings.Split(strings.TrimSpace(tail.stdout), "\n") {
		if strings.Contains(l, `"shardId":"shardId-000000000000"`) {
			lastParent = i
		} else if firstChild < 0 {
			firstChild = i
		}
	}
	if lastParent != 39 || firstChild != 40 {
		t.Fatalf("parent's records end at %d, children's start at %d", lastParent, firstChild)
	}
	// The same through enhanced fan-out: a consumer registered for the
	// run, SubscribeToShard's event stream, deregistered at the end.
	// Each shard's records are the same, in the same order, and the
	// parent's come first (the two children's may interleave either way).
	efo := run("", "tail", "orders", "--efo", "--no-checkpoint", "--idle-exit", "2s", "-o", "json")
	byShard := func(out string) map[string][]string {
		m := map[string][]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			shard, _, _ := strings.Cut(strings.TrimPrefix(l, `{"shardId":"`), `"`)
			m[shard] = append(m[shard], l)
		}
		return m
	}
	if got, want := byShard(efo.stdout), byShard(tail.stdout); !reflect.DeepEqual(got, want) {
		t.Fatalf("--efo printed\n%s\nwant, shard by shard, what polling printed\n%s", efo.stdout, tail.stdout)
	}
	if !strings.HasPrefix(efo.stdout, strings.Join(byShard(tail.stdout)["shardId-000000000000"], "\n")+"\n") {
		t.Fatalf("--efo did not print the parent's records first:\n%s", efo.stdout)
	}
	if consumers := run("", "consumers", "orders", "-o", "json"); !strings.Contains(consumers.stdout, `"consumers": []`) {
		t.Fatalf("a consumer is left: %s", consumers.stdout)
	}
}

// --host other than loopback is said on stderr; bad flags are usage errors.
func TestLocalFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "--port", "70000"}, "--port must be from 0 to 65535, not 70000"},
		{[]string{"local", "--shard-limit", "0"}, "--shard-limit must be at least 1"},
		{[]string{"local", "--state-delay", "-1s"}, "--state-delay must not be negative"},
		{[]string{"local", "extra"}, "takes no arguments"},
		{[]string{"local", "--faults", "throttle=2"}, `--faults: "throttle=2": the probability must be a number more than 0 and at most 1`},
		{[]string{"local", "--faults", "slow=0.1"}, `--faults: "slow=0.1": unknown fault "slow": use throttle, error or expire`},
		{[]string{"local", "--faults", "expire:PutRecord=0.5"}, `--faults: "expire:PutRecord=0.5": expire applies to GetRecords only`},
		{[]string{"local", "--max-bytes", "12XB"}, `--max-bytes: "12XB" is not a size: give bytes, or KiB, MiB or GiB`},
		{[]string{"local", "--max-bytes", "-1"}, `--max-bytes: "-1" is not a size`},
		{[]string{"local", "--max-bytes", "1000"}, "--max-bytes 1000 is less than 1MiB"},
		{[]string{"local", "--retention", "30s"}, "--retention must be from 1m to 8760h, not 30s"},
		{[]string{"local", "--retention", "9000h"}, "--retention must be from 1m to 8760h"},
	} {
		r := runCLIEndpoint(t, "http://127.0.0.1:1", "", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// --faults throttle=1 throttles every call: put reports the throttling of
// its first call. throttle:PutRecords=1 throttles every write only: put
// retries, then reports the throttling and fails; the other calls are
// served.
func TestLocalFaults(t *testing.T) {
	all, _, _ := startLocal(t, LocalOptions{Faults: "throttle=1"})
	if r := runCLIEndpoint(t, all, "one\n", "put", "orders"); r.code == 0 || !strings.Contains(r.stderr, "limit exceeded") || !strings.Contains(r.stderr, "injected fault") {
		t.Fatalf("put with every call throttled: exit %d, stderr %s", r.code, r.stderr)
	}

	url, _, stderr := startLocal(t, LocalOptions{Faults: "throttle:PutRecords=1,seed=1"})
	if !strings.Contains(stderr.String(), "faults: throttle:PutRecords=1,seed=1") {
		t.Fatalf("local's stderr does not say the faults: %q", stderr.String())
	}
	if r := runCLIEndpoint(t, url, "", "create", "orders", "--shards", "1"); r.code != 0 {
		t.Fatalf("create: exit %d, %s", r.code, r.stderr)
	}
	r := runCLIEndpoint(t, url, "one\n", "put", "orders", "--retries", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "still failed after 2 retries") ||
		!strings.Contains(r.stderr, "ProvisionedThroughputExceededException") || !strings.Contains(r.stderr, "injected fault") {
		t.Fatalf("put: exit %d, stderr %s", r.code, r.stderr)
	}
	tail := runCLIEndpoint(t, url, "", "tail", "orders", "--no-checkpoint", "--idle-exit", "1s", "-o", "json")
	if tail.code != 0 || tail.stdout != "" {
		t.Fatalf("tail after a throttled put: exit %d, stdout %q, stderr %s", tail.code, tail.stdout, tail.stderr)
	}
}

// --retention is the period new streams report; over --max-bytes the
// oldest record goes, TRIM_HORIZON starts after it, and stderr says so.
func TestLocalRetentionAndMaxBytes(t *testing.T) {
	url, _, stderr := startLocal(t, LocalOptions{Retention: 2 * time.Hour, MaxBytesText: "1MiB"})
	create := runCLIEndpoint(t, url, "", "create", "orders", "--shards", "1", "-o", "json")
	if create.code != 0 || !strings.Contains(create.stdout, `"retentionHours": 2`) {
		t.Fatalf("create: exit %d, stdout %s, stderr %s", create.code, create.stdout, create.stderr)
	}
	var in strings.Builder
	for _, c := range "abc" { // three records of 400 KiB: 1.2 MiB
		in.WriteString(strings.Repeat(string(c), 400<<10) + "\n")
	}
	if r := runCLIEndpoint(t, url, in.String(), "put", "orders", "--key", "k"); r.code != 0 {
		t.Fatalf("put: exit %d, %s", r.code, r.stderr)
	}
	tail := runCLIEndpoint(t, url, "", "tail", "orders", "--no-checkpoint", "--idle-exit", "1s", "-o", "raw")
	if tail.code != 0 || tail.stdout != strings.Join(strings.Split(in.String(), "\n")[1:], "\n") {
		t.Fatalf("tail: exit %d, %d bytes, starting %.10q; want the last two records", tail.code, len(tail.stdout), tail.stdout)
	}
	if n := strings.Count(stderr.String(), "reached --max-bytes (1.0 MiB)"); n != 1 {
		t.Fatalf("local said it trims %d times: %q", n, stderr.String())
	}
}
