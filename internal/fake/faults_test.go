package fake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// Every part of a bad list is named in the error, on one line.
func TestParseFaultsErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "no fault given"},
		{"throttle", `"throttle" is not KIND=PROBABILITY`},
		{"throttle=0.1,", "an empty fault between commas"},
		{"slow=0.1", `"slow=0.1": unknown fault "slow"`},
		{"throttle=0", `"throttle=0": the probability must be a number more than 0 and at most 1`},
		{"throttle=1.5", `"throttle=1.5": the probability must be`},
		{"throttle=-0.1", `"throttle=-0.1": the probability must be`},
		{"throttle=NaN", `"throttle=NaN": the probability must be`},
		{"throttle=lots", `"throttle=lots": the probability must be`},
		{"throttle=0.1,throttle=0.2", `"throttle=0.2": throttle is given twice`},
		{"throttle:GetRecords=0.1,throttle:GetRecords=0.3", `"throttle:GetRecords=0.3": throttle:GetRecords is given twice`},
		{"throttle:GetRecord=0.1", `"GetRecord" is not an operation this fake Kinesis serves`},
		{"expire:PutRecords=0.1", `"expire:PutRecords=0.1": expire applies to GetRecords only`},
		{"seed=x", `"seed=x": the seed must be a whole number`},
		{"seed=1,seed=2", `"seed=2": the seed is given twice`},
		{"throttle=0.6,error=0.5", "add up to a probability of 1.1: at most 1"},
	} {
		_, err := ParseFaults(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseFaults(%q) = %v; want one line with %q", tc.spec, err, tc.want)
		}
	}
	// A per-operation probability replaces the general one there, so
	// these add up to 1 at most everywhere.
	if _, err := ParseFaults("throttle=0.6,error=0.4,throttle:GetRecords=0.5,expire=0.1"); err != nil {
		t.Fatal(err)
	}
}

// faultCounts calls op n times and counts the answers by error code ("" for
// a call served).
func faultCounts(t *testing.T, n int, call func() error) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		err := call()
		var api smithy.APIError
		switch {
		case err == nil:
			got[""]++
		case errors.As(err, &api):
			got[api.ErrorCode()]++
		default:
			t.Fatalf("not an API error: %v", err)
		}
	}
	return got
}

// near: got is within 4 standard deviations of n draws of probability p.
func near(got, n int, p float64) bool {
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	return math.Abs(float64(got)-mean) <= 4*sd+1
}

// Each kind fires at its rate on the calls it applies to, with the
// service's error for the call: GetRecords gets all three kinds, ListShards
// is throttled with LimitExceededException and never expires.
func TestFaultsRates(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.AddStream("s", 1)
	f.Put("s", "k", []byte("x"))
	fs, err := ParseFaults("throttle=0.2,error=0.05,expire=0.1,seed=7")
	if err != nil {
		t.Fatal(err)
	}
	f.Faults = fs
	const n = 2000
	var it *string
	for it == nil {
		out, err := f.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("s"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err == nil {
			it = out.ShardIterator
		}
	}
	reads := faultCounts(t, n, func() error {
		_, err := f.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
		return err
	})
	lists := faultCounts(t, n, func() error {
		_, err := f.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s")})
		return err
	})
	for _, c := range []struct {
		name  string
		got   map[string]int
		code  string
		p     float64
		other []string
	}{
		{"GetRecords", reads, "ProvisionedThroughputExceededException", 0.2, nil},
		{"GetRecords", reads, "InternalFailure", 0.05, nil},
		{"GetRecords", reads, "ExpiredIteratorException", 0.1, nil},
		{"GetRecords", reads, "", 0.65, nil},
		{"ListShards", lists, "LimitExceededException", 0.2, []string{"ProvisionedThroughputExceededException", "ExpiredIteratorException"}},
		{"ListShards", lists, "InternalFailure", 0.05, nil},
	} {
		if !near(c.got[c.code], n, c.p) {
			t.Errorf("%s: %d of %d calls answered %q, want about %.0f: %v", c.name, c.got[c.code], n, c.code, c.p*n, c.got)
		}
		for _, o := range c.other {
			if c.got[o] > 0 {
				t.Errorf("%s answered %q: %v", c.name, o, c.got)
			}
		}
	}
}

// A seed repeats the same draws; a per-operation fault touches that
// operation only and overrides the general one.
func TestFaultsSeedAndOperations(t *testing.T) {
	draws := func(spec string) string {
		fs, err := ParseFaults(spec)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for range 200 {
			if fs.fault("PutRecords") != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := draws("throttle=0.5,seed=42"), draws("throttle=0.5,seed=42")
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("same seed, different draws:\n%s\n%s", a, b)
	}
	fs, err := ParseFaults("throttle=0.5,throttle:PutRecords=1,error:ListStreams=0.5,throttle:ListStreams=0.5")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for range 100 {
		var pt *types.ProvisionedThroughputExceededException
		if err := fs.fault("PutRecords"); !errors.As(err, &pt) {
			t.Fatalf("PutRecords: %v, want a throttle every time", err)
		}
		var api smithy.APIError
		if err := fs.fault("ListStreams"); !errors.As(err, &api) {
			t.Fatalf("ListStreams: %v, want a fault every time", err)
		}
		codes[api.ErrorCode()]++
	}
	if len(codes) != 2 || codes["InternalFailure"] == 0 || codes["LimitExceededException"] == 0 {
		t.Fatalf("ListStreams got %v, want InternalFailure and LimitExceededException", codes)
	}
	if fs, _ := ParseFaults("throttle:GetRecords=1"); fs.fault("PutRecords") != nil || fs.fault("ListShards") != nil {
		t.Fatal("a fault of GetRecords answered another call")
	}
}

// A faulted put writes nothing: the records kept are exactly the ones
// whose calls succeeded.
func TestFaultedPutWritesNothing(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.AddStream("s", 1)
	fs, err := ParseFaults("throttle=0.3,error=0.2,seed=3")
	if err != nil {
		t.Fatal(err)
	}
	f.Faults = fs
	ok := 0
	for i := range 300 {
		entries := []types.PutRecordsRequestEntry{{PartitionKey: aws.String("k"), Data: fmt.Appendf(nil, "%d", i)}}
		if _, err := f.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("s"), Records: entries}); err == nil {
			ok++
		}
		if _, err := f.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("s"), PartitionKey: aws.String("k"), Data: []byte("one")}); err == nil {
			ok++
		}
	}
	if got := len(f.ShardRecords("s", "shardId-000000000000")); got != ok || ok == 0 || ok == 600 {
		t.Fatalf("%d records kept, %d puts succeeded of 600", got, ok)
	}
}

// On the wire, faults come in the service's shape: the SDK raises its
// typed exceptions, with a 400 for a throttle or an expired iterator and a
// 500 for InternalFailure.
func TestFaultsOnTheWire(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.AddStream("s", 1)
	c := client(f)
	status := func(err error) int {
		var re *awshttp.ResponseError
		if !errors.As(err, &re) {
			return 0
		}
		return re.HTTPStatusCode()
	}
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("s"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeLatest})
	if err != nil {
		t.Fatal(err)
	}
	set := func(spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.Faults = fs
		f.mu.Unlock()
	}

	set("throttle=1")
	_, err = c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("s"), PartitionKey: aws.String("k"), Data: []byte("x")})
	var pt *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pt) || status(err) != 400 {
		t.Errorf("PutRecord: %v (status %d), want ProvisionedThroughputExceededException, 400", err, status(err))
	}
	_, err = c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s")})
	var le *types.LimitExceededException
	if !errors.As(err, &le) || status(err) != 400 {
		t.Errorf("ListShards: %v (status %d), want LimitExceededException, 400", err, status(err))
	}

	set("error=1")
	_, err = c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InternalFailure" || status(err) != 500 {
		t.Errorf("DescribeStreamSummary: %v (status %d), want InternalFailure, 500", err, status(err))
	}

	set("expire=1")
	_, err = c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	var ex *types.ExpiredIteratorException
	if !errors.As(err, &ex) || status(err) != 400 {
		t.Errorf("GetRecords: %v (status %d), want ExpiredIteratorException, 400", err, status(err))
	}
	if _, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s")}); err != nil {
		t.Errorf("expire touched ListShards: %v", err)
	}
	if n := len(f.ShardRecords("s", "shardId-000000000000")); n != 0 {
		t.Errorf("the throttled put wrote %d records", n)
	}
}
