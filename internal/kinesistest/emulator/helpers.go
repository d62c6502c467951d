package emulator

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Region is the region of every test client; no emulator needs another.
const Region = "us-east-1"

// secretKey is never checked: no emulator verifies signatures.
const secretKey = "kinesis-shards-test"

const (
	pollEvery   = 50 * time.Millisecond // waiters at 50 ms (docs/KINESIS-NOTES.md §10)
	waitMax     = 30 * time.Second
	callTimeout = 2 * time.Minute // kinesis-mock's PutRecords slows down as a shard fills
)

// AccountID is the 12-digit account id of the test package running in the
// working directory: a hash of the directory relative to the module root, so
// it is stable across runs and differs between packages. kinesis-mock takes
// a 12-digit access key id as the account, which gives each package a
// private namespace on a shared emulator. Never 000000000000 (kinesis-mock's
// default account).
func AccountID() string {
	wd, _ := os.Getwd()
	rel := wd
	if root, err := RepoRoot(); err == nil {
		if r, err := filepath.Rel(root, wd); err == nil {
			rel = r
		}
	}
	h := fnv.New64a()
	h.Write([]byte(filepath.ToSlash(rel)))
	n := h.Sum64() % 1_000_000_000_000
	if n == 0 {
		n = 1
	}
	return fmt.Sprintf("%012d", n)
}

// AccessKeyID is the access key id of Client and Env: the 12-digit account
// id (Options.AccountID, by default AccountID()).
func (e *Emulator) AccessKeyID() string { return e.opts.AccountID }

// ClientOptions returns the options Client builds on, for code without a
// testing.TB (soak programs). No config loader is involved: no profile, no
// AWS_CA_BUNDLE and no environment variable can change them.
func (e *Emulator) ClientOptions() kinesis.Options {
	return kinesis.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(e.AccessKeyID(), secretKey, ""),
		BaseEndpoint: aws.String(e.Endpoint),
		HTTPClient:   &http.Client{Transport: e.transport},
	}
}

// Client returns a Kinesis client for the emulator with the package's access
// key (see AccountID), the shared Transport and the SDK's default retryer
// (3 attempts). Negative
// tests pass func(o *kinesis.Options) { o.RetryMaxAttempts = 1 }: several
// emulator errors are HTTP 500s, which the SDK would retry.
func (e *Emulator) Client(t testing.TB, opts ...func(*kinesis.Options)) *kinesis.Client {
	t.Helper()
	return kinesis.New(e.ClientOptions(), opts...)
}

// Env returns a complete environment for running the real binary against
// the emulator (cmd.Env = e.Env()): the current environment without any
// AWS_* variable, plus the endpoint, the package's static credentials, the
// region, no instance metadata, and empty shared config and credentials
// files, so nothing from the developer's machine leaks in.
func (e *Emulator) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(kv), "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_ENDPOINT_URL_KINESIS="+e.Endpoint,
		"AWS_ACCESS_KEY_ID="+e.AccessKeyID(),
		"AWS_SECRET_ACCESS_KEY="+secretKey,
		"AWS_REGION="+Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+os.DevNull, // read as an empty file
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
	)
}

var (
	streamSeq atomic.Uint64
	// streamToken tells apart test processes sharing one endpoint (kinesalite
	// and moto have a single account).
	streamToken = strconv.FormatUint(rand.Uint64()%(36*36*36*36*36), 36)
)

// StreamName returns a stream name unique to this call: t.Name() with every
// character outside [a-zA-Z0-9_.-] replaced ('/' by '.'), truncated so the
// whole name fits 128 characters, then "-" + a per-process random token + "-"
// + a process-wide counter.
func StreamName(t testing.TB) string { return streamName(t.Name()) }

func streamName(testName string) string {
	suffix := "-" + streamToken + "-" + strconv.FormatUint(streamSeq.Add(1), 10)
	base := []byte(testName)
	for i, c := range base {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		case c == '/':
			base[i] = '.'
		default:
			base[i] = '_'
		}
	}
	if n := 128 - len(suffix); len(base) > n {
		base = base[:n]
	}
	if len(base) == 0 {
		base = []byte("stream")
	}
	return string(base) + suffix
}

// CreateStream creates a PROVISIONED stream of shards shards (shards <= 0:
// ON_DEMAND, skipping the test when the backend has none), waits until it
// is ACTIVE and deletes it when the test ends (ignoring errors: the test
// may have deleted it). It fails the test on any error.
func (e *Emulator) CreateStream(t testing.TB, c *kinesis.Client, name string, shards int) {
	t.Helper()
	in := &kinesis.CreateStreamInput{StreamName: aws.String(name)}
	if shards > 0 {
		in.ShardCount = aws.Int32(int32(shards))
	} else {
		if !e.Caps.OnDemand {
			t.Skipf("emulator: %s has no on-demand streams", e.Backend)
		}
		in.StreamModeDetails = &types.StreamModeDetails{StreamMode: types.StreamModeOnDemand}
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	if _, err := c.CreateStream(ctx, in); err != nil {
		t.Fatalf("create stream %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in := &kinesis.DeleteStreamInput{StreamName: aws.String(name)}
		if e.Caps.Consumers {
			in.EnforceConsumerDeletion = aws.Bool(true)
		}
		_, _ = c.DeleteStream(ctx, in)
	})
	e.WaitActive(t, c, name)
}

// WaitActive polls DescribeStreamSummary every 50 ms until the stream is
// ACTIVE (at most 30 s). ResourceNotFoundException counts as "not yet";
// any other error fails the test.
func (e *Emulator) WaitActive(t testing.TB, c *kinesis.Client, name string) {
	t.Helper()
	if err := waitStream(t.Context(), c, name, true); err != nil {
		t.Fatal(err)
	}
}

// WaitDeleted polls until DescribeStreamSummary answers
// ResourceNotFoundException (at most 30 s), the way to know a delete is done
// (docs/KINESIS-NOTES.md §10).
func (e *Emulator) WaitDeleted(t testing.TB, c *kinesis.Client, name string) {
	t.Helper()
	if err := waitStream(t.Context(), c, name, false); err != nil {
		t.Fatal(err)
	}
}

func waitStream(ctx context.Context, c *kinesis.Client, name string, active bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitMax)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := "no answer"
	for {
		out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
			if !active {
				return nil
			}
			last = "ResourceNotFoundException"
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("describe stream %s: %w", name, err)
		case err == nil:
			last = string(out.StreamDescriptionSummary.StreamStatus)
			if active && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			want := "ACTIVE"
			if !active {
				want = "deleted"
			}
			return fmt.Errorf("stream %s not %s after %v (last: %s)", name, want, waitMax, last)
		case <-tick.C:
		}
	}
}

// Rec is a record to put.
type Rec struct {
	PartitionKey    string
	Data            []byte
	ExplicitHashKey string // optional
}

// PutRecords limits (docs/KINESIS-NOTES.md §1).
const (
	putMaxEntries = 500
	putMaxBytes   = 5 << 20
	putAttempts   = 5
)

// Put writes recs with PutRecords in batches of at most 500 entries and
// 5 MiB, retrying failed entries up to 4 more times, and returns the result
// entry of every record in input order (ShardId, SequenceNumber). Any record
// still failing fails the test. A retried entry lands after the batch's
// later entries of its shard, as on AWS: tests that assert order within a
// shard must not inject PutRecords faults into c.
func (e *Emulator) Put(t testing.TB, c *kinesis.Client, name string, recs []Rec) []types.PutRecordsResultEntry {
	t.Helper()
	results := make([]types.PutRecordsResultEntry, len(recs))
	for _, b := range batches(recs) {
		if err := putBatch(t.Context(), c, name, recs, b[0], b[1], results); err != nil {
			t.Fatal(err)
		}
	}
	return results
}

// batches splits recs into [start, end) runs within the PutRecords limits
// (a single oversized record still gets its own batch: the service rejects
// it, and the test sees that error).
func batches(recs []Rec) [][2]int {
	var out [][2]int
	for start := 0; start < len(recs); {
		end, size := start, 0
		for end < len(recs) && end-start < putMaxEntries {
			n := len(recs[end].Data) + len(recs[end].PartitionKey)
			if end > start && size+n > putMaxBytes {
				break
			}
			size += n
			end++
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// putBatch puts recs[start:end] and fills results at the same positions.
func putBatch(ctx context.Context, c *kinesis.Client, name string, recs []Rec, start, end int, results []types.PutRecordsResultEntry) error {
	pending := make([]int, 0, end-start) // indexes into recs still to write
	for i := start; i < end; i++ {
		pending = append(pending, i)
	}
	for attempt := 1; ; attempt++ {
		entries := make([]types.PutRecordsRequestEntry, len(pending))
		for j, i := range pending {
			entries[j] = types.PutRecordsRequestEntry{PartitionKey: aws.String(recs[i].PartitionKey), Data: recs[i].Data}
			if recs[i].ExplicitHashKey != "" {
				entries[j].ExplicitHashKey = aws.String(recs[i].ExplicitHashKey)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := c.PutRecords(cctx, &kinesis.PutRecordsInput{StreamName: aws.String(name), Records: entries})
		cancel()
		if err != nil {
			return fmt.Errorf("put records to %s: %w", name, err)
		}
		if len(out.Records) != len(pending) {
			return fmt.Errorf("put records to %s: %d result entries for %d records", name, len(out.Records), len(pending))
		}
		var failed []int
		var first types.PutRecordsResultEntry
		for j, r := range out.Records {
			if r.ErrorCode != nil {
				if failed == nil {
					first = r
				}
				failed = append(failed, pending[j])
				continue
			}
			results[pending[j]] = r
		}
		if len(failed) == 0 {
			return nil
		}
		if attempt == putAttempts {
			return fmt.Errorf("put records to %s: %d entries still failing after %d attempts, e.g. %s: %s",
				name, len(failed), attempt, aws.ToString(first.ErrorCode), aws.ToString(first.ErrorMessage))
		}
		pending = failed
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

// ReadAll reads every shard of the stream from TRIM_HORIZON and returns the
// records by shard id. It stops reading a shard at the first empty response
// or at its end: right for data written before the call on an emulator, not
// for AWS, where empty responses are normal mid-shard.
func (e *Emulator) ReadAll(t testing.TB, c *kinesis.Client, name string) map[string][]types.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	got := map[string][]types.Record{}
	var token *string
	for {
		in := &kinesis.ListShardsInput{NextToken: token}
		if token == nil {
			in.StreamName = aws.String(name)
		}
		out, err := c.ListShards(ctx, in)
		if err != nil {
			t.Fatalf("list shards of %s: %v", name, err)
		}
		for _, s := range out.Shards {
			recs, err := readShard(ctx, c, name, aws.ToString(s.ShardId))
			if err != nil {
				t.Fatal(err)
			}
			got[aws.ToString(s.ShardId)] = recs
		}
		if token = out.NextToken; token == nil {
			return got
		}
	}
}

func readShard(ctx context.Context, c *kinesis.Client, name, shard string) ([]types.Record, error) {
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
		StreamName: aws.String(name), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		return nil, fmt.Errorf("get shard iterator %s/%s: %w", name, shard, err)
	}
	var recs []types.Record
	for iter := it.ShardIterator; iter != nil; {
		out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
		if err != nil {
			return nil, fmt.Errorf("get records %s/%s: %w", name, shard, err)
		}
		recs = append(recs, out.Records...)
		if len(out.Records) == 0 {
			break
		}
		iter = out.NextShardIterator
	}
	return recs, nil
}
