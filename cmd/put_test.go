package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/producer"
)

// fakePut records what reached the "stream" and fails entries on demand.
type fakePut struct {
	mu      sync.Mutex
	calls   [][]string // keys per call
	written []types.PutRecordsRequestEntry
	// fail decides, per call number (1-based) and entry index, whether the entry fails.
	fail func(call, i int, e types.PutRecordsRequestEntry) bool
	// callErr fails a whole call.
	callErr func(call int) error
}

func (f *fakePut) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	return &kinesis.DescribeStreamSummaryOutput{StreamDescriptionSummary: &types.StreamDescriptionSummary{
		StreamName: in.StreamName, StreamStatus: types.StreamStatusActive, OpenShardCount: aws.Int32(2)}}, nil
}

func (f *fakePut) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.calls) + 1
	keys := make([]string, len(in.Records))
	for i, r := range in.Records {
		keys[i] = *r.PartitionKey
	}
	f.calls = append(f.calls, keys)
	if f.callErr != nil {
		if err := f.callErr(call); err != nil {
			return nil, err
		}
	}
	out := &kinesis.PutRecordsOutput{}
	for i, r := range in.Records {
		if f.fail != nil && f.fail(call, i, r) {
			out.FailedRecordCount = aws.Int32(aws.ToInt32(out.FailedRecordCount) + 1)
			out.Records = append(out.Records, types.PutRecordsResultEntry{ErrorCode: aws.String("ProvisionedThroughputExceededException"), ErrorMessage: aws.String("Rate exceeded")})
			continue
		}
		f.written = append(f.written, r)
		out.Records = append(out.Records, types.PutRecordsResultEntry{ShardId: aws.String("shardId-000000000000"), SequenceNumber: aws.String(fmt.Sprint(len(f.written)))})
	}
	return out, nil
}

func putOpts() *PutOptions {
	return &PutOptions{Retries: 5, Linger: time.Millisecond, Backoff: time.Microsecond, Output: "text", Rand: rand.New(rand.NewPCG(1, 2))}
}

func runPutTest(t *testing.T, api putAPI, input string, opts *PutOptions) (stdout, stderr string, err error) {
	t.Helper()
	ios, in, out, errOut := TestIO()
	in.WriteString(input)
	f := NewFactory(ios)
	err = runPut(context.Background(), f, api, kstream.Ref{Name: "s"}, opts)
	return out.String(), errOut.String(), err
}

func TestPutGivesUpAfterRetries(t *testing.T) {
	fake := &fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool { return i == 0 }}
	opts := putOpts()
	opts.Retries = 2
	_, stderr, err := runPutTest(t, fake, "a\nb\nc\n", opts)
	if err == nil || !strings.Contains(err.Error(), "1 record(s) still failed after 2 retries (first at line 1): ProvisionedThroughputExceededException") {
		t.Fatalf("err = %v", err)
	}
	if len(fake.calls) != 3 {
		t.Errorf("calls = %d, want 3 (1 + 2 retries)", len(fake.calls))
	}
	// One line: the error says what was written before it; no summary
	// line besides.
	if !strings.HasSuffix(err.Error(), "; 2 records written before it") || stderr != "" {
		t.Errorf("err = %v, stderr = %q", err, stderr)
	}
}

func TestPutInputErrors(t *testing.T) {
	tests := []struct {
		name, input, keyField, want string
	}{
		{"missing field", "{\"a\":1}\n", "k", `line 1: no field "k" in the JSON line`},
		{"not json", "hello\n", "k", `line 1: not a JSON object with a field "k"`},
		{"object field", "{\"k\":{}}\n", "k", `line 1: field "k" is an object, not a string or number`},
		{"empty key", "{\"k\":\"\"}\n", "k", "line 1: field k: a partition key must have 1 to 256 characters, not 0"},
		{"too big", strings.Repeat("z", 1<<20) + "\n", "", "line 1: a record of 1048592 bytes (data + partition key) is larger than the stream's limit of 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakePut{}
			opts := putOpts()
			opts.KeyField = tt.keyField
			_, _, err := runPutTest(t, fake, tt.input, opts)
			if err == nil || err.Error() != tt.want+"; nothing was written" {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if len(fake.written) != 0 {
				t.Fatalf("wrote %d records", len(fake.written))
			}
		})
	}
}

// TestPutUnknownOutcome: a call that got no answer stops put with the note
// of what it may have written, beside what was confirmed before it.
func TestPutUnknownOutcome(t *testing.T) {
	dropped := &smithy.OperationError{ServiceID: "Kinesis", OperationName: "PutRecords", Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	fake := &fakePut{callErr: func(call int) error {
		if call == 2 {
			return dropped
		}
		return nil
	}}
	opts := putOpts()
	opts.KeyField = "k"
	_, stderr, err := runPutTest(t, fake, "{\"k\":\"a\"}\n{\"k\":\"a\"}\n{\"k\":\"b\"}\n", opts)
	want := dropped.Error() + "; the 2 records of that PutRecords call (lines 2 to 3) may have been written, possibly more than once: its answer was lost, so the summary does not count them; 1 record confirmed written before it"
	var lost *outcomeUnknownError
	if err == nil || err.Error() != want || !errors.As(err, &lost) || !errors.Is(err, dropped) || stderr != "" {
		t.Fatalf("err = %v\nwant  %s\nstderr %q", err, want, stderr)
	}
}

// jsonField is --key-field's reading of a line (FuzzJSONField).
func jsonField(line []byte, path string) (string, error) { return producer.JSONField(line, path) }
