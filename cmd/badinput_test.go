package cmd

// The bad-input table: every command and flag family
// with input it must refuse, through the real binary (the dashboard, which
// needs a terminal, in-process with terminal streams). Each case asserts:
//
//   - the exit code: 2 for a usage error found from the arguments alone,
//     with no call sent to the service (a proxy counts them); 1 for what
//     needs the service or the local configuration to tell;
//   - exactly one line on stderr, starting "error: ", and nothing on stdout;
//   - no panic or goroutine dump;
//   - nothing changed: no call that writes was sent, the stream's listing
//     is the same before and after the table, and a checkpoint file's bytes
//     and mode are as they were.

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// biCase is one bad input.
type biCase struct {
	name  string
	args  []string
	stdin string
	code  int    // 1 or 2
	msg   string // the error line holds this
	// env is added to the binary's environment; endpoint means the case
	// names its own endpoint (--endpoint-url), so the proxy sees nothing.
	env      []string
	endpoint bool
	// checkpoint: the case's checkpoint file, whose bytes and mode must not
	// change.
	checkpoint string
	// dashboard: run in-process with terminal streams.
	dashboard bool
	// skip: why this backend cannot run the case ("" runs it).
	skip string
}

// mutatingOps are the calls that change a stream.
var mutatingOps = []string{"CreateStream", "DeleteStream", "PutRecord", "PutRecords", "SplitShard", "MergeShards", "UpdateShardCount", "UpdateStreamMode", "IncreaseStreamRetentionPeriod", "DecreaseStreamRetentionPeriod"}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	e.Put(t, c, stream, []emulator.Rec{{PartitionKey: "a", Data: []byte("1")}, {PartitionKey: "b", Data: []byte("2")}})
	sum, err := kstream.Describe(context.Background(), c, kstream.Ref{Name: stream})
	if err != nil {
		t.Fatal(err)
	}
	g := rsGraph(t, c, stream)
	s1 := g.Shard("shardId-000000000001").Range
	missing := emulator.StreamName(t) // never created
	arn := sum.ARN
	otherRegionARN := strings.Replace(arn, ":"+emulator.Region+":", ":eu-west-1:", 1)

	dir := t.TempDir()
	cp := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	doc := func(arn, created string, version int, kind string) string {
		b, _ := json.Marshal(map[string]any{"kind": kind, "version": version, "stream": stream, "streamArn": arn, "streamCreated": created, "shards": map[string]any{}})
		return string(b)
	}
	created := sum.Created.UTC().Format(time.RFC3339Nano)
	corrupt := cp("corrupt.json", "{\"kind\": \"kinesis-shards/checkpoint\", \"vers")
	empty := cp("empty.json", "")
	foreign := cp("foreign.json", doc(strings.TrimSuffix(arn, stream)+"another-stream", created, 1, "kinesis-shards/checkpoint"))
	recreated := cp("recreated.json", doc(arn, "2020-01-01T00:00:00Z", 1, "kinesis-shards/checkpoint"))
	newer := cp("newer.json", doc(arn, created, 5, "kinesis-shards/checkpoint"))
	otherKind := cp("other-kind.json", doc(arn, created, 1, "something-else"))
	badSeq := cp("bad-seq.json", strings.Replace(doc(arn, created, 1, "kinesis-shards/checkpoint"), `"shards":{}`, `"shards":{"shardId-000000000000":{"sequenceNumber":"12ab"}}`, 1))
	cpDir := filepath.Join(dir, "a-directory.json")
	if err := os.Mkdir(cpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	regular := cp("regular-file", "not a directory\n")
	readable := filepath.Join(dir, "readable-corrupt.json")
	if err := os.WriteFile(readable, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}

	// An endpoint that answers like a web server, not like Kinesis.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>not found</html>", http.StatusNotFound)
	}))
	t.Cleanup(web.Close)

	// Does the backend keep streams per region (kinesis-mock does)?
	perRegion := ""
	other := e.Client(t, func(o *kinesis.Options) { o.Region = "eu-west-1"; o.RetryMaxAttempts = 1 })
	if _, err := other.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)}); err == nil {
		perRegion = string(e.Backend) + " keeps one namespace for every region"
	}

	tailArgs := func(extra ...string) []string {
		return append([]string{"tail", stream, "--no-checkpoint"}, extra...)
	}
	yes := func(args ...string) []string { return append(args, "--yes") }
	notFound := fmt.Sprintf("error: stream %q was not found in region %s", missing, emulator.Region)
	usage := func(name string, args []string, msg string) biCase {
		return biCase{name: name, args: args, code: 2, msg: msg}
	}

	cases := []biCase{
		// Unknown stream: needs the service.
		{name: "unknown stream/tree", args: []string{"tree", missing}, code: 1, msg: notFound},
		{name: "unknown stream/tail", args: []string{"tail", missing, "--no-checkpoint"}, code: 1, msg: notFound},
		{name: "unknown stream/put", args: []string{"put", missing}, stdin: "x\n", code: 1, msg: notFound},
		{name: "unknown stream/split", args: yes("split", missing, "0"), code: 1, msg: notFound},
		{name: "unknown stream/merge", args: yes("merge", missing, "0", "1"), code: 1, msg: notFound},
		{name: "unknown stream/scale", args: yes("scale", missing, "--to", "2"), code: 1, msg: notFound},
		{name: "unknown stream/dashboard", args: []string{"dashboard", missing}, dashboard: true, code: 1, msg: notFound},

		// Unknown shard: needs the listing.
		{name: "unknown shard/split", args: yes("split", stream, "99"), code: 1, msg: "has no shard shardId-000000000099"},
		{name: "unknown shard/merge", args: yes("merge", stream, "0", "99"), code: 1, msg: "has no shard shardId-000000000099"},
		{name: "unknown shard/tail --shard", args: tailArgs("--shard", "99"), code: 1, msg: "shardId-000000000099 is not a shard of stream"},
		usage("bad shard id/split", yes("split", stream, "x1"), `shard "x1" is not a shard id`),
		usage("bad shard id/merge", yes("merge", stream, "0", "shardId-x"), `shard "shardId-x" is not a shard id`),
		usage("bad shard id/tail", tailArgs("--shard", "1234567890123"), `shard "1234567890123" is not a shard id`),
		{name: "empty shard id/tail", args: tailArgs("--shard", "", "--idle-exit", "1s"), code: 2, msg: "shard"},
		usage("same shard twice/merge", yes("merge", stream, "1", "shardId-000000000001"), "cannot merge shard shardId-000000000001 with itself"),

		// Malformed stream names and ARNs, on every command.
		usage("malformed ARN/short account", []string{"tree", "arn:aws:kinesis:us-east-1:123:stream/x"}, "is not a Kinesis stream ARN"),
		usage("malformed ARN/another service", []string{"tail", "arn:aws:s3:::bucket", "--no-checkpoint"}, "is not a Kinesis stream ARN"),
		usage("malformed ARN/no name", []string{"put", "arn:aws:kinesis:us-east-1:123456789012:stream/"}, "is not a Kinesis stream ARN"),
		usage("malformed ARN/not a stream", yes("split", "arn:aws:kinesis:us-east-1:123456789012:table/x", "0"), "is not a Kinesis stream ARN"),
		usage("malformed ARN/merge", yes("merge", "arn:aws:kinesis::123456789012:stream/x", "0", "1"), "is not a Kinesis stream ARN"),
		usage("malformed ARN/scale", yes("scale", "arn:aws:kinesis:us-east-1:123456789012:stream/a b", "--to", "2"), "is not a Kinesis stream ARN"),
		usage("malformed ARN/create", []string{"create", "arn:aws:kinesis:us-east-1:123:stream/x", "--shards", "1"}, "is not a Kinesis stream ARN"),
		{name: "malformed ARN/dashboard", args: []string{"dashboard", "arn:aws:kinesis:us-east-1:1:stream/x"}, dashboard: true, code: 2, msg: "is not a Kinesis stream ARN"},
		usage("bad stream name", []string{"tree", "bad name!"}, "is not a stream name"),
		usage("stream name too long", []string{"tree", strings.Repeat("s", 129)}, "is not a stream name"),
		usage("ARN region vs --region", []string{"tree", arn, "--region", "eu-west-1"}, "--region eu-west-1 disagrees with the stream ARN's region "+emulator.Region),
		{name: "ARN of another region", args: []string{"tree", otherRegionARN}, code: 1, msg: fmt.Sprintf("error: stream %q was not found in region eu-west-1", stream), skip: perRegion},

		// Hash keys (split --at) and percentages.
		usage("hash key/leading zero", yes("split", stream, "1", "--at", "0"+s1.End.String()), "is not a canonical decimal: no sign, no leading zeros"),
		usage("hash key/negative", yes("split", stream, "1", "--at", "-5"), "is not a canonical decimal"),
		usage("hash key/plus sign", yes("split", stream, "1", "--at", "+5"), "is not a canonical decimal"),
		usage("hash key/exponent", yes("split", stream, "1", "--at", "1e5"), "is not a canonical decimal"),
		usage("hash key/empty", yes("split", stream, "1", "--at", ""), "hash key is empty"),
		usage("hash key/2^128", yes("split", stream, "1", "--at", new(big.Int).Lsh(big.NewInt(1), 128).String()), "is larger than 2^128-1"),
		{name: "hash key/outside the shard", args: yes("split", stream, "1", "--at", "5"), code: 1, msg: "hash key 5 is outside shard shardId-000000000001"},
		{name: "hash key/start of the shard", args: yes("split", stream, "1", "--at", s1.Start.String()), code: 1, msg: "is too close to an edge of shard shardId-000000000001"},
		{name: "hash key/start+1", args: yes("split", stream, "1", "--at", rsPlus(s1.Start, 1).String()), code: 1, msg: "is too close to an edge"},
		{name: "hash key/end of the shard", args: yes("split", stream, "1", "--at", s1.End.String()), code: 1, msg: "is too close to an edge"},
		usage("percent/0", yes("split", stream, "1", "--at-percent", "0"), "it must be greater than 0 and less than 100"),
		usage("percent/100", yes("split", stream, "1", "--at-percent", "100"), "it must be greater than 0 and less than 100"),
		usage("percent/negative", yes("split", stream, "1", "--at-percent", "-3"), "is not a decimal number"),
		usage("percent/word", yes("split", stream, "1", "--at-percent", "half"), "is not a decimal number"),
		usage("--at and --at-percent", yes("split", stream, "1", "--at", "5", "--at-percent", "5"), "--at and --at-percent do not go together"),

		// Counts.
		usage("count/create --shards 0", []string{"create", missing, "--shards", "0"}, "--shards must be at least 1, not 0"),
		usage("count/create --shards -1", []string{"create", missing, "--shards", "-1"}, "--shards must be at least 1, not -1"),
		usage("count/create --shards x", []string{"create", missing, "--shards", "x"}, `invalid argument "x" for "--shards"`),
		usage("count/create --shards 10001", []string{"create", missing, "--shards", "10001"}, "more than a stream can have"),
		usage("count/create without --shards", []string{"create", missing}, "say how many shards with --shards N"),
		usage("count/scale --to 0", yes("scale", stream, "--to", "0"), "--to 0 is not a shard count"),
		usage("count/scale --to 20001", yes("scale", stream, "--to", "20001"), "--to 20001 is not a shard count"),
		usage("count/scale --to x", yes("scale", stream, "--to", "x"), `invalid argument "x" for "--to"`),
		usage("count/scale without --to", yes("scale", stream), "say how many open shards with --to N"),
		usage("count/tail --max-records -1", tailArgs("--max-records", "-1"), "--max-records must not be negative"),
		usage("count/tail --max-records x", tailArgs("--max-records", "x"), `invalid argument "x" for "--max-records"`),
		usage("count/tail --create-if-missing 0", tailArgs("--create-if-missing", "0"), "--create-if-missing needs a shard count from 1 to 10000"),
		usage("count/split --sample -1", yes("split", stream, "1", "--sample", "-1"), "--sample must be from"),
		usage("count/split --balanced --sample 5", yes("split", stream, "1", "--balanced", "--sample", "5"), "--balanced needs --sample of at least"),
		usage("count/put --retries -1", []string{"put", stream, "--retries", "-1"}, "--retries must not be negative"),
		usage("count/put --rate -1", []string{"put", stream, "--rate", "-1"}, "--rate must be a positive number of records per second"),
		usage("count/put --rate 0", []string{"put", stream, "--rate", "0"}, "--rate must be a positive number of records per second (leave it out for no cap)"),
		usage("count/put --rate-bytes 0", []string{"put", stream, "--rate-bytes", "0"}, "--rate-bytes: it must be at least 1 byte per second"),
		usage("count/put --rate-bytes parsec", []string{"put", stream, "--rate-bytes", "3parsec"}, `--rate-bytes: unknown unit "parsec"`),

		// Durations.
		usage("duration/create --wait -1s", []string{"create", missing, "--shards", "1", "--wait", "-1s"}, "--wait must not be negative"),
		usage("duration/create --wait x", []string{"create", missing, "--shards", "1", "--wait", "x"}, `invalid argument "x" for "--wait"`),
		usage("duration/split --wait 0", yes("split", stream, "1", "--wait", "0"), "--wait must be positive"),
		usage("duration/merge --wait -1s", yes("merge", stream, "0", "1", "--wait", "-1s"), "--wait must be positive"),
		usage("duration/split --sample-window 0", yes("split", stream, "1", "--sample-window", "0"), "--sample-window must be positive"),
		usage("duration/tail --idle-exit x", tailArgs("--idle-exit", "x"), `invalid argument "x" for "--idle-exit"`),
		usage("duration/tail --idle-exit -1s", tailArgs("--idle-exit", "-1s"), "--idle-exit must not be negative"),
		usage("duration/tail --poll-interval 100ms", tailArgs("--poll-interval", "100ms"), "--poll-interval must be at least 200ms"),
		usage("duration/tail --relist-interval 100ms", tailArgs("--relist-interval", "100ms"), "--relist-interval must be at least 1s"),
		usage("duration/tail --checkpoint-interval 0", tailArgs("--checkpoint-interval", "0"), "--checkpoint-interval must be positive"),
		{name: "duration/dashboard --refresh 500ms", args: []string{"dashboard", stream, "--refresh", "500ms"}, dashboard: true, code: 2, msg: "--refresh must be at least 1s"},
		{name: "duration/dashboard --poll-interval 1ms", args: []string{"dashboard", stream, "--poll-interval", "1ms"}, dashboard: true, code: 2, msg: "--poll-interval must be at least 200ms"},

		// Timestamps.
		usage("timestamp/tail word", tailArgs("--from-timestamp", "yesterday"), `"yesterday" is not a timestamp`),
		usage("timestamp/tail future", tailArgs("--from-timestamp", "2099-01-01T00:00:00Z"), "is in the future"),
		usage("timestamp/tail negative duration", tailArgs("--from-timestamp", "-5m"), "must be positive"),
		usage("timestamp/tail future Unix seconds", tailArgs("--from-timestamp", "99999999999"), "is not a Unix time in the past"),
		usage("timestamp/tail month 13", tailArgs("--from-timestamp", "2026-13-01T00:00:00Z"), "is not a timestamp"),
		{name: "timestamp/tail empty", args: tailArgs("--from-timestamp", "", "--idle-exit", "1s"), code: 2, msg: "empty timestamp"},
		usage("timestamp/tree word", []string{"tree", stream, "--at", "nope"}, `"nope" is not a timestamp`),
		usage("timestamp/tree future", []string{"tree", stream, "--at", "2099-01-01T00:00:00Z"}, "is in the future"),
		usage("timestamp/tree zero duration", []string{"tree", stream, "--at", "0s"}, "must be positive"),
		usage("timestamp/tree empty", []string{"tree", stream, "--at", ""}, "empty timestamp"),
		usage("timestamp/tree huge Unix seconds", []string{"tree", stream, "--at", "99999999999999999999999"}, "is not a Unix time in the past"),

		// Formats.
		usage("format/streams -o yaml", []string{"streams", "-o", "yaml"}, `unknown output format "yaml": use one of table, json`),
		usage("format/tree -o yaml", []string{"tree", stream, "-o", "yaml"}, `unknown output format "yaml"`),
		usage("format/put -o yaml", []string{"put", stream, "-o", "yaml"}, `unknown output format "yaml"`),
		usage("format/create -o yaml", []string{"create", missing, "--shards", "1", "-o", "yaml"}, `unknown output format "yaml"`),
		usage("format/split -o yaml", yes("split", stream, "1", "-o", "yaml"), `unknown output format "yaml"`),
		usage("format/merge -o yaml", yes("merge", stream, "0", "1", "-o", "yaml"), `unknown output format "yaml"`),
		usage("format/scale -o yaml", yes("scale", stream, "--to", "3", "-o", "yaml"), `unknown output format "yaml"`),
		usage("format/tail -o yaml", tailArgs("-o", "yaml"), `unknown record format "yaml"`),
		usage("format/tail --format xml", tailArgs("--format", "xml"), `unknown record format "xml": use json, raw or text`),
		usage("format/tail -o and --format disagree", tailArgs("--format", "json", "-o", "raw"), "-o raw and --format json disagree"),

		// jq expressions: refused before any call, naming where the mistake is.
		usage("jq/tail --filter syntax", tailArgs("--filter", `.payload.level = = "error"`), `error: --filter: unexpected token "=" at column 18 in the jq expression '.payload.level = = "error"'`),
		usage("jq/tail --filter on line 2", tailArgs("--filter", ".payload\n| select(.a ==)"), `error: --filter: unexpected token ")" at line 2, column 15 in the jq expression '.payload\n| select(.a ==)'`),
		usage("jq/tail --jq unknown function", tailArgs("--jq", "foo(1)"), "error: --jq: function not defined: foo/1 in the jq expression 'foo(1)'"),
		usage("jq/tail --jq unfinished", tailArgs("--jq", "{a: .b"), "error: --jq: unexpected end at column 7 in the jq expression '{a: .b'"),
		usage("jq/tail --filter empty", tailArgs("--filter", ""), `error: --filter: missing query (try ".") in the jq expression ''`),
		usage("jq/tail --jq input", tailArgs("--jq", "input"), "error: --jq: input(s)/0 is not allowed in the jq expression 'input'"),
		usage("format/put --format yaml", []string{"put", stream, "--format", "yaml"}, `unknown --format "yaml": use lines or json`),
		usage("combination/put --format json --key", []string{"put", stream, "--format", "json", "--key", "k"}, "--key does not go with --format json"),
		{name: "format/put --format json, a line that is not a record", args: []string{"put", stream, "--format", "json"}, stdin: "{\"level\":\"error\"}\n", code: 1,
			msg: `line 1: not a tail JSON record: it has no "shardId"; nothing was written`},
		{name: "format/dashboard -o json", args: []string{"dashboard", stream, "-o", "json"}, dashboard: true, code: 2, msg: "dashboard has no -o/--output"},
		usage("format/scale --method", yes("scale", stream, "--to", "3", "--method", "uniform"), `--method "uniform" is not known`),

		// Partition keys and flag combinations.
		usage("key/put empty", []string{"put", stream, "--key", ""}, "a partition key must have 1 to 256 characters, not 0"),
		usage("key/tail too long", tailArgs("--key", strings.Repeat("k", 257)), "not 257"),
		usage("key/tree empty", []string{"tree", stream, "--key", ""}, "a partition key must have 1 to 256 characters"),
		usage("key/put --key-field empty", []string{"put", stream, "--key-field", ""}, "--key-field needs a field name"),
		usage("combination/put --key --key-field", []string{"put", stream, "--key", "a", "--key-field", "b"}, "--key and --key-field do not go together"),
		usage("combination/tail --from-tip --from-timestamp", tailArgs("--from-tip", "--from-timestamp", "5m"), "--from-tip and --from-timestamp do not go together"),
		usage("combination/tail --checkpoint --no-checkpoint", tailArgs("--checkpoint", filepath.Join(dir, "x.json")), "--checkpoint and --no-checkpoint do not go together"),
		usage("combination/tail --key --shard", tailArgs("--key", "k", "--shard", "1"), "--key and --shard do not go together"),
		usage("combination/tree --open --at", []string{"tree", stream, "--open", "--at", "5m"}, "--open and --at do not go together"),
		usage("combination/create --shards --on-demand", []string{"create", missing, "--shards", "2", "--on-demand"}, "--shards and --on-demand do not go together"),
		usage("combination/split --balanced --at", yes("split", stream, "1", "--balanced", "--at", "5"), "--balanced picks the split key from sampled traffic"),
		usage("confirmation/split without --yes", []string{"split", stream, "1"}, "stdin is not a terminal: pass --yes to confirm"),

		// Arguments and flags cobra refuses.
		usage("unknown flag", []string{"tree", stream, "--bogus"}, "unknown flag: --bogus"),
		usage("unknown command", []string{"bogus"}, `unknown command "bogus"`),
		usage("too many arguments/tree", []string{"tree", stream, "extra"}, "takes STREAM (got 2 argument(s))"),
		usage("too many arguments/streams", []string{"streams", "extra"}, "takes no arguments"),
		usage("missing argument/split", yes("split", stream), "takes STREAM SHARD (got 1 argument(s))"),

		// Lease tables (DynamoDB; the environment points it at a closed port,
		// so nothing can reach AWS).
		usage("lease table/tail name too short", []string{"tail", stream, "--lease-table", "x"}, `--lease-table "x" is not a DynamoDB table name`),
		usage("lease table/tail with --no-checkpoint", tailArgs("--lease-table", "leases"), "--lease-table keeps the checkpoints"),
		usage("lease table/tail with --key", []string{"tail", stream, "--lease-table", "leases", "--key", "k"}, "--lease-table shares the whole stream"),
		usage("lease table/tail --lease-duration 10ms", []string{"tail", stream, "--lease-table", "leases", "--lease-duration", "10ms"}, "--lease-duration must be at least 1s"),
		usage("lease table/tail --worker-id alone", []string{"tail", stream, "--worker-id", "w1"}, "go with --lease-table"),
		{name: "lease table/tail empty name", args: []string{"tail", stream, "--lease-table", "", "--idle-exit", "1s"}, code: 2, msg: "--lease-table"},
		usage("lease table/tree bad name", []string{"tree", stream, "--kcl-table", "bad name!"}, `--kcl-table "bad name!" is not a DynamoDB table name`),
		usage("lease table/tree empty name", []string{"tree", stream, "--kcl-table", ""}, `--kcl-table "" is not a DynamoDB table name`),
		{name: "lease table/dashboard bad name", args: []string{"dashboard", stream, "--kcl-table", "ab"}, dashboard: true, code: 2, msg: `--kcl-table "ab" is not a DynamoDB table name`},
		{name: "lease table/tree DynamoDB unreachable", args: []string{"tree", stream, "--kcl-table", "leases"}, code: 1, msg: "cannot reach the DynamoDB endpoint http://127.0.0.1:1: connection refused"},
		{name: "lease table/tail DynamoDB unreachable", args: []string{"tail", stream, "--lease-table", "leases"}, code: 1, msg: "cannot reach the DynamoDB endpoint http://127.0.0.1:1"},

		// Checkpoint files: refused, left as they are.
		{name: "checkpoint/corrupt", args: []string{"tail", stream, "--checkpoint", corrupt}, checkpoint: corrupt, code: 1, msg: "checkpoint file is not valid: " + corrupt + ": not JSON"},
		{name: "checkpoint/empty", args: []string{"tail", stream, "--checkpoint", empty}, checkpoint: empty, code: 1, msg: "checkpoint file is not valid: " + empty},
		{name: "checkpoint/another stream", args: []string{"tail", stream, "--checkpoint", foreign}, checkpoint: foreign, code: 1, msg: "checkpoint file belongs to another stream"},
		{name: "checkpoint/stream re-created", args: []string{"tail", stream, "--checkpoint", recreated}, checkpoint: recreated, code: 1, msg: "a stream deleted and re-created under the same name is another stream"},
		{name: "checkpoint/newer version", args: []string{"tail", stream, "--checkpoint", newer}, checkpoint: newer, code: 1, msg: "version 5 is newer than this kinesis-shards understands"},
		{name: "checkpoint/foreign kind", args: []string{"tail", stream, "--checkpoint", otherKind}, checkpoint: otherKind, code: 1, msg: `not a kinesis-shards checkpoint (kind "something-else")`},
		{name: "checkpoint/bad sequence number", args: []string{"tail", stream, "--checkpoint", badSeq}, checkpoint: badSeq, code: 1, msg: `"12ab" is not a sequence number`},
		{name: "checkpoint/a directory", args: []string{"tail", stream, "--checkpoint", cpDir}, code: 1, msg: "checkpoint file " + cpDir + " is a directory"},
		{name: "checkpoint/not a regular file", args: []string{"tail", stream, "--checkpoint", os.DevNull}, code: 1, msg: "is not a regular file"},
		{name: "checkpoint/directory cannot be made", args: []string{"tail", stream, "--checkpoint", filepath.Join(regular, "cp.json")}, checkpoint: regular, code: 1, msg: "not a directory"},
		{name: "checkpoint/corrupt and readable by others", args: []string{"tail", stream, "--checkpoint", readable}, checkpoint: readable, code: 1, msg: "checkpoint file is not valid"},
		biUnreadable(t, dir, stream),

		// Endpoints, configuration and regions.
		{name: "endpoint/unreachable/streams", args: []string{"streams", "--endpoint-url", "http://127.0.0.1:1"}, endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1: connection refused"},
		{name: "endpoint/unreachable/tree", args: []string{"tree", stream, "--endpoint-url", "http://127.0.0.1:1"}, endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/tail", args: []string{"tail", stream, "--no-checkpoint", "--endpoint-url", "http://127.0.0.1:1"}, endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/put", args: []string{"put", stream, "--endpoint-url", "http://127.0.0.1:1"}, stdin: "x\n", endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/create", args: []string{"create", missing, "--shards", "1", "--endpoint-url", "http://127.0.0.1:1"}, endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/split", args: yes("split", stream, "1", "--endpoint-url", "http://127.0.0.1:1"), endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/merge", args: yes("merge", stream, "0", "1", "--endpoint-url", "http://127.0.0.1:1"), endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/unreachable/scale", args: yes("scale", stream, "--to", "3", "--endpoint-url", "http://127.0.0.1:1"), endpoint: true, code: 1, msg: "cannot reach the Kinesis endpoint http://127.0.0.1:1"},
		{name: "endpoint/not Kinesis", args: []string{"tree", stream, "--endpoint-url", web.URL}, endpoint: true, code: 1, msg: web.URL + " answered HTTP 404 Not Found, which is not an answer of the Kinesis API"},
		usage("endpoint/not http", []string{"streams", "--endpoint-url", "ftp://example.com"}, `--endpoint-url "ftp://example.com" is not an http(s) URL`),
		usage("endpoint/no host", []string{"streams", "--endpoint-url", "http://"}, "is not an http(s) URL"),
		{name: "profile/unknown", args: []string{"streams", "--profile", "no-such-profile"}, code: 1, msg: `AWS profile "no-such-profile" was not found`},
		usage("region/malformed", []string{"streams", "--region", "bad region!"}, `--region "bad region!" is not an AWS region name`),
		{name: "region/malformed in the environment", args: []string{"tree", stream}, env: []string{"AWS_REGION=Not/A/Region"}, code: 1, msg: `the configured AWS region "Not/A/Region"`},
		{name: "region/wrong", args: []string{"tree", stream, "--region", "eu-west-1"}, code: 1, msg: fmt.Sprintf("error: stream %q was not found in region eu-west-1", stream), skip: perRegion},
	}

	before := rsListing(t, c, stream)
	type snap struct {
		b    []byte
		mode fs.FileMode
	}
	snaps := map[string]snap{}
	for _, tc := range cases {
		if tc.checkpoint != "" {
			b, err := os.ReadFile(tc.checkpoint)
			st, err2 := os.Stat(tc.checkpoint)
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			snaps[tc.checkpoint] = snap{b, st.Mode()}
		}
	}
	binary(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, tc := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(tc.name, func(t *testing.T) {
				if tc.skip != "" {
					t.Skip(tc.skip)
				}
				res, calls := biRun(t, e, tc)
				checkFailure(t, res, tc.code, tc.msg)
				for _, bad := range []string{"panic", "goroutine "} {
					if strings.Contains(res.stderr+res.stdout, bad) {
						t.Errorf("output holds %q", bad)
					}
				}
				sent := 0
				for op, n := range calls {
					sent += n
					if slices.Contains(mutatingOps, op) && n > 0 {
						t.Errorf("%d %s call(s) were sent", n, op)
					}
				}
				if tc.code == 2 && sent > 0 {
					t.Errorf("a usage error, yet %d call(s) were sent: %v", sent, calls)
				}
				if tc.checkpoint != "" {
					b, err := os.ReadFile(tc.checkpoint)
					st, err2 := os.Stat(tc.checkpoint)
					if err != nil || err2 != nil || string(b) != string(snaps[tc.checkpoint].b) || st.Mode() != snaps[tc.checkpoint].mode {
						t.Errorf("checkpoint file %s changed: %v %v, mode %v → %v", tc.checkpoint, err, err2, snaps[tc.checkpoint].mode, st.Mode())
					}
				}
			})
		}()
	}
	wg.Wait()
	if after := rsListing(t, c, stream); !slices.Equal(before, after) {
		t.Fatalf("the stream's listing changed:\n%v\n%v", before, after)
	}
	// The never-created stream is still not there.
	if _, err := kstream.Describe(context.Background(), c, kstream.Ref{Name: missing}); err == nil {
		t.Fatalf("stream %s was created", missing)
	}
}

// biRun runs a case through its own counting proxy and returns the result
// and the calls the proxy saw.
func biRun(t *testing.T, e *emulator.Emulator, tc biCase) (cliResult, map[string]int) {
	t.Helper()
	inj := faults.New(1)
	p := inj.Proxy(t, e.Endpoint)
	if tc.dashboard {
		ios, _, out, errOut := TestIO()
		ios.StdinTTY, ios.StdoutTTY, ios.StderrTTY = true, true, true
		f := NewFactory(ios)
		f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
			o := e.ClientOptions()
			cfg := aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: newHTTPClient(), Retryer: awscall.KinesisRetryer}
			return newKinesisClient(cfg, clientConfig{EndpointURL: p.URL}), nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code := run(ctx, f, tc.args)
		return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}, inj.Counts()
	}
	env := append(e.Env(), "XDG_STATE_HOME="+t.TempDir(), "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1")
	if !tc.endpoint {
		env = append(env, "AWS_ENDPOINT_URL_KINESIS="+p.URL)
	}
	env = append(env, tc.env...)
	return runBinary(t, env, tc.stdin, tc.args...), inj.Counts()
}

// biUnreadable is a checkpoint file its owner cannot read: mode 0000,
// which does not stop root (then the case is skipped, saying so).
func biUnreadable(t *testing.T, dir, stream string) biCase {
	p := filepath.Join(dir, "unreadable.json")
	if err := os.WriteFile(p, []byte("{}"), 0o000); err != nil {
		t.Fatal(err)
	}
	c := biCase{name: "checkpoint/unreadable", args: []string{"tail", stream, "--checkpoint", p}, checkpoint: p, code: 1, msg: "cannot read checkpoint file " + p + ": permission denied"}
	if os.Geteuid() == 0 {
		c.skip = "running as root, which reads a file whatever its mode: no unreadable checkpoint file can be made"
	}
	return c
}
