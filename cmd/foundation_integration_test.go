package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

func deleteAtCleanup(t *testing.T, c *kinesis.Client, name string) {
	t.Cleanup(func() {
		c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(name), EnforceConsumerDeletion: aws.Bool(true)})
	})
}

func TestCreateNewThenExisting(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	deleteAtCleanup(t, c, name)

	res := runCLI(t, "", "", "create", name, "--shards", "3", "-o", "json")
	if res.code != 0 {
		t.Fatalf("create: exit %d: %s", res.code, res.stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res.stdout)
	}
	if doc["stream"] != name || doc["status"] != "ACTIVE" || doc["openShards"] != float64(3) || doc["created"] != true {
		t.Fatalf("create -o json = %v", doc)
	}
	if !strings.Contains(res.stderr, "created stream "+name) {
		t.Fatalf("stderr = %q", res.stderr)
	}
	// Again: already exists, success, says so on stderr, notes the count.
	res = runCLI(t, "", "", "create", name, "--shards", "5")
	if res.code != 0 || !strings.Contains(res.stderr, "already exists and is ACTIVE") || !strings.Contains(res.stderr, "--shards 5 was not applied") {
		t.Fatalf("second create: exit %d, stderr %q", res.code, res.stderr)
	}
	if !strings.HasPrefix(res.stdout, "STREAM ") || !strings.Contains(res.stdout, name) {
		t.Fatalf("table = %q", res.stdout)
	}
	// Another mode asked for: noted, not applied.
	res = runCLI(t, "", "", "create", name, "--on-demand")
	if res.code != 0 || !strings.Contains(res.stderr, "is PROVISIONED with 3 open shards; --on-demand was not applied") {
		t.Fatalf("create --on-demand of a provisioned stream: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCreateOnDemand(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.OnDemand {
		t.Skipf("%s has no on-demand streams", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	deleteAtCleanup(t, c, name)
	res := runCLI(t, "", "", "create", name, "--on-demand", "-o", "json")
	if res.code != 0 || !strings.Contains(res.stdout, `"mode": "ON_DEMAND"`) {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, "", "", "create", name, "--shards", "2")
	if res.code != 0 || !strings.Contains(res.stderr, "is ON_DEMAND; --shards 2 was not applied") {
		t.Fatalf("create --shards of an on-demand stream: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCreateInvalidCounts(t *testing.T) {
	for _, args := range [][]string{
		{"create", "x", "--shards", "0"},
		{"create", "x", "--shards", "-2"},
		{"create", "x", "--shards", "10001"},
		{"create", "x"},
		{"create", "x", "--shards", "2", "--on-demand"},
		{"create", "x", "--shards", "two"},
		{"create", "x", "--shards", "2", "--wait", "-1s"},
		{"create", "bad name!", "--shards", "1"},
		{"create", "arn:aws:kinesis:us-east-1:123:stream/x", "--shards", "1"},
		{"create", "--shards", "1"},
	} {
		res := runCLI(t, "", "", args...)
		if res.code != 2 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
	}
}

// A stream that is CREATING for a few seconds is waited for (polled
// quickly, not every 10 s), by a second create too.
func TestCreateWaitsThroughCreating(t *testing.T) {
	emulator.Require(t)
	if emulator.Require(t).Backend != emulator.KinesisMock && emulator.Require(t).Backend != emulator.Kinesalite {
		t.Skip("needs timed states")
	}
	slow, err := emulator.Start(context.Background(), emulator.Options{Backend: emulator.Require(t).Backend, StateDuration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	env := slow.Env()
	name := emulator.StreamName(t)
	// Start creating without waiting, then a second create waits.
	res := runBinary(t, env, "", "create", name, "--shards", "2", "--wait", "0")
	if res.code != 0 || !strings.Contains(res.stderr, "creating stream "+name+" (not waiting)") || !strings.Contains(res.stdout, "CREATING") {
		t.Fatalf("--wait 0: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	start := time.Now()
	res = runBinary(t, env, "", "create", name, "--shards", "2")
	took := time.Since(start)
	if res.code != 0 || !strings.Contains(res.stderr, "waiting for stream "+name+" to become ACTIVE (CREATING)") ||
		!strings.Contains(res.stderr, "already existed (CREATING)") || !strings.Contains(res.stdout, "ACTIVE") {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	// The SDK waiter's first re-check would be at 10 s.
	if took > 8*time.Second {
		t.Errorf("waiting took %s", took)
	}
	// A wait shorter than CREATING times out with a clear message.
	name2 := emulator.StreamName(t)
	res = runBinary(t, env, "", "create", name2, "--shards", "1", "--wait", "500ms")
	if res.code != 1 || !strings.Contains(res.stderr, "error: stream "+name2+" is still CREATING after 500ms") {
		t.Fatalf("short wait: exit %d\n%s", res.code, res.stderr)
	}
}

func TestStreamsPagesAndCounts(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	var names []string
	for range 5 {
		n := emulator.StreamName(t)
		e.CreateStream(t, c, n, 2)
		names = append(names, n)
	}
	// Split one so total and open differ.
	if e.Caps.Reshard {
		splitShard(t, e, c, names[0], "shardId-000000000000")
	}
	inj := faults.New(1)
	proxy := inj.Proxy(t, e.Endpoint)
	ios, _, out, errOut := TestIO()
	f := NewFactory(ios)
	api := kinesis.New(e.ClientOptions(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	if err := runStreams(context.Background(), f, api, &StreamsOptions{Output: "json", PageSize: 2, Workers: 3, DescribeEvery: time.Millisecond}); err != nil {
		t.Fatalf("streams: %v\n%s", err, errOut)
	}
	if n := inj.Counts()["ListStreams"]; n < 3 {
		t.Fatalf("ListStreams called %d times; with page size 2 and ≥ 5 streams it must page", n)
	}
	var doc struct {
		Streams []streamInfo `json:"streams"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]streamInfo{}
	for _, s := range doc.Streams {
		got[s.Name] = s
	}
	for i, n := range names {
		s, ok := got[n]
		if !ok {
			t.Fatalf("stream %s missing from %v", n, doc.Streams)
		}
		wantOpen, wantTotal := 2, 2
		if i == 0 && e.Caps.Reshard {
			wantOpen, wantTotal = 3, 4
		}
		if s.Status != "ACTIVE" || s.OpenShards != wantOpen || s.TotalShards == nil || *s.TotalShards != wantTotal || s.Mode != "PROVISIONED" {
			t.Errorf("%s: %+v (total %v), want open %d total %d", n, s, s.TotalShards, wantOpen, wantTotal)
		}
	}
}

// Partial PutRecords failures (injected by a proxy that really drops the
// failed entries) are retried alone: every line written once, each key's
// records in order.
func TestPutPartialFailures(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 3)
	inj := faults.New(5, faults.Rule{Op: "PutRecords", Kind: faults.PartialPut, PartialFraction: 0.3, Prob: 0.7})
	proxy := inj.Proxy(t, e.Endpoint)
	var in strings.Builder
	written := map[string][]string{}
	for i := range 240 {
		k := fmt.Sprintf("user-%d", i%12)
		p := fmt.Sprintf("%s#%d", k, len(written[k]))
		written[k] = append(written[k], p)
		fmt.Fprintf(&in, "{\"user\":%q,\"p\":%q}\n", k, p)
	}
	ios, stdin, out, errOut := TestIO()
	stdin.WriteString(in.String())
	api := kinesis.New(e.ClientOptions(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	opts := &PutOptions{KeyField: "user", Retries: 20, Linger: 10 * time.Millisecond, Backoff: time.Millisecond, Output: "json"}
	if err := runPut(context.Background(), NewFactory(ios), api, kstream.Ref{Name: name}, opts); err != nil {
		t.Fatalf("put: %v\n%s", err, errOut)
	}
	var st putStats
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Records != 240 || st.Failed != 0 || st.Retried == 0 || inj.Fired()["PutRecords/PartialPut"] == 0 {
		t.Fatalf("stats %+v, fired %v", st, inj.Fired())
	}
	got := map[string][]string{}
	for _, recs := range e.ReadAll(t, c, name) {
		for _, r := range recs {
			var v struct{ User, P string }
			json.Unmarshal(r.Data, &v)
			got[v.User] = append(got[v.User], v.P)
		}
	}
	for k, want := range written {
		if !slices.Equal(got[k], want) {
			t.Fatalf("key %s stored %v, want %v", k, got[k], want)
		}
	}
}

func TestMissingStreamAndUnreachableEndpoint(t *testing.T) {
	e := emulator.Require(t)
	name := emulator.StreamName(t)
	for _, args := range [][]string{{"put", name}, {"tail", name, "--no-checkpoint"}, {"tree", name}} {
		res := runBinary(t, nil, "x\n", args...)
		want := fmt.Sprintf("error: stream %q was not found in region us-east-1 (endpoint %s)\n", name, e.Endpoint)
		if res.code != 1 || res.stderr != want || res.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want %q", args, res.code, res.stdout, res.stderr, want)
		}
	}

	// Refused connection: fails at once and names the endpoint.
	env := append(e.Env(), "AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:1")
	start := time.Now()
	res := runBinary(t, env, "", "streams")
	if res.code != 1 || !strings.HasPrefix(res.stderr, "error: cannot reach the Kinesis endpoint http://127.0.0.1:1: ") || strings.Count(res.stderr, "\n") != 1 {
		t.Fatalf("refused: exit %d, stderr %q", res.code, res.stderr)
	}
	t.Logf("refused endpoint failed in %s", time.Since(start))

	// A listener that accepts and never answers: bounded by the client's
	// timeouts, not a hang. The test shortens nothing: it measures the real
	// bound of a silent endpoint.
	if testing.Short() {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	env = append(e.Env(), "AWS_ENDPOINT_URL_KINESIS=http://"+ln.Addr().String())
	start = time.Now()
	res = runBinary(t, env, "", "streams")
	took := time.Since(start)
	if took > operationTimeout+10*time.Second {
		t.Errorf("a silent endpoint took %s to fail", took)
	}
	if res.code != 1 || !strings.Contains(res.stderr, "http://"+ln.Addr().String()) {
		t.Fatalf("silent endpoint: exit %d, stderr %q", res.code, res.stderr)
	}
	t.Logf("silent endpoint failed in %s: %s", took, strings.TrimSpace(res.stderr))
}

func TestCredentialsMessage(t *testing.T) {
	e := emulator.Require(t)
	var env []string
	for _, kv := range e.Env() {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			env = append(env, kv)
		}
	}
	res := runBinary(t, env, "", "streams")
	if res.code != 1 || !strings.HasPrefix(res.stderr, "error: no usable AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, choose a profile with --profile or AWS_PROFILE, or run `aws sso login`") {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestDebugLogNamesCallsNotSecrets(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	env := append(e.Env(), "AWS_SESSION_TOKEN=FAKESESSIONTOKENVALUE")
	res := runBinary(t, env, "a\nb\n", "put", name, "--debug")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"debug: Kinesis DescribeStreamSummary stream=" + name + " status=200 attempts=1 latency=", "debug: Kinesis PutRecords stream=" + name + " records=2 status=200"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("debug log lacks %q:\n%s", want, res.stderr)
		}
	}
	for _, secret := range []string{e.AccessKeyID(), "kinesis-shards-test", "FAKESESSIONTOKENVALUE", "Signature=", "Authorization"} {
		if strings.Contains(res.stderr, secret) {
			t.Errorf("debug log contains %q:\n%s", secret, res.stderr)
		}
	}
}

var _ = types.StreamStatusActive
