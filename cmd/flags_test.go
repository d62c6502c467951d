package cmd

// The flag table: every command's flags and arguments, parsed and
// validated through the real cobra tree with a runF in place of run, so no
// client is built and no emulator is needed. A usage error must be exit 2
// with exactly one "error: " line and the command never run; a good
// command line must reach runF with these options.

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// flagNow is the clock of the flag tests.
var flagNow = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

const flagARN = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"

// record is a runF that keeps the options it was given.
func record[O any](got *any) func(O) error {
	return func(o O) error { *got = o; return nil }
}

// flagRoot is the command tree with every command's run replaced.
func flagRoot(f *Factory, got *any) *cobra.Command {
	root := newRoot(f)
	root.AddCommand(
		newStreamsCmd(f, record[*StreamsOptions](got)),
		newTreeCmd(f, record[*TreeOptions](got)),
		newTailCmd(f, record[*TailOptions](got)),
		newPutCmd(f, record[*PutOptions](got)),
		newCreateCmd(f, record[*CreateOptions](got)),
		newSplitCmd(f, record[*SplitOptions](got)),
		newMergeCmd(f, record[*MergeOptions](got)),
		newScaleCmd(f, record[*ScaleOptions](got)),
		newHotCmd(f, record[*HotOptions](got)),
		newLagCmd(f, record[*LagOptions](got)),
		newDashboardCmd(f, record[*DashboardOptions](got)),
		newConsumersCmd(f, record[*ConsumersOptions](got)),
		newLocalCmd(f, record[*LocalOptions](got)),
	)
	return root
}

type flagResult struct {
	code           int
	stdout, stderr string
	opts           any // what runF got; nil when it was not called
}

// parseFlags runs args through the tree; tty makes the three standard
// streams terminals.
func parseFlags(t *testing.T, tty bool, args ...string) flagResult {
	t.Helper()
	ios, _, out, errOut := TestIO()
	ios.StdinTTY, ios.StdoutTTY, ios.StderrTTY = tty, tty, tty
	f := NewFactory(ios)
	f.Now = func() time.Time { return flagNow }
	f.KinesisClient = func(context.Context, string) (*kinesis.Client, error) {
		t.Errorf("%q built a Kinesis client", args)
		return nil, fmt.Errorf("no client in flag tests")
	}
	f.DynamoClient = func(context.Context, string) (*dynamodb.Client, error) {
		t.Errorf("%q built a DynamoDB client", args)
		return nil, fmt.Errorf("no client in flag tests")
	}
	var got any
	code := execute(context.Background(), f, flagRoot(f, &got), args)
	return flagResult{code: code, stdout: out.String(), stderr: errOut.String(), opts: got}
}

// checkFailure asserts a failed command line: the exit code, nothing on
// stdout, and exactly one "error: " line on stderr that says msg.
func checkFailure(t *testing.T, res cliResult, code int, msg string) {
	t.Helper()
	if res.code != code {
		t.Errorf("exit %d, want %d", res.code, code)
	}
	if res.stdout != "" {
		t.Errorf("stdout is not empty: %q", res.stdout)
	}
	if !strings.HasPrefix(res.stderr, "error: ") || strings.Count(res.stderr, "\n") != 1 || !strings.HasSuffix(res.stderr, "\n") {
		t.Errorf("stderr is not one \"error: \" line: %q", res.stderr)
	}
	if !strings.Contains(res.stderr, msg) {
		t.Errorf("stderr %q does not say %q", res.stderr, msg)
	}
}

// usageCase is a command line that must be refused as a usage error.
type usageCase struct {
	args []string
	tty  bool
	msg  string // the error line holds this
}

func TestFlagUsageErrors(t *testing.T) {
	yes := func(args ...string) []string { return append(args, "--yes") }
	tailArgs := func(extra ...string) []string { return append([]string{"tail", "orders", "--no-checkpoint"}, extra...) }
	twoTo128 := new(big.Int).Lsh(big.NewInt(1), 128).String()
	cases := []usageCase{
		// Commands, arguments and flags cobra refuses.
		{args: []string{"bogus"}, msg: `unknown command "bogus" for "kinesis-shards"`},
		{args: []string{"tree", "orders", "--bogus"}, msg: "unknown flag: --bogus"},
		{args: []string{"streams", "extra"}, msg: `kinesis-shards streams takes no arguments (got "extra")`},
		{args: []string{"tree"}, msg: "kinesis-shards tree takes STREAM (got 0 argument(s)); see --help"},
		{args: []string{"tree", "orders", "extra"}, msg: "takes STREAM (got 2 argument(s))"},
		{args: yes("split", "orders"), msg: "takes STREAM SHARD (got 1 argument(s))"},
		{args: yes("merge", "orders", "1"), msg: "takes STREAM SHARD SHARD (got 2 argument(s))"},
		{args: []string{"dashboard", "a", "b"}, tty: true, msg: "dashboard takes at most one STREAM (got 2 arguments)"},

		// Streams, ARNs and regions, on every command.
		{args: []string{"tree", "bad name!"}, msg: `invalid stream: "bad name!" is not a stream name`},
		{args: []string{"tree", strings.Repeat("s", 129)}, msg: "is not a stream name"},
		{args: []string{"tree", "arn:aws:kinesis:us-east-1:123:stream/x"}, msg: "is not a Kinesis stream ARN"},
		{args: []string{"tail", "arn:aws:s3:::bucket", "--no-checkpoint"}, msg: "is not a Kinesis stream ARN"},
		{args: []string{"put", "arn:aws:kinesis:us-east-1:123456789012:stream/"}, msg: "is not a Kinesis stream ARN"},
		{args: []string{"create", "arn:aws:kinesis:us-east-1:123:stream/x", "--shards", "1"}, msg: "is not a Kinesis stream ARN"},
		{args: yes("split", "arn:aws:kinesis:us-east-1:123456789012:table/x", "0"), msg: "is not a Kinesis stream ARN"},
		{args: yes("merge", "arn:aws:kinesis::123456789012:stream/x", "0", "1"), msg: "is not a Kinesis stream ARN"},
		{args: yes("scale", "arn:aws:kinesis:us-east-1:123456789012:stream/a b", "--to", "2"), msg: "is not a Kinesis stream ARN"},
		{args: []string{"dashboard", "arn:aws:kinesis:us-east-1:1:stream/x"}, tty: true, msg: "is not a Kinesis stream ARN"},
		{args: []string{"tree", flagARN, "--region", "us-east-1"}, msg: "--region us-east-1 disagrees with the stream ARN's region eu-west-1"},
		{args: []string{"streams", "--region", "bad region!"}, msg: `--region "bad region!" is not an AWS region name such as us-east-1`},
		{args: []string{"tail", "orders", "--region", "Not/A/Region"}, msg: `--region "Not/A/Region" is not an AWS region name`},
		{args: []string{"streams", "--endpoint-url", "ftp://example.com"}, msg: `--endpoint-url "ftp://example.com" is not an http(s) URL`},
		{args: []string{"tree", "orders", "--endpoint-url", "http://"}, msg: "is not an http(s) URL"},

		// Output formats.
		{args: []string{"streams", "-o", "yaml"}, msg: `unknown output format "yaml": use one of table, json`},
		{args: []string{"tree", "orders", "-o", "yaml"}, msg: `unknown output format "yaml": use one of tree, table, json, dot, mermaid`},
		{args: []string{"put", "orders", "-o", "table"}, msg: `unknown output format "table": use one of text, json`},
		{args: []string{"create", "orders", "--shards", "1", "-o", "yaml"}, msg: `unknown output format "yaml": use one of table, json`},
		{args: yes("split", "orders", "1", "-o", "yaml"), msg: `unknown output format "yaml": use one of table, json`},
		{args: yes("merge", "orders", "0", "1", "-o", "dot"), msg: `unknown output format "dot"`},
		{args: yes("scale", "orders", "--to", "3", "-o", "yaml"), msg: `unknown output format "yaml"`},
		{args: tailArgs("-o", "yaml"), msg: `unknown record format "yaml": use json, raw or text`},
		{args: tailArgs("--format", "xml"), msg: `unknown record format "xml": use json, raw or text`},
		{args: tailArgs("--format", "json", "-o", "raw"), msg: "-o raw and --format json disagree"},
		{args: []string{"dashboard", "orders", "-o", "json"}, tty: true, msg: "dashboard has no -o/--output: it is interactive"},
		{args: yes("scale", "orders", "--to", "3", "--method", "uniform"), msg: `--method "uniform" is not known: use update-shard-count or splits`},

		// tree.
		{args: []string{"tree", "orders", "--at", "nope"}, msg: `--at: "nope" is not a timestamp`},
		{args: []string{"tree", "orders", "--at", "2099-01-01T00:00:00Z"}, msg: "is in the future"},
		{args: []string{"tree", "orders", "--at", "0s"}, msg: "must be positive"},
		{args: []string{"tree", "orders", "--at", ""}, msg: "empty timestamp"},
		{args: []string{"tree", "orders", "--at", "99999999999999999999999"}, msg: "is not a Unix time in the past"},
		{args: []string{"tree", "orders", "--open", "--at", "5m"}, msg: "--open and --at do not go together"},
		{args: []string{"tree", "orders", "--key", ""}, msg: "--key: a partition key must have 1 to 256 characters, not 0"},
		{args: []string{"tree", "orders", "--kcl-table", "bad name!"}, msg: `--kcl-table "bad name!" is not a DynamoDB table name`},
		{args: []string{"tree", "orders", "--kcl-table", ""}, msg: `--kcl-table "" is not a DynamoDB table name`},

		// tail.
		{args: tailArgs("--shard", "1234567890123"), msg: `shard "1234567890123" is not a shard id`},
		{args: tailArgs("--shard", ""), msg: "shard"},
		{args: tailArgs("--key", strings.Repeat("k", 257)), msg: "--key: a partition key must have 1 to 256 characters, not 257"},
		{args: tailArgs("--key", "k", "--shard", "1"), msg: "--key and --shard do not go together"},
		{args: tailArgs("--from-tip", "--from-timestamp", "5m"), msg: "--from-tip and --from-timestamp do not go together"},
		{args: tailArgs("--from-timestamp", "yesterday"), msg: `"yesterday" is not a timestamp`},
		{args: tailArgs("--from-timestamp", "2099-01-01T00:00:00Z"), msg: "is in the future"},
		{args: tailArgs("--from-timestamp", "-5m"), msg: "must be positive"},
		{args: tailArgs("--from-timestamp", "99999999999"), msg: "is not a Unix time in the past"},
		{args: tailArgs("--from-timestamp", ""), msg: "empty timestamp"},
		{args: tailArgs("--checkpoint", "x.json"), msg: "--checkpoint and --no-checkpoint do not go together"},
		{args: []string{"tail", "orders", "--checkpoint", ""}, msg: "--checkpoint needs a file name (or pass --no-checkpoint)"},
		{args: tailArgs("--max-records", "-1"), msg: "--max-records must not be negative"},
		{args: tailArgs("--max-records", "x"), msg: `invalid argument "x" for "--max-records"`},
		{args: tailArgs("--create-if-missing", "0"), msg: "--create-if-missing needs a shard count from 1 to 10000, not 0"},
		{args: tailArgs("--create-if-missing", "10001"), msg: "--create-if-missing needs a shard count from 1 to 10000"},
		{args: tailArgs("--idle-exit", "x"), msg: `invalid argument "x" for "--idle-exit"`},
		{args: tailArgs("--idle-exit", "-1s"), msg: "--idle-exit must not be negative"},
		{args: tailArgs("--poll-interval", "100ms"), msg: "--poll-interval must be at least 200ms"},
		{args: tailArgs("--relist-interval", "100ms"), msg: "--relist-interval must be at least 1s"},
		{args: tailArgs("--checkpoint-interval", "0"), msg: "--checkpoint-interval must be positive"},
		{args: []string{"tail", "orders", "--lease-table", "x"}, msg: `--lease-table "x" is not a DynamoDB table name`},
		{args: []string{"tail", "orders", "--lease-table", ""}, msg: `--lease-table "" is not a DynamoDB table name`},
		{args: tailArgs("--lease-table", "leases"), msg: "--lease-table keeps the checkpoints"},
		{args: []string{"tail", "orders", "--lease-table", "leases", "--checkpoint", "x.json"}, msg: "--lease-table keeps the checkpoints"},
		{args: []string{"tail", "orders", "--lease-table", "leases", "--key", "k"}, msg: "--lease-table shares the whole stream"},
		{args: []string{"tail", "orders", "--lease-table", "leases", "--shard", "3"}, msg: "--lease-table shares the whole stream"},
		{args: []string{"tail", "orders", "--lease-table", "leases", "--lease-duration", "10ms"}, msg: "--lease-duration must be at least 1s"},
		{args: []string{"tail", "orders", "--worker-id", "w1"}, msg: "--worker-id, --lease-duration and --create-lease-table go with --lease-table"},
		{args: []string{"tail", "orders", "--create-lease-table"}, msg: "go with --lease-table"},
		{args: []string{"tail", "orders", "--lease-duration", "30s"}, msg: "go with --lease-table"},
		{args: tailArgs("--consumer", "ops"), msg: "--consumer goes with --efo"},
		{args: tailArgs("--efo", "--consumer", "ops tail"), msg: `--consumer: invalid consumer name: "ops tail" is not 1 to 128 characters`},
		{args: tailArgs("--efo", "--consumer", ""), msg: `--consumer: invalid consumer name: ""`},
		{args: tailArgs("--efo", "--poll-interval", "1s"), msg: "--poll-interval does not go with --efo: subscribed shards are not polled"},
		{args: []string{"tail", "orders", "--efo", "--lease-table", "leases"}, msg: "--efo does not go with --lease-table: the workers of a table would share one consumer that none of them may deregister"},

		// put.
		{args: []string{"put", "orders", "--key", ""}, msg: "--key: a partition key must have 1 to 256 characters, not 0"},
		{args: []string{"put", "orders", "--key-field", ""}, msg: "--key-field needs a field name"},
		{args: []string{"put", "orders", "--key", "a", "--key-field", "b"}, msg: "--key and --key-field do not go together"},
		{args: []string{"put", "orders", "--retries", "-1"}, msg: "--retries must not be negative"},
		{args: []string{"put", "orders", "--format", "yaml"}, msg: `unknown --format "yaml": use lines or json`},
		{args: []string{"put", "orders", "--format", "json", "--key", "k"}, msg: "--key does not go with --format json: each record brings its own partitionKey"},
		{args: []string{"put", "orders", "--format", "json", "--key-field", "user"}, msg: "--key-field does not go with --format json"},
		{args: []string{"put", "orders", "--rate", "-1"}, msg: "--rate must be a positive number of records per second"},
		{args: []string{"put", "orders", "--rate", "0"}, msg: "--rate must be a positive number of records per second (leave it out for no cap)"},
		{args: []string{"put", "orders", "--rate-bytes", "0"}, msg: "--rate-bytes: it must be at least 1 byte per second"},
		{args: []string{"put", "orders", "--rate-bytes", "3parsec"}, msg: `--rate-bytes: unknown unit "parsec"`},
		{args: []string{"put", "orders", "--rate-bytes", "99999999999999999999GB"}, msg: `--rate-bytes: "99999999999999999999GB" is more bytes per second than any stream takes`},

		// create.
		{args: []string{"create", "orders"}, msg: "say how many shards with --shards N (N ≥ 1), or pass --on-demand"},
		{args: []string{"create", "orders", "--shards", "0"}, msg: "--shards must be at least 1, not 0"},
		{args: []string{"create", "orders", "--shards", "-1"}, msg: "--shards must be at least 1, not -1"},
		{args: []string{"create", "orders", "--shards", "x"}, msg: `invalid argument "x" for "--shards"`},
		{args: []string{"create", "orders", "--shards", "10001"}, msg: "--shards 10001 is more than a stream can have (10000)"},
		{args: []string{"create", "orders", "--shards", "2", "--on-demand"}, msg: "--shards and --on-demand do not go together"},
		{args: []string{"create", "orders", "--shards", "1", "--wait", "-1s"}, msg: "--wait must not be negative"},
		{args: []string{"create", "orders", "--shards", "1", "--wait", "x"}, msg: `invalid argument "x" for "--wait"`},

		// split.
		{args: yes("split", "orders", "x1"), msg: `shard "x1" is not a shard id`},
		{args: yes("split", "orders", "1", "--at", "0170141183460469231731687303715884105728"), msg: "is not a canonical decimal: no sign, no leading zeros"},
		{args: yes("split", "orders", "1", "--at", "-5"), msg: "is not a canonical decimal"},
		{args: yes("split", "orders", "1", "--at", "+5"), msg: "is not a canonical decimal"},
		{args: yes("split", "orders", "1", "--at", "1e5"), msg: "is not a canonical decimal"},
		{args: yes("split", "orders", "1", "--at", ""), msg: "hash key is empty"},
		{args: yes("split", "orders", "1", "--at", twoTo128), msg: "is larger than 2^128-1"},
		{args: yes("split", "orders", "1", "--at-percent", "0"), msg: "it must be greater than 0 and less than 100"},
		{args: yes("split", "orders", "1", "--at-percent", "100"), msg: "it must be greater than 0 and less than 100"},
		{args: yes("split", "orders", "1", "--at-percent", "-3"), msg: "is not a decimal number"},
		{args: yes("split", "orders", "1", "--at-percent", "half"), msg: "is not a decimal number"},
		{args: yes("split", "orders", "1", "--at", "5", "--at-percent", "5"), msg: "--at and --at-percent do not go together"},
		{args: yes("split", "orders", "1", "--balanced", "--at", "5"), msg: "--balanced picks the split key from sampled traffic"},
		{args: yes("split", "orders", "1", "--balanced", "--at-percent", "5"), msg: "--balanced picks the split key from sampled traffic"},
		{args: yes("split", "orders", "1", "--balanced", "--sample", "5"), msg: "--balanced needs --sample of at least"},
		{args: yes("split", "orders", "1", "--sample", "-1"), msg: "--sample must be from 0 (no sample) to"},
		{args: yes("split", "orders", "1", "--sample", fmt.Sprint(reshard.MaxSampleSize+1)), msg: "--sample must be from 0 (no sample) to"},
		{args: yes("split", "orders", "1", "--wait", "0"), msg: "--wait must be positive"},
		{args: yes("split", "orders", "1", "--sample-window", "0"), msg: "--sample-window must be positive"},
		{args: []string{"split", "orders", "1"}, msg: "stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview"},

		// merge.
		{args: yes("merge", "orders", "0", "shardId-x"), msg: `shard "shardId-x" is not a shard id`},
		{args: yes("merge", "orders", "1", "shardId-000000000001"), msg: "cannot merge shard shardId-000000000001 with itself"},
		{args: yes("merge", "orders", "0", "1", "--wait", "-1s"), msg: "--wait must be positive"},
		{args: []string{"merge", "orders", "0", "1"}, msg: "stdin is not a terminal: pass --yes"},

		// scale.
		{args: yes("scale", "orders"), msg: "say how many open shards with --to N"},
		{args: yes("scale", "orders", "--to", "0"), msg: "--to 0 is not a shard count a stream can have: it must be from 1 to 10000"},
		{args: yes("scale", "orders", "--to", "20001"), msg: "--to 20001 is not a shard count"},
		{args: yes("scale", "orders", "--to", "x"), msg: `invalid argument "x" for "--to"`},
		{args: yes("scale", "orders", "--to", "4", "--even"), msg: "--even goes with --method splits"},
		{args: []string{"scale", "orders", "--to", "4"}, msg: "stdin is not a terminal: pass --yes"},

		// hot.
		{args: []string{"local", "--port", "-1"}, msg: "--port must be from 0 to 65535, not -1"},
		{args: []string{"local", "--shard-limit", "-3"}, msg: "--shard-limit must be at least 1"},
		{args: []string{"local", "--host", ""}, msg: "--host needs an address (127.0.0.1 for this machine only)"},
		{args: []string{"local", "--state-delay", "-2s"}, msg: "--state-delay must not be negative"},
		{args: []string{"local", "--faults", "throttle=0.5,throttle=0.1"}, msg: `--faults: "throttle=0.1": throttle is given twice`},
		{args: []string{"local", "--faults", "throttle:Nope=0.5"}, msg: `--faults: "throttle:Nope=0.5": "Nope" is not an operation this fake Kinesis serves`},
		{args: []string{"local", "--max-bytes", "1TB"}, msg: `--max-bytes: "1TB" is not a size`},
		{args: []string{"local", "--retention", "0s"}, msg: "--retention must be from 1m to 8760h, not 0s"},
		{args: []string{"hot"}, msg: "kinesis-shards hot takes STREAM (got 0 argument(s))"},
		{args: []string{"hot", "orders", "-o", "yaml"}, msg: `unknown output format "yaml": use one of table, json`},
		{args: []string{"hot", "orders", "--window", "0"}, msg: "--window must be positive"},
		{args: []string{"hot", "orders", "--window", "-1m"}, msg: "--window must be positive"},
		{args: []string{"hot", "orders", "--window", "5m", "--from-timestamp", "10m"}, msg: "--window and --from-timestamp do not go together"},
		{args: []string{"hot", "orders", "--from-timestamp", "nope"}, msg: `--from-timestamp: "nope" is not a timestamp`},
		{args: []string{"hot", "orders", "--until", "2099-01-01T00:00:00Z"}, msg: "--until: timestamp 2099-01-01T00:00:00Z is in the future"},
		{args: []string{"hot", "orders", "--from-timestamp", "5m", "--until", "10m"}, msg: "the window is empty: --from-timestamp 2026-11-30T09:55:00Z is not before --until 2026-11-30T09:50:00Z"},
		{args: []string{"hot", "orders", "--top", "0"}, msg: "--top must be from 1 to 1000, not 0"},
		{args: []string{"hot", "orders", "--max-records", "0"}, msg: "--max-records must be from 1 to 1000000, not 0"},
		{args: []string{"hot", "orders", "--max-records", "1000001"}, msg: "--max-records must be from 1 to 1000000, not 1000001"},
		{args: []string{"hot", "orders", "--threshold", "101"}, msg: "--threshold must be a percentage from 0 to 100, not 101"},
		{args: []string{"hot", "orders", "--threshold", "-1"}, msg: "--threshold must be a percentage from 0 to 100, not -1"},
		{args: []string{"hot", "orders", "--threshold", "NaN"}, msg: "--threshold must be a percentage from 0 to 100, not NaN"},

		// lag.
		{args: []string{"lag", "orders"}, msg: "say where the consumer keeps its positions: --checkpoint FILE (tail), --lease-table TABLE"},
		{args: []string{"lag", "orders", "--checkpoint", "cp.json", "--kcl-table", "orders-app"}, msg: "--checkpoint, --lease-table and --kcl-table do not go together"},
		{args: []string{"lag", "orders", "--lease-table", "orders-tail", "--kcl-table", "orders-app"}, msg: "do not go together"},
		{args: []string{"lag", "orders", "--checkpoint", ""}, msg: "--checkpoint needs a file name"},
		{args: []string{"lag", "orders", "--lease-table", "x"}, msg: `--lease-table "x" is not a DynamoDB table name`},
		{args: []string{"lag", "orders", "--kcl-table", "bad name!"}, msg: `--kcl-table "bad name!" is not a DynamoDB table name`},
		{args: []string{"lag", "orders", "--checkpoint", "cp.json", "-o", "dot"}, msg: `unknown output format "dot": use one of table, json`},
		{args: []string{"lag", flagARN, "--region", "us-east-1", "--checkpoint", "cp.json"}, msg: "--region us-east-1 disagrees with the stream ARN's region eu-west-1"},

		// dashboard.
		{args: []string{"dashboard", "orders"}, msg: "dashboard needs a terminal (stdin and stdout)"},
		{args: []string{"dashboard", "orders", "--kcl-table", "orders-app", "--lease-table", "orders-tail"}, tty: true, msg: "--kcl-table and --lease-table do not go together"},
		{args: []string{"dashboard", "orders", "--lease-table", "x"}, tty: true, msg: `--lease-table "x" is not a DynamoDB table name`},
		{args: []string{"dashboard", "orders", "--refresh", "500ms"}, tty: true, msg: "--refresh must be at least 1s"},
		{args: []string{"dashboard", "orders", "--poll-interval", "1ms"}, tty: true, msg: "--poll-interval must be at least 200ms"},
		{args: []string{"dashboard", "orders", "--kcl-table", "ab"}, tty: true, msg: `--kcl-table "ab" is not a DynamoDB table name`},
		{args: []string{"dashboard", "orders", "--efo", "--poll-interval", "1s"}, tty: true, msg: "--poll-interval does not go with --efo"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := parseFlags(t, tc.tty, tc.args...)
			if r.opts != nil {
				t.Errorf("the command ran with %+v", r.opts)
			}
			checkFailure(t, cliResult{stdout: r.stdout, stderr: r.stderr, code: r.code}, exitUsage, tc.msg)
		})
	}
}

// flagOK is a command line that must reach run with these options.
type flagOK struct {
	args  []string
	tty   bool
	check func(t *testing.T, o any)
}

// as is o as the options type the case expects.
func as[O any](t *testing.T, o any) O {
	t.Helper()
	v, ok := o.(O)
	if !ok {
		t.Fatalf("the command ran with %T, want %T", o, v)
	}
	return v
}

func TestFlagOptions(t *testing.T) {
	shard := func(n int) string { return fmt.Sprintf("shardId-%012d", n) }
	twoHoursAgo := flagNow.Add(-2 * time.Hour)
	keyHash := lineage.PartitionKeyHash("customer-42")
	key, _ := lineage.ParseHashKey("255211775190703847597530955573826158592")
	cases := []flagOK{
		{[]string{"local"}, false, func(t *testing.T, o any) {
			if l := as[*LocalOptions](t, o); l.Host != "127.0.0.1" || l.Port != 4567 || l.ShardLimit != 500 || l.StateDelay != 0 || !l.Quotas ||
				l.Faults != "" || l.faults != nil || l.MaxBytes != 1<<30 || l.Retention != 24*time.Hour {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"local", "--host", "0.0.0.0", "--port", "0", "--shard-limit", "20", "--state-delay", "2s", "--quotas=false"}, false, func(t *testing.T, o any) {
			if l := as[*LocalOptions](t, o); l.Host != "0.0.0.0" || l.Port != 0 || l.ShardLimit != 20 || l.StateDelay != 2*time.Second || l.Quotas {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"local", "--faults", "throttle=0.2,error=0.01,expire:GetRecords=0.05,seed=1", "--max-bytes", "64MiB", "--retention", "1h"}, false, func(t *testing.T, o any) {
			if l := as[*LocalOptions](t, o); l.faults == nil || l.MaxBytes != 64<<20 || l.Retention != time.Hour {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"local", "--max-bytes", "0"}, false, func(t *testing.T, o any) {
			if l := as[*LocalOptions](t, o); l.MaxBytes != 0 {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"local", "--max-bytes", "1073741824"}, false, func(t *testing.T, o any) {
			if l := as[*LocalOptions](t, o); l.MaxBytes != 1<<30 {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"streams"}, false, func(t *testing.T, o any) {
			s := as[*StreamsOptions](t, o)
			if s.Output != "table" || s.Stream != "" || s.Workers != 8 || s.DescribeEvery != 100*time.Millisecond {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"streams", "-o", "json", "--region", "eu-west-1"}, false, func(t *testing.T, o any) {
			if s := as[*StreamsOptions](t, o); s.Output != "json" || s.region != "eu-west-1" {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"tree", "orders"}, false, func(t *testing.T, o any) {
			tr := as[*TreeOptions](t, o)
			if tr.Output != "tree" || tr.Ref.Name != "orders" || tr.Ref.ARN != "" || tr.At != nil || tr.Key != nil || tr.Open || tr.Wide || tr.KCLTable != "" {
				t.Errorf("%+v", tr)
			}
		}},
		{[]string{"tree", flagARN, "--at", "2h", "--key", "customer-42", "--wide", "--kcl-table", "orders-app", "-o", "mermaid"}, false, func(t *testing.T, o any) {
			tr := as[*TreeOptions](t, o)
			if tr.Output != "mermaid" || tr.Ref.Name != "orders" || tr.Ref.Region != "eu-west-1" || tr.Ref.ARN != flagARN ||
				tr.At == nil || !tr.At.Equal(twoHoursAgo) || tr.Key == nil || *tr.Key != "customer-42" || !tr.Wide || tr.KCLTable != "orders-app" {
				t.Errorf("%+v", tr)
			}
		}},
		{[]string{"tree", flagARN, "--region", "eu-west-1", "--open"}, false, func(t *testing.T, o any) {
			if tr := as[*TreeOptions](t, o); !tr.Open || tr.Ref.Region != "eu-west-1" {
				t.Errorf("%+v", tr)
			}
		}},
		{[]string{"tail", "orders"}, false, func(t *testing.T, o any) {
			tl := as[*TailOptions](t, o)
			if tl.format != render.RecordJSON || tl.start != tail.StartTrimHorizon || tl.keyHash != nil || tl.Shard != "" ||
				tl.PollInterval != tail.DefaultPollInterval || tl.RelistInterval != tail.DefaultRelistInterval ||
				tl.CheckpointInterval != tail.DefaultCheckpointInterval || tl.LeaseDuration != 10*time.Second || tl.WorkerID != "" {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders"}, true, func(t *testing.T, o any) {
			if tl := as[*TailOptions](t, o); tl.format != render.RecordText {
				t.Errorf("on a terminal: format %v, want text", tl.format)
			}
		}},
		{[]string{"tail", "orders", "-o", "raw", "--from-tip", "--no-checkpoint"}, true, func(t *testing.T, o any) {
			if tl := as[*TailOptions](t, o); tl.format != render.RecordRaw || tl.start != tail.StartLatest || !tl.NoCheckpoint {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--format", "json", "-o", "json", "--from-timestamp", "2h", "--key", "customer-42"}, false, func(t *testing.T, o any) {
			tl := as[*TailOptions](t, o)
			if tl.format != render.RecordJSON || tl.start != tail.StartAtTimestamp || !tl.timestamp.Equal(twoHoursAgo) || tl.keyHash == nil || *tl.keyHash != keyHash {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--shard", "7", "--checkpoint", "cp.json", "--max-records", "10", "--idle-exit", "5s"}, false, func(t *testing.T, o any) {
			tl := as[*TailOptions](t, o)
			if tl.Shard != shard(7) || tl.Checkpoint != "cp.json" || tl.MaxRecords != 10 || tl.IdleExit != 5*time.Second {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--lease-table", "orders-tail", "--create-lease-table", "--lease-duration", "30s"}, false, func(t *testing.T, o any) {
			tl := as[*TailOptions](t, o)
			if tl.LeaseTable != "orders-tail" || !tl.CreateLeaseTable || tl.LeaseDuration != 30*time.Second || strings.Count(tl.WorkerID, ":") != 2 {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--efo"}, false, func(t *testing.T, o any) {
			if tl := as[*TailOptions](t, o); !tl.EFO || tl.Consumer != "" {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--efo", "--consumer", "ops.tail-1", "--from-tip"}, false, func(t *testing.T, o any) {
			if tl := as[*TailOptions](t, o); !tl.EFO || tl.Consumer != "ops.tail-1" || tl.start != tail.StartLatest {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"tail", "orders", "--lease-table", "orders-tail", "--worker-id", "w1"}, false, func(t *testing.T, o any) {
			if tl := as[*TailOptions](t, o); tl.WorkerID != "w1" {
				t.Errorf("%+v", tl)
			}
		}},
		{[]string{"put", "orders"}, false, func(t *testing.T, o any) {
			p := as[*PutOptions](t, o)
			if p.Output != "text" || p.Key != "" || p.KeyField != "" || p.Retries != 8 || p.Linger != 50*time.Millisecond || p.Backoff != 100*time.Millisecond ||
				p.Format != "lines" || p.Rate != 0 || p.RateBytes != 0 {
				t.Errorf("%+v", p)
			}
		}},
		{[]string{"put", "orders", "--format", "json", "--rate", "500", "--rate-bytes", "1MiB"}, false, func(t *testing.T, o any) {
			if p := as[*PutOptions](t, o); p.Format != "json" || p.Rate != 500 || p.RateBytes != 1<<20 {
				t.Errorf("%+v", p)
			}
		}},
		{[]string{"put", "orders", "--key-field", "user.id", "--retries", "0", "-o", "json"}, false, func(t *testing.T, o any) {
			if p := as[*PutOptions](t, o); p.KeyField != "user.id" || p.Retries != 0 || p.Output != "json" {
				t.Errorf("%+v", p)
			}
		}},
		{[]string{"create", "orders", "--shards", "4"}, false, func(t *testing.T, o any) {
			c := as[*CreateOptions](t, o)
			if c.Shards != 4 || c.OnDemand || c.Wait != time.Minute || c.Output != "table" || c.Ref.Name != "orders" {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"create", "clicks", "--on-demand", "--wait", "0", "-o", "json"}, false, func(t *testing.T, o any) {
			if c := as[*CreateOptions](t, o); !c.OnDemand || c.Wait != 0 || c.Output != "json" {
				t.Errorf("%+v", c)
			}
		}},
		{[]string{"split", "orders", "3", "--yes"}, false, func(t *testing.T, o any) {
			s := as[*SplitOptions](t, o)
			if s.Shard != shard(3) || s.Goal.Shard != shard(3) || s.Goal.At != nil || s.Goal.Percent != nil || s.Goal.Median ||
				s.Sample != 0 || s.Wait != 10*time.Minute || s.SampleWindow != reshard.DefaultSampleWindow || s.Output != "table" || !s.Yes {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"split", "orders", "shardId-000000000003", "--at-percent", "25", "--dry-run"}, false, func(t *testing.T, o any) {
			if s := as[*SplitOptions](t, o); s.Goal.Percent == nil || s.Goal.Percent.RatString() != "25" || !s.DryRun {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"split", "orders", "3", "--at", key.String(), "--yes", "--wide", "-o", "json"}, false, func(t *testing.T, o any) {
			if s := as[*SplitOptions](t, o); s.Goal.At == nil || *s.Goal.At != key || !s.Wide || s.Output != "json" {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"split", "orders", "3", "--balanced"}, true, func(t *testing.T, o any) {
			if s := as[*SplitOptions](t, o); !s.Goal.Median || s.Sample != reshard.DefaultSampleSize || s.Yes {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"split", "orders", "3", "--balanced", "--sample", "2000", "--sample-window", "1m", "--yes"}, false, func(t *testing.T, o any) {
			if s := as[*SplitOptions](t, o); s.Sample != 2000 || s.SampleWindow != time.Minute {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"merge", "orders", "5", "4", "--sample", "500", "--yes"}, false, func(t *testing.T, o any) {
			if m := as[*MergeOptions](t, o); m.Shards != [2]string{shard(5), shard(4)} || m.Sample != 500 {
				t.Errorf("%+v", m)
			}
		}},
		{[]string{"scale", "orders", "--to", "8", "--yes"}, false, func(t *testing.T, o any) {
			if s := as[*ScaleOptions](t, o); s.To != 8 || reshard.Method(s.Method) != reshard.MethodUpdateShardCount || s.Even {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"scale", "orders", "--to", "4", "--method", "splits", "--even", "--dry-run"}, false, func(t *testing.T, o any) {
			if s := as[*ScaleOptions](t, o); reshard.Method(s.Method) != reshard.MethodSplits || !s.Even || !s.DryRun {
				t.Errorf("%+v", s)
			}
		}},
		{[]string{"hot", "orders"}, false, func(t *testing.T, o any) {
			h := as[*HotOptions](t, o)
			if h.Output != "table" || h.Ref.Name != "orders" || h.Window != time.Minute || !h.From.Equal(flagNow.Add(-time.Minute)) || !h.Until.Equal(flagNow) ||
				h.Top != 5 || h.MaxRecords != 100000 || h.Threshold != 50 {
				t.Errorf("%+v", h)
			}
		}},
		{[]string{"hot", flagARN, "--window", "5m", "--until", "2026-11-30T09:00:00Z", "--top", "10", "-o", "json"}, false, func(t *testing.T, o any) {
			h := as[*HotOptions](t, o)
			until := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
			if h.Output != "json" || h.Ref.ARN != flagARN || !h.Until.Equal(until) || !h.From.Equal(until.Add(-5*time.Minute)) || h.Top != 10 {
				t.Errorf("%+v", h)
			}
		}},
		{[]string{"hot", "orders", "--from-timestamp", "2h", "--until", "1h", "--max-records", "500", "--threshold", "12.5"}, false, func(t *testing.T, o any) {
			h := as[*HotOptions](t, o)
			if !h.From.Equal(twoHoursAgo) || !h.Until.Equal(flagNow.Add(-time.Hour)) || h.MaxRecords != 500 || h.Threshold != 12.5 {
				t.Errorf("%+v", h)
			}
		}},
		{[]string{"hot", "orders", "--from-timestamp", "1764496800"}, false, func(t *testing.T, o any) {
			if h := as[*HotOptions](t, o); !h.From.Equal(time.Unix(1764496800, 0)) || !h.Until.Equal(flagNow) {
				t.Errorf("%+v", h)
			}
		}},
		{[]string{"lag", "orders", "--checkpoint", "cp.json"}, false, func(t *testing.T, o any) {
			l := as[*LagOptions](t, o)
			if l.Output != "table" || l.Checkpoint != "cp.json" || l.LeaseTable != "" || l.KCLTable != "" || l.Ref.Name != "orders" {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"lag", flagARN, "--kcl-table", "orders-app", "-o", "json"}, false, func(t *testing.T, o any) {
			if l := as[*LagOptions](t, o); l.Output != "json" || l.KCLTable != "orders-app" || l.Ref.Region != "eu-west-1" || l.table() != "orders-app" {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"lag", "orders", "--lease-table", "orders-tail"}, false, func(t *testing.T, o any) {
			if l := as[*LagOptions](t, o); l.LeaseTable != "orders-tail" || l.table() != "orders-tail" {
				t.Errorf("%+v", l)
			}
		}},
		{[]string{"dashboard", "orders", "--lease-table", "orders-tail", "--checkpoint", "o.json"}, true, func(t *testing.T, o any) {
			if d := as[*DashboardOptions](t, o); d.LeaseTable != "orders-tail" || d.KCLTable != "" || d.Checkpoint != "o.json" {
				t.Errorf("%+v", d)
			}
		}},
		{[]string{"dashboard"}, true, func(t *testing.T, o any) {
			d := as[*DashboardOptions](t, o)
			if d.Stream != "" || d.Ref.Name != "" || d.Refresh != 5*time.Second || d.PollInterval != tail.DefaultPollInterval || d.ReadOnly || d.Paused {
				t.Errorf("%+v", d)
			}
		}},
		{[]string{"dashboard", "orders", "--read-only", "--paused", "--checkpoint", "o.json", "--kcl-table", "orders-app"}, true, func(t *testing.T, o any) {
			d := as[*DashboardOptions](t, o)
			if d.Ref.Name != "orders" || !d.ReadOnly || !d.Paused || d.Checkpoint != "o.json" || d.KCLTable != "orders-app" || d.EFO {
				t.Errorf("%+v", d)
			}
		}},
		{[]string{"dashboard", "orders", "--efo"}, true, func(t *testing.T, o any) {
			if d := as[*DashboardOptions](t, o); !d.EFO {
				t.Errorf("%+v", d)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := parseFlags(t, tc.tty, tc.args...)
			if r.code != exitOK || r.stderr != "" || r.stdout != "" || r.opts == nil {
				t.Fatalf("exit %d, stdout %q, stderr %q, ran: %v", r.code, r.stdout, r.stderr, r.opts != nil)
			}
			tc.check(t, r.opts)
		})
	}
}

// Every value the declaration of an enum flag lists is one its command
// accepts, and nothing else is: parsing and completion come from the same
// table, and the help names them.
func TestEnumFlagsDeclaredOnce(t *testing.T) {
	args := map[string][]string{
		"streams": {"streams"}, "create": {"create", "orders", "--shards", "1"},
		"tree": {"tree", "orders"}, "tail": {"tail", "orders"}, "put": {"put", "orders"},
		"split": {"split", "orders", "1", "--yes"}, "merge": {"merge", "orders", "0", "1", "--yes"}, "scale": {"scale", "orders", "--to", "2", "--yes"},
		"hot": {"hot", "orders"}, "lag": {"lag", "orders", "--kcl-table", "orders-app"},
	}
	ios, _, _, _ := TestIO()
	root := NewRootCmd(NewFactory(ios))
	for name, base := range args {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		values := enumNames("output", name)
		for _, v := range values {
			r := parseFlags(t, false, append(slices.Clone(base), "-o", v)...)
			if r.code != exitOK {
				t.Errorf("%s -o %s: exit %d, %s", name, v, r.code, r.stderr)
			}
		}
		// Every value but the default is named in the command's help.
		for _, v := range values[1:] {
			if !strings.Contains(c.Long+c.Example, v) {
				t.Errorf("the help of %s does not name -o %s", name, v)
			}
		}
		if name == "tail" {
			if r := parseFlags(t, false, append(slices.Clone(base), "--format", "yaml")...); r.code != exitUsage {
				t.Errorf("tail --format yaml: exit %d", r.code)
			}
			for _, v := range enumNames("format", "tail") {
				if _, err := render.ParseRecordFormat(v); err != nil {
					t.Errorf("tail --format %s: render does not know it: %v", v, err)
				}
				if !strings.Contains(c.Flag("format").Usage, v) {
					t.Errorf("the help of --format does not name %s: %q", v, c.Flag("format").Usage)
				}
			}
		}
		if name == "put" {
			formats := enumNames("format", "put")
			if want := []string{putFormatLines, putFormatJSON}; !slices.Equal(formats, want) {
				t.Errorf("put --format values %q, the formats put reads %q", formats, want)
			}
			if fl := c.Flag("format"); fl.DefValue != formats[0] {
				t.Errorf("put --format defaults to %q, the declaration to %q", fl.DefValue, formats[0])
			}
			for _, v := range formats {
				if r := parseFlags(t, false, "put", "orders", "--format", v); r.code != exitOK {
					t.Errorf("put --format %s: exit %d, %s", v, r.code, r.stderr)
				}
				if !strings.Contains(c.Flag("format").Usage, v) {
					t.Errorf("the help of put --format does not name %s", v)
				}
			}
		}
		if name == "scale" {
			methods := enumNames("method", "scale")
			if want := []string{string(reshard.MethodUpdateShardCount), string(reshard.MethodSplits)}; !slices.Equal(methods, want) {
				t.Errorf("--method values %q, reshard's methods %q", methods, want)
			}
			if fl := c.Flag("method"); fl.DefValue != methods[0] {
				t.Errorf("--method defaults to %q, the declaration to %q", fl.DefValue, methods[0])
			}
			for _, v := range methods {
				if !strings.Contains(c.Flag("method").Usage, v) {
					t.Errorf("the help of --method does not name %s", v)
				}
			}
		}
	}
}
