package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// Flags and arguments of `consumers`, with no client and no emulator.
func TestConsumersFlagErrors(t *testing.T) {
	for _, tc := range []usageCase{
		{args: []string{"consumers"}, msg: "kinesis-shards consumers takes STREAM (got 0 argument(s))"},
		{args: []string{"consumers", "orders", "more"}, msg: "takes STREAM (got 2 argument(s))"},
		{args: []string{"consumers", "bad name"}, msg: `"bad name" is not a stream name`},
		{args: []string{"consumers", "orders", "--register", "a", "--deregister", "b", "--yes"}, msg: "--register and --deregister do not go together"},
		{args: []string{"consumers", "orders", "--register", "a b"}, msg: `--register: invalid consumer name: "a b" is not 1 to 128 characters of a-z, A-Z, 0-9, _ . -`},
		{args: []string{"consumers", "orders", "--register", ""}, msg: `--register: invalid consumer name: ""`},
		{args: []string{"consumers", "orders", "--register", strings.Repeat("c", 129)}, msg: "--register: invalid consumer name"},
		{args: []string{"consumers", "orders", "--deregister", "x/y", "--yes"}, msg: `--deregister: invalid consumer name: "x/y"`},
		{args: []string{"consumers", "orders", "--deregister", "x"}, msg: "stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview"},
		{args: []string{"consumers", "orders", "--yes"}, msg: "--yes and --dry-run go with --deregister NAME"},
		{args: []string{"consumers", "orders", "--register", "x", "--dry-run"}, msg: "--yes and --dry-run go with --deregister NAME"},
		{args: []string{"consumers", "orders", "--register", "x", "--wait", "-1s"}, msg: "--wait must not be negative"},
		{args: []string{"consumers", "orders", "-o", "yaml"}, msg: `unknown output format "yaml": use one of table, json`},
		{args: []string{"consumers", flagARN, "--region", "us-east-1"}, msg: "--region us-east-1 disagrees with the stream ARN's region eu-west-1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := parseFlags(t, tc.tty, tc.args...)
			if r.opts != nil {
				t.Errorf("the command ran with %+v", r.opts)
			}
			checkFailure(t, cliResult{stdout: r.stdout, stderr: r.stderr, code: r.code}, exitUsage, tc.msg)
		})
	}
}

func TestConsumersFlagOptions(t *testing.T) {
	for _, tc := range []flagOK{
		{[]string{"consumers", "orders"}, false, func(t *testing.T, o any) {
			c := as[*ConsumersOptions](t, o)
			if c.Ref.Name != "orders" || c.Output != "table" || c.Register != "" || c.Deregister != "" || c.Wait != time.Minute {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"consumers", flagARN, "--register", "audit.reader-1", "--wait", "0", "-o", "json"}, false, func(t *testing.T, o any) {
			c := as[*ConsumersOptions](t, o)
			if c.Ref.ARN != flagARN || c.Ref.Region != "eu-west-1" || c.Register != "audit.reader-1" || c.Wait != 0 || c.Output != "json" {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"consumers", "orders", "--deregister", "x", "--yes"}, false, func(t *testing.T, o any) {
			if c := as[*ConsumersOptions](t, o); c.Deregister != "x" || !c.Yes || c.DryRun {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"consumers", "orders", "--deregister", "x", "--dry-run"}, false, func(t *testing.T, o any) {
			if c := as[*ConsumersOptions](t, o); c.Deregister != "x" || !c.DryRun {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"consumers", "orders", "--deregister", "x"}, true, func(t *testing.T, o any) {
			if c := as[*ConsumersOptions](t, o); c.Deregister != "x" || c.Yes {
				t.Errorf("%+v", c)
			}
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := parseFlags(t, tc.tty, tc.args...)
			if r.code != exitOK || r.stderr != "" || r.stdout != "" || r.opts == nil {
				t.Fatalf("exit %d, stdout %q, stderr %q, ran: %v", r.code, r.stdout, r.stderr, r.opts != nil)
			}
			tc.check(t, r.opts)
		})
	}
}

// consumerStream is a one-shard stream on the emulator, its ARN and a
// direct client; consumers left registered at the end fail the test.
func consumerStream(t *testing.T, names ...string) (*emulator.Emulator, *kinesis.Client, string, string) {
	t.Helper()
	e := emulator.Require(t)
	if !e.Caps.Consumers {
		t.Skipf("emulator: %s has no stream consumers", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	arn := e.StreamARN(t, c, name)
	for _, n := range names {
		e.DeregisterAtEnd(t, c, arn, n)
	}
	return e, c, name, arn
}

func consumerNames(t *testing.T, c *kinesis.Client, arn string) []string {
	t.Helper()
	out, err := c.ListStreamConsumers(t.Context(), &kinesis.ListStreamConsumersInput{StreamARN: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range out.Consumers {
		names = append(names, aws.ToString(x.ConsumerName))
	}
	return names
}

// The whole life of a consumer through the command, against kinesis-mock.
func TestConsumersCommand(t *testing.T) {
	_, c, name, arn := consumerStream(t, "audit")
	poll := []string{"--wait", "30s"}

	// An empty list: nothing on stdout, a note on stderr; [] in JSON.
	r := runCLI(t, "", "", "consumers", name)
	if r.code != 0 || r.stdout != "" || r.stderr != "stream "+name+" has no consumers\n" {
		t.Fatalf("empty list: %+v", r)
	}
	r = runCLI(t, "", "", "consumers", name, "-o", "json")
	if r.code != 0 || !sameJSON(t, r.stdout, fmt.Sprintf(`{"stream":%q,"streamArn":%q,"consumers":[]}`, name, arn)) {
		t.Fatalf("empty json: %+v", r)
	}

	// Register: waits for ACTIVE, says what it costs.
	r = runCLI(t, "", "", append([]string{"consumers", name, "--register", "audit", "-o", "json"}, poll...)...)
	var reg struct {
		Stream, StreamArn string
		Consumer          consumerInfo
		Created           bool
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &reg) != nil || !reg.Created || reg.Consumer.Name != "audit" ||
		reg.Consumer.Status != "ACTIVE" || !strings.HasPrefix(reg.Consumer.ARN, arn+"/consumer/audit:") || reg.StreamArn != arn {
		t.Fatalf("register: %+v", r)
	}
	if !strings.Contains(r.stderr, "registered consumer audit of stream "+name+"\n"+efoBillingNote+"\n") {
		t.Fatalf("register stderr %q", r.stderr)
	}
	// Again: the same consumer, left as it is.
	r = runCLI(t, "", "", "consumers", name, "--register", "audit")
	if r.code != 0 || !strings.Contains(r.stderr, "consumer audit of stream "+name+" already exists (ACTIVE)") || strings.Contains(r.stderr, "billed") ||
		!strings.Contains(r.stdout, "audit") || !strings.Contains(r.stdout, reg.Consumer.ARN) {
		t.Fatalf("register again: %+v", r)
	}

	// The list, in both formats.
	r = runCLI(t, "", "", "consumers", name, "-o", "json")
	want := fmt.Sprintf(`{"stream":%q,"streamArn":%q,"consumers":[{"name":"audit","arn":%q,"status":"ACTIVE","created":%q}]}`,
		name, arn, reg.Consumer.ARN, reg.Consumer.Created)
	if r.code != 0 || !sameJSON(t, r.stdout, want) || reg.Consumer.Created == "" {
		t.Fatalf("list json:\n%s\nwant\n%s", r.stdout, want)
	}
	r = runCLI(t, "", "", "consumers", name)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "CONSUMER") || !strings.Contains(lines[1], "ACTIVE") ||
		!strings.Contains(lines[1], reg.Consumer.Created) || !strings.HasSuffix(lines[1], reg.Consumer.ARN) {
		t.Fatalf("list table: %+v", r)
	}

	// Deregister: refused without a terminal or --yes, declined at the
	// prompt, previewed by --dry-run; nothing changes until --yes.
	r = runCLI(t, "", "", "consumers", name, "--deregister", "audit")
	checkFailure(t, r, exitUsage, "stdin is not a terminal")
	r = runCLIWith(t, func(f *Factory) { f.IO.StdinTTY, f.IO.StderrTTY = true, true }, "n\n", "consumers", name, "--deregister", "audit")
	if r.code != exitInterrupted || !strings.Contains(r.stdout, "Deregister consumer audit of stream "+name) ||
		!strings.HasSuffix(r.stderr, "Deregister consumer audit of stream "+name+"? [y/N] declined: nothing was changed\n") {
		t.Fatalf("declined: %+v", r)
	}
	r = runCLI(t, "", "", "consumers", name, "--deregister", "audit", "--dry-run", "-o", "json")
	wantDoc := fmt.Sprintf(`{"stream":%q,"streamArn":%q,"consumer":{"name":"audit","arn":%q,"status":"ACTIVE","created":%q},"deregistered":false,"dryRun":true}`,
		name, arn, reg.Consumer.ARN, reg.Consumer.Created)
	if r.code != 0 || !sameJSON(t, r.stdout, wantDoc) || r.stderr != "dry run: nothing was sent\n" {
		t.Fatalf("dry run: %+v", r)
	}
	if got := consumerNames(t, c, arn); !slices.Equal(got, []string{"audit"}) {
		t.Fatalf("consumers after the refusals: %v", got)
	}
	r = runCLI(t, "", "", append([]string{"consumers", name, "--deregister", "audit", "--yes"}, poll...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "deregistered consumer audit of stream "+name) || !strings.Contains(r.stderr, "consumer audit is gone after") {
		t.Fatalf("deregister: %+v", r)
	}
	if got := consumerNames(t, c, arn); len(got) != 0 {
		t.Fatalf("consumers after deregister: %v", got)
	}
	r = runCLI(t, "", "", "consumers", name, "--deregister", "audit", "--yes")
	checkFailure(t, r, exitFailure, `stream `+name+` has no consumer named "audit"`)
}

func TestConsumersMissingStream(t *testing.T) {
	emulator.Require(t)
	r := runCLI(t, "", "", "consumers", "no-such-stream-"+strings.ToLower(fmt.Sprint(time.Now().UnixNano())))
	checkFailure(t, r, exitFailure, "was not found")
}

// At 20 consumers, --register says so in one line naming them (the stub:
// kinesis-mock has no such limit).
func TestConsumersRegisterAtTheLimit(t *testing.T) {
	stub := fanout.NewStub(t, fanout.StubOptions{CreatingPolls: -1})
	sc := kinesis.New(kinesis.Options{Region: "us-east-1", BaseEndpoint: aws.String(stub.URL), RetryMaxAttempts: 1})
	var names []string
	for i := range kstream.MaxConsumers {
		names = append(names, fmt.Sprintf("app-%02d", i))
		if _, err := sc.RegisterStreamConsumer(t.Context(), &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(stub.StreamARN), ConsumerName: aws.String(names[i])}); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, stub.URL, "", "consumers", "efo-stub", "--register", "one-more")
	checkFailure(t, r, exitFailure, "stream efo-stub already has 20 consumers, the most a stream can have (LimitExceededException): "+strings.Join(names, ", "))
	if got := stub.Consumers(); len(got) != kstream.MaxConsumers || slices.Contains(got, "one-more") {
		t.Fatalf("consumers %v", got)
	}
}

// --deregister (and a --consumer flag, wherever it comes) completes the
// stream's consumer names.
func TestCompleteConsumerNames(t *testing.T) {
	e, c, name, arn := consumerStream(t, "reader-a", "reader-b", "other")
	for _, n := range []string{"reader-a", "reader-b", "other"} {
		e.RegisterConsumer(t, c, arn, n)
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"deregister", []string{"consumers", name, "--deregister", "reader"}, []string{"reader-a\tactive", "reader-b\tactive"}},
		{"by ARN", []string{"consumers", arn, "--deregister", "o"}, []string{"other\tactive"}},
		{"tail --consumer", []string{"tail", name, "--efo", "--consumer", ""}, []string{"other\tactive", "reader-a\tactive", "reader-b\tactive"}},
		{"no stream yet", []string{"tail", "--consumer", ""}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := completeConsumers(t, tt.args...)
			if !slices.Equal(r.cands, tt.want) || r.directive != liveDirective {
				t.Errorf("candidates %q (%v), want %q", r.cands, r.directive, tt.want)
			}
		})
	}
}

// completeConsumers runs `__complete` on the real tree, against the
// emulator.
func completeConsumers(t *testing.T, args ...string) compResult {
	t.Helper()
	e := emulator.Require(t)
	ios, _, out, errOut := TestIO()
	f := NewFactory(ios)
	f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
		return kinesis.New(e.ClientOptions(), func(o *kinesis.Options) { o.Region = emulator.Region }), nil
	}
	root := NewRootCmd(f)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("__complete %q: %v", args, err)
	}
	r := compResult{stderr: errOut.String()}
	r.cands, r.directive = parseComplete(t, out.String())
	return r
}

// sameJSON reports whether two JSON documents hold the same values.
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}
