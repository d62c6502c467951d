package producer

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

// testOpts are the options of the tests: fast retries, a fixed random
// source, and the 1 MiB record limit of a stream that does not say.
func testOpts() Options {
	return Options{Retries: 5, Linger: time.Millisecond, Backoff: time.Microsecond, Rand: rand.New(rand.NewPCG(1, 2)), MaxRecordBytes: 1 << 20}
}

func runTest(t *testing.T, api API, input string, o Options) (Stats, error) {
	t.Helper()
	return Run(context.Background(), api, kstream.Ref{Name: "s"}, strings.NewReader(input), o)
}

func TestPutRetriesOnlyFailedEntriesInOrder(t *testing.T) {
	var lines []string
	for i := range 1200 {
		lines = append(lines, fmt.Sprintf("{\"k\":\"key%d\",\"n\":%d}", i%40, i))
	}
	fake := &fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool {
		// The first attempt of every batch loses every third entry.
		return call%2 == 1 && i%3 == 1
	}}
	opts := testOpts()
	opts.KeyField = "k"
	st, err := runTest(t, fake, strings.Join(lines, "\n")+"\n", opts)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if len(fake.written) != 1200 {
		t.Fatalf("written %d records, want 1200", len(fake.written))
	}
	// Per key, the payloads must arrive in input order.
	last := map[string]int{}
	for _, r := range fake.written {
		var n int
		var k string
		fmt.Sscanf(strings.NewReplacer(`{"k":"`, "", `","n":`, " ", "}", "").Replace(string(r.Data)), "%s %d", &k, &n)
		if prev, ok := last[k]; ok && n < prev {
			t.Fatalf("key %s: record %d written after %d", k, n, prev)
		}
		last[k] = n
	}
	// Retried calls carry only the failed entries.
	for c := 1; c < len(fake.calls); c += 2 {
		if want := len(fake.calls[c-1]) / 3; len(fake.calls[c]) != want && len(fake.calls[c]) != want+1 {
			t.Fatalf("call %d retried %d entries after %d sent", c+1, len(fake.calls[c]), len(fake.calls[c-1]))
		}
	}
	// What the summary says ("put 1200 records ..., N retried").
	if st.Records != 1200 || st.Retried == 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestPutNeverTwoRecordsOfOneKeyInABatch(t *testing.T) {
	fake := &fakePut{}
	opts := testOpts()
	opts.KeyField = "k"
	in := "{\"k\":\"a\"}\n{\"k\":\"b\"}\n{\"k\":\"a\"}\n{\"k\":\"c\"}\n"
	if _, err := runTest(t, fake, in, opts); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"}, {"a", "c"}}
	if fmt.Sprint(fake.calls) != fmt.Sprint(want) {
		t.Fatalf("calls = %v, want %v", fake.calls, want)
	}
}

func TestPutBatchLimits(t *testing.T) {
	fake := &fakePut{}
	opts := testOpts()
	opts.Linger = time.Hour // only size limits and EOF flush
	in := strings.Repeat("x\n", 1234)
	if _, err := runTest(t, fake, in, opts); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range fake.calls {
		sizes = append(sizes, len(c))
	}
	if fmt.Sprint(sizes) != "[500 500 234]" {
		t.Fatalf("batch sizes = %v", sizes)
	}
	// 5 MiB per request: 1,000-byte... use 300 KiB lines, 17 fit in 5 MiB.
	fake = &fakePut{}
	line := strings.Repeat("y", 300<<10)
	if _, err := runTest(t, fake, strings.Repeat(line+"\n", 20), opts); err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 2 || len(fake.calls[0]) != 17 {
		t.Fatalf("calls = %d, first %d", len(fake.calls), len(fake.calls[0]))
	}
}

// The engine's half of cmd's TestPutGivesUpAfterRetries (the note of what
// was written is cmd's).
func TestPutGivesUpAfterRetries(t *testing.T) {
	fake := &fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool { return i == 0 }}
	opts := testOpts()
	opts.Retries = 2
	var debug []string
	opts.Debugf = func(format string, args ...any) { debug = append(debug, fmt.Sprintf(format, args...)) }
	st, err := runTest(t, fake, "a\nb\nc\n", opts)
	if err == nil || err.Error() != "1 record(s) still failed after 2 retries (first at line 1): ProvisionedThroughputExceededException: Rate exceeded" {
		t.Fatalf("err = %v", err)
	}
	if len(fake.calls) != 3 {
		t.Errorf("calls = %d, want 3 (1 + 2 retries)", len(fake.calls))
	}
	if st.Records != 2 || st.Failed != 1 || st.Retried != 2 || st.Calls != 3 {
		t.Errorf("stats = %+v", st)
	}
	want := []string{
		"put: 1 of 3 entries failed (ProvisionedThroughputExceededException), retrying in 1µs",
		"put: 1 of 1 entries failed (ProvisionedThroughputExceededException), retrying in 2µs",
	}
	if fmt.Sprint(debug) != fmt.Sprint(want) {
		t.Errorf("debug lines %q\nwant %q", debug, want)
	}
}

func TestPutWholeCallThrottleIsRetried(t *testing.T) {
	fake := &fakePut{callErr: func(call int) error {
		if call == 1 {
			return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
		}
		return nil
	}}
	if _, err := runTest(t, fake, "a\nb\n", testOpts()); err != nil {
		t.Fatal(err)
	}
	if len(fake.written) != 2 || len(fake.calls) != 2 {
		t.Fatalf("written %d in %d calls", len(fake.written), len(fake.calls))
	}
}

// A call that got no answer, or a 5xx, is not retried: Run stops with an
// *UnknownOutcomeError naming its records, and does not count them. A
// refusal (a 4xx that is not a throttle) ends the run as it is.
func TestPutUnknownOutcome(t *testing.T) {
	dropped := &smithy.OperationError{ServiceID: "Kinesis", OperationName: "PutRecords", Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	refused := &types.InvalidArgumentException{Message: aws.String("no")}
	for _, tt := range []struct {
		name    string
		callErr error
		unknown bool
	}{{"no answer", dropped, true}, {"refused", refused, false}} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakePut{callErr: func(call int) error {
				if call == 2 {
					return tt.callErr
				}
				return nil
			}}
			opts := testOpts()
			opts.KeyField = "k"
			st, err := runTest(t, fake, "{\"k\":\"a\"}\n{\"k\":\"a\"}\n{\"k\":\"b\"}\n\n{\"k\":\"a\"}\n", opts)
			var lost *UnknownOutcomeError
			if errors.As(err, &lost) != tt.unknown || !errors.Is(err, tt.callErr) {
				t.Fatalf("err = %#v", err)
			}
			if tt.unknown && (lost.Records != 2 || lost.Lines != "lines 2 to 3" || lost.Error() != tt.callErr.Error()) {
				t.Fatalf("lost = %+v", lost)
			}
			if len(fake.calls) != 2 || st.Records != 1 || st.Retried != 0 || st.Failed != 0 {
				t.Fatalf("%d calls, stats %+v", len(fake.calls), st)
			}
		})
	}
}

func TestLineSpan(t *testing.T) {
	if got := lineSpan([]entry{{line: 7}}); got != "line 7" {
		t.Errorf("one line: %q", got)
	}
	if got := lineSpan([]entry{{line: 5}, {line: 3}, {line: 9}}); got != "lines 3 to 9" {
		t.Errorf("three lines: %q", got)
	}
}

// The engine's half of cmd's TestPutInputErrors (the note "nothing was
// written" is cmd's).
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
			opts := testOpts()
			opts.KeyField = tt.keyField
			st, err := runTest(t, fake, tt.input, opts)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if len(fake.written) != 0 || st.Records != 0 {
				t.Fatalf("wrote %d records", len(fake.written))
			}
		})
	}
}

func TestJSONField(t *testing.T) {
	for _, tt := range []struct{ line, path, want string }{
		{`{"k":"v"}`, "k", "v"},
		{`{"k":42}`, "k", "42"},
		{`{"k":true}`, "k", "true"},
		{`{"u":{"id":"x7"}}`, "u.id", "x7"},
		{`{"k":"ünï"}`, "k", "ünï"},
	} {
		got, err := JSONField([]byte(tt.line), tt.path)
		if err != nil || got != tt.want {
			t.Errorf("JSONField(%s, %s) = %q, %v", tt.line, tt.path, got, err)
		}
	}
}

func TestPutSkipsEmptyLinesAndCRLF(t *testing.T) {
	fake := &fakePut{}
	st, err := runTest(t, fake, "a\r\n\nb", testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.written) != 2 || string(fake.written[0].Data) != "a" || string(fake.written[1].Data) != "b" {
		t.Fatalf("written = %+v", fake.written)
	}
	if st.Skipped != 1 {
		t.Fatalf("skipped %d empty lines, want 1", st.Skipped)
	}
}
