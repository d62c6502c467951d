package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }

// fire runs calls of ops through in.decide and returns, per op, the 1-based
// numbers of the calls that got a fault.
func fire(in *Injector, ops ...string) map[string][]int {
	got := map[string][]int{}
	seen := map[string]int{}
	for _, op := range ops {
		seen[op]++
		if d := in.decide(op); d.rule != nil {
			got[op] = append(got[op], seen[op])
		}
	}
	return got
}

func repeat(op string, n int) []string { return slices.Repeat([]string{op}, n) }

func TestConditions(t *testing.T) {
	const op = "GetRecords"
	for _, tc := range []struct {
		name string
		rule Rule
		want []int
	}{
		{"always", Rule{Op: op, Kind: Throttle}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"Prob 1", Rule{Op: op, Kind: Throttle, Prob: 1}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"Nth", Rule{Op: op, Kind: Throttle, Nth: []int{2, 5}}, []int{2, 5}},
		{"Every", Rule{Op: op, Kind: Throttle, Every: 3}, []int{3, 6, 9, 12}},
		{"After", Rule{Op: op, Kind: Throttle, After: 9}, []int{10, 11, 12}},
		{"After+Every", Rule{Op: op, Kind: Throttle, After: 2, Every: 3}, []int{5, 8, 11}},
		{"Times", Rule{Op: op, Kind: Throttle, Times: 2}, []int{1, 2}},
		{"Every+Times", Rule{Op: op, Kind: Throttle, Every: 2, Times: 3}, []int{2, 4, 6}},
		{"Nth+Times", Rule{Op: op, Kind: Throttle, Nth: []int{1, 3, 5}, Times: 2}, []int{1, 3}},
		{"After+Nth", Rule{Op: op, Kind: Throttle, After: 3, Nth: []int{2, 4}}, []int{4}},
		{"any op", Rule{Op: "*", Kind: Throttle, Nth: []int{4}}, nil}, // the 4th call overall is a PutRecords
		{"other op", Rule{Op: "ListShards", Kind: Throttle}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := New(1, tc.rule)
			ops := repeat(op, 12)
			ops = slices.Insert(ops, 3, "PutRecords") // an unrelated call in between
			got := fire(in, ops...)
			if !slices.Equal(got[op], tc.want) {
				t.Fatalf("fired on calls %v, want %v", got[op], tc.want)
			}
			if c := in.Counts(); c[op] != 12 || c["PutRecords"] != 1 {
				t.Fatalf("Counts = %v", c)
			}
			if f := in.Fired()[op+"/Throttle"]; f != len(tc.want) {
				t.Fatalf("Fired = %v, want %d for %s/Throttle", in.Fired(), len(tc.want), op)
			}
		})
	}
}

// TestFirstRuleWins: a later rule still counts the calls an earlier one
// took, so its numbering does not depend on the earlier rule.
func TestFirstRuleWins(t *testing.T) {
	in := New(1,
		Rule{Op: "GetRecords", Kind: ExpiredIterator, Nth: []int{2}},
		Rule{Op: "GetRecords", Kind: Throttle, Nth: []int{2, 3}},
	)
	var kinds []string
	for range 4 {
		k := "-"
		if d := in.decide("GetRecords"); d.rule != nil {
			k = d.rule.Kind.String()
		}
		kinds = append(kinds, k)
	}
	if want := []string{"-", "ExpiredIterator", "Throttle", "-"}; !slices.Equal(kinds, want) {
		t.Fatalf("faults = %v, want %v", kinds, want)
	}
	in.SetRules(Rule{Op: "GetRecords", Kind: Throttle, Nth: []int{1}})
	if got := fire(in, "GetRecords", "GetRecords"); !slices.Equal(got["GetRecords"], []int{1}) {
		t.Fatalf("after SetRules: fired on %v, want the first call again", got["GetRecords"])
	}
	if f := in.Fired(); f["GetRecords/Throttle"] != 2 || f["GetRecords/ExpiredIterator"] != 1 || in.Counts()["GetRecords"] != 6 {
		t.Fatalf("Fired = %v, Counts = %v: SetRules must keep both", f, in.Counts())
	}
}

// TestReplay: with a seed, the probabilistic decisions are the same on
// every run, whatever other calls and concurrency surround them.
func TestReplay(t *testing.T) {
	rule := Rule{Op: "GetRecords", Kind: Throttle, Prob: 0.3}
	const n = 1000
	a := fire(New(42, rule), repeat("GetRecords", n)...)["GetRecords"]
	mixed := make([]string, 0, 2*n)
	for range n {
		mixed = append(mixed, "PutRecords", "GetRecords")
	}
	b := fire(New(42, rule), mixed...)["GetRecords"]
	c := fire(New(43, rule), repeat("GetRecords", n)...)["GetRecords"]
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different decisions")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same decisions")
	}
	// Deterministic for seed 42; the bounds only guard against a broken
	// generator (expected 300, standard deviation 14.5).
	if len(a) < 200 || len(a) > 400 {
		t.Fatalf("fired %d of %d at Prob 0.3", len(a), n)
	}

	in := New(42, rule)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range n / 8 {
				in.decide("GetRecords")
			}
		})
	}
	wg.Wait()
	if got := in.Fired()["GetRecords/Throttle"]; got != len(a) {
		t.Fatalf("concurrent calls fired %d, sequential %d", got, len(a))
	}
}

func TestInvalidRules(t *testing.T) {
	for _, r := range []Rule{
		{Op: "GetRecords"},
		{Op: "GetRecords", Kind: kindEnd},
		{Op: "GetRecords", Kind: Throttle, Prob: 1.5},
		{Op: "GetRecords", Kind: Throttle, Nth: []int{0}},
		{Op: "GetRecords", Kind: Throttle, Every: -1},
		{Op: "GetRecords", Kind: PartialPut},
		{Op: "PutRecords", Kind: PartialPut, PartialFraction: 2},
		{Op: "PutRecords", Kind: Custom},
	} {
		t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
			defer func() {
				if p := recover(); p == nil || !strings.HasPrefix(fmt.Sprint(p), "faults: rule 0") {
					t.Fatalf("panic = %v, want faults: rule 0 ...", p)
				}
			}()
			New(1, r)
		})
	}
}

func TestOpOf(t *testing.T) {
	for in, want := range map[string]string{
		"Kinesis_20131202.GetRecords": "GetRecords",
		"DynamoDB_20120810.GetItem":   "GetItem",
		"":                            "",
	} {
		if got := opOf(in); got != want {
			t.Errorf("opOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaxCallsInWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, tc := range []struct {
		name string
		ts   []time.Time
		w    time.Duration
		want int
	}{
		{"none", nil, time.Second, 0},
		{"one", at(0), time.Second, 1},
		{"paced 200ms", at(0, 200, 400, 600, 800, 1000, 1200), time.Second, 5},
		{"burst", at(0, 1000, 1001, 1002, 1003, 1004, 1999, 3000), time.Second, 6},
		{"unsorted", at(1999, 1000, 3000, 1002, 0, 1004, 1001, 1003), time.Second, 6},
		{"zero window", at(0, 0), 0, 0},
	} {
		if got := MaxCallsInWindow(tc.ts, tc.w); got != tc.want {
			t.Errorf("%s: MaxCallsInWindow = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// stub is a fake Kinesis: iterators are "it/<shard>/<k>", GetRecords moves
// to k+1, PutRecords succeeds. It counts the calls that reach it.
type stub struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newStub(t *testing.T) *stub {
	s := &stub{calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := opOf(r.Header.Get("X-Amz-Target"))
		s.mu.Lock()
		s.calls[op]++
		s.mu.Unlock()
		var in struct {
			ShardId, ShardIterator string
			Records                []json.RawMessage
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var out any = map[string]any{}
		switch op {
		case "GetShardIterator":
			out = map[string]any{"ShardIterator": "it/" + in.ShardId + "/0"}
		case "GetRecords":
			var shard string
			var k int
			fmt.Sscanf(strings.ReplaceAll(in.ShardIterator, "/", " "), "it %s %d", &shard, &k)
			out = map[string]any{"Records": []any{}, "MillisBehindLatest": 0, "NextShardIterator": fmt.Sprintf("it/%s/%d", shard, k+1)}
		case "PutRecords":
			recs := make([]any, len(in.Records))
			for i := range recs {
				recs[i] = map[string]string{"ShardId": "shardId-000000000000", "SequenceNumber": fmt.Sprint(i)}
			}
			out = map[string]any{"FailedRecordCount": 0, "Records": recs}
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stub) reached(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// client is a Kinesis client through in's RoundTripper to endpoint, with
// one attempt unless opts say otherwise.
func client(endpoint string, rt http.RoundTripper, opts ...func(*kinesis.Options)) *kinesis.Client {
	return kinesis.New(kinesis.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("123456789012", "x", ""),
		BaseEndpoint:     aws.String(endpoint),
		HTTPClient:       &http.Client{Transport: rt},
		RetryMaxAttempts: 1,
	}, opts...)
}

func getRecords(ctx context.Context, c *kinesis.Client, iter string) error {
	_, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(iter)})
	return err
}

// TestTypedErrors: every error kind reaches the caller as the SDK's typed
// error (or the right API error code and HTTP status), without reaching
// the service.
func TestTypedErrors(t *testing.T) {
	s := newStub(t)
	for _, tc := range []struct {
		rule   Rule
		status int
		check  func(error) bool
	}{
		{Rule{Kind: Throttle}, 400, isA[*types.ProvisionedThroughputExceededException]},
		{Rule{Kind: LimitExceeded}, 400, isA[*types.LimitExceededException]},
		{Rule{Kind: ExpiredIterator}, 400, isA[*types.ExpiredIteratorException]},
		{Rule{Kind: ResourceInUse}, 400, isA[*types.ResourceInUseException]},
		{Rule{Kind: InternalFailure500}, 500, isA[*types.InternalFailureException]},
		{Rule{Kind: Unavailable503}, 503, hasCode("ServiceUnavailable")},
		{Rule{Kind: Custom, Code: "KMSThrottlingException"}, 400, isA[*types.KMSThrottlingException]},
		{Rule{Kind: Custom, Code: "AccessDeniedException", Status: 403}, 403, isA[*types.AccessDeniedException]},
	} {
		t.Run(tc.rule.Kind.String()+tc.rule.Code, func(t *testing.T) {
			tc.rule.Op = "GetRecords"
			in := New(1, tc.rule)
			before := s.reached("GetRecords")
			err := getRecords(t.Context(), client(s.URL, in.RoundTripper(nil)), "it/shardId-000000000000/0")
			if !tc.check(err) {
				t.Fatalf("err = %T %v", err, err)
			}
			var re *awshttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != tc.status {
				t.Fatalf("HTTP status: %v, want %d", err, tc.status)
			}
			if s.reached("GetRecords") != before {
				t.Fatal("a faulted call reached the service")
			}
		})
	}
}

func isA[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}

func hasCode(code string) func(error) bool {
	return func(err error) bool {
		var ae smithy.APIError
		return errors.As(err, &ae) && ae.ErrorCode() == code
	}
}

// TestSDKRetries: 500s are retried by the SDK's standard retryer, and every
// attempt is a call.
func TestSDKRetries(t *testing.T) {
	s := newStub(t)
	in := New(1, Rule{Op: "GetRecords", Kind: InternalFailure500, Times: 2})
	c := client(s.URL, in.RoundTripper(nil), func(o *kinesis.Options) { o.RetryMaxAttempts = 3 })
	if err := getRecords(t.Context(), c, "it/shardId-000000000000/0"); err != nil {
		t.Fatal(err)
	}
	if in.Counts()["GetRecords"] != 3 || s.reached("GetRecords") != 1 {
		t.Fatalf("Counts = %v, reached %d: want 3 attempts, the last one forwarded", in.Counts(), s.reached("GetRecords"))
	}
}

func TestConnectionFaults(t *testing.T) {
	s := newStub(t)
	const iter = "it/shardId-000000000000/0"
	t.Run("Drop", func(t *testing.T) {
		in := New(1, Rule{Op: "GetRecords", Kind: Drop})
		before := s.reached("GetRecords")
		err := getRecords(t.Context(), client(s.URL, in.RoundTripper(nil)), iter)
		var rse *smithyhttp.RequestSendError
		if !errors.As(err, &rse) || !errors.Is(err, ErrDropped) {
			t.Fatalf("err = %v, want a RequestSendError wrapping ErrDropped", err)
		}
		if s.reached("GetRecords") != before {
			t.Fatal("a dropped call reached the service")
		}
	})
	t.Run("DropResponse", func(t *testing.T) {
		in := New(1, Rule{Op: "GetRecords", Kind: DropResponse})
		before := s.reached("GetRecords")
		err := getRecords(t.Context(), client(s.URL, in.RoundTripper(nil)), iter)
		if !errors.Is(err, ErrDropped) || s.reached("GetRecords") != before+1 {
			t.Fatalf("err = %v, reached %d times: want ErrDropped after the service ran the call", err, s.reached("GetRecords")-before)
		}
	})
	t.Run("Stall until the deadline", func(t *testing.T) {
		in := New(1, Rule{Op: "GetRecords", Kind: Stall})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err := getRecords(ctx, client(s.URL, in.RoundTripper(nil)), iter)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the client's deadline", err)
		}
	})
	t.Run("Stall for a duration", func(t *testing.T) {
		in := New(1, Rule{Op: "GetRecords", Kind: Stall, Duration: 50 * time.Millisecond})
		began := time.Now()
		err := getRecords(t.Context(), client(s.URL, in.RoundTripper(nil)), iter)
		if !errors.Is(err, ErrDropped) || time.Since(began) < 50*time.Millisecond {
			t.Fatalf("err = %v after %v, want ErrDropped after 50ms", err, time.Since(began))
		}
	})
	t.Run("Delay", func(t *testing.T) {
		in := New(1, Rule{Op: "GetRecords", Kind: Delay, Duration: 50 * time.Millisecond})
		before := s.reached("GetRecords")
		began := time.Now()
		if err := getRecords(t.Context(), client(s.URL, in.RoundTripper(nil)), iter); err != nil {
			t.Fatal(err)
		}
		if time.Since(began) < 50*time.Millisecond || s.reached("GetRecords") != before+1 {
			t.Fatalf("forwarded after %v (reached %d): want once, after 50ms", time.Since(began), s.reached("GetRecords")-before)
		}
	})
}

// TestGetRecordsCallsStub follows iterator chains on two shards, with
// throttled attempts retried on the same iterator and one iterator the
// Injector never saw handed out.
func TestGetRecordsCallsStub(t *testing.T) {
	s := newStub(t)
	in := New(1, Rule{Op: "GetRecords", Kind: Throttle, Nth: []int{2, 5}})
	c := client(s.URL, in.RoundTripper(nil))
	ctx := t.Context()
	want := map[string]int{}
	for _, shard := range []string{"shardId-000000000000", "shardId-000000000001"} {
		it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
			StreamName: aws.String("s"), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for range 3 {
			out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
			want[shard]++
			if isA[*types.ProvisionedThroughputExceededException](err) {
				out, err = c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
				want[shard]++
			}
			if err != nil {
				t.Fatal(err)
			}
			iter = out.NextShardIterator
		}
	}
	if err := getRecords(ctx, c, "it/shardId-000000000009/7"); err != nil {
		t.Fatal(err)
	}
	want[UnknownShard] = 1

	got := in.GetRecordsCalls()
	if len(got) != len(want) {
		t.Fatalf("GetRecordsCalls has shards %v, want %v", keys(got), want)
	}
	for shard, n := range want {
		if len(got[shard]) != n || !slices.IsSortedFunc(got[shard], time.Time.Compare) {
			t.Errorf("%s: %d calls, want %d in order", shard, len(got[shard]), n)
		}
	}
	if f := in.Fired()["GetRecords/Throttle"]; f != 2 {
		t.Errorf("fired %d throttles, want 2", f)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestBodyRestored: what the service receives is what the client sent.
func TestBodyRestored(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	in := New(1, Rule{Op: "ListStreams", Kind: Delay, Duration: time.Millisecond})
	body := `{"StreamName":"s","Records":[{"Data":"AAEC","PartitionKey":"k"}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("X-Amz-Target", "Kinesis_20131202.PutRecords")
	resp, err := in.RoundTripper(nil).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if string(got) != body {
		t.Fatalf("service got %q, want %q", got, body)
	}
}
