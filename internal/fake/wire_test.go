package fake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// client is an SDK client whose every call the fake serves in process.
func client(f *Fake) *kinesis.Client {
	return kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String("http://kinesis.local"), HTTPClient: &http.Client{Transport: f.Transport()}, RetryMaxAttempts: 1})
}

// The SDK drives the fake over the wire: create, put, list, read, split,
// and read on across the split to the children ChildShards names.
func TestWireRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := New()
	c := client(f)
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("orders"), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	sum, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("orders")})
	if err != nil || sum.StreamDescriptionSummary.StreamStatus != types.StreamStatusActive || aws.ToInt32(sum.StreamDescriptionSummary.OpenShardCount) != 2 ||
		sum.StreamDescriptionSummary.StreamCreationTimestamp == nil {
		t.Fatalf("describe: %+v, %v", sum, err)
	}
	before := time.Now().Add(-time.Second)
	put, err := c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("orders"), Records: []types.PutRecordsRequestEntry{
		{PartitionKey: aws.String("a"), Data: []byte("one")},
		{PartitionKey: aws.String("b"), Data: []byte{0, 1, 2, 255}},
		{PartitionKey: aws.String("c"), Data: []byte("low"), ExplicitHashKey: aws.String("0")},
	}})
	if err != nil || aws.ToInt32(put.FailedRecordCount) != 0 || len(put.Records) != 3 {
		t.Fatalf("put: %+v, %v", put, err)
	}
	shards, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("orders")})
	if err != nil || len(shards.Shards) != 2 {
		t.Fatalf("list: %+v, %v", shards, err)
	}
	first := aws.ToString(shards.Shards[0].ShardId)
	if aws.ToString(put.Records[2].ShardId) != first {
		t.Fatalf("explicit hash key 0 went to %s, not %s", aws.ToString(put.Records[2].ShardId), first)
	}
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("orders"), ShardId: aws.String(first),
		ShardIteratorType: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(before)})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs.Records {
		got = append(got, aws.ToString(r.PartitionKey)+"="+string(r.Data))
		if r.ApproximateArrivalTimestamp == nil || r.ApproximateArrivalTimestamp.Before(before) {
			t.Fatalf("arrival %v", r.ApproximateArrivalTimestamp)
		}
	}
	if !strings.Contains(strings.Join(got, ","), "c=low") || recs.MillisBehindLatest == nil {
		t.Fatalf("records %v, behind %v", got, recs.MillisBehindLatest)
	}
	// Split the first shard, write to a child, and read the parent to its
	// end: ChildShards name both children.
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("orders"), ShardToSplit: aws.String(first),
		NewStartingHashKey: aws.String("85070591730234615865843651857942052864")}); err != nil {
		t.Fatal(err)
	}
	next := recs.NextShardIterator
	var children []types.ChildShard
	for next != nil {
		page, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next})
		if err != nil {
			t.Fatal(err)
		}
		next, children = page.NextShardIterator, page.ChildShards
	}
	if len(children) != 2 || len(children[0].ParentShards) != 1 || children[0].ParentShards[0] != first {
		t.Fatalf("children %+v", children)
	}
	listed, err := c.ListStreams(ctx, &kinesis.ListStreamsInput{})
	if err != nil || len(listed.StreamNames) != 1 || listed.StreamNames[0] != "orders" || len(listed.StreamSummaries) != 1 {
		t.Fatalf("streams %+v, %v", listed, err)
	}
}

// Errors reach the SDK as the service's: typed exceptions with their
// messages, a 4xx for the request's fault.
func TestWireErrors(t *testing.T) {
	ctx := context.Background()
	f := New()
	c := client(f)
	_, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("nope")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || !strings.Contains(nf.ErrorMessage(), "nope") {
		t.Fatalf("missing stream: %v", err)
	}
	f.AddStream("s", 1)
	_, err = c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("s"), Records: []types.PutRecordsRequestEntry{
		{PartitionKey: aws.String("k"), Data: []byte("x"), ExplicitHashKey: aws.String("-1")}}})
	var ia *types.InvalidArgumentException
	if !errors.As(err, &ia) || !strings.Contains(ia.ErrorMessage(), "ExplicitHashKey") {
		t.Fatalf("bad explicit hash key: %v", err)
	}
	_, err = c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)})
	var iu *types.ResourceInUseException
	if !errors.As(err, &iu) {
		t.Fatalf("existing stream: %v", err)
	}
	f.ShardLimit = 3
	_, err = c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("big"), ShardCount: aws.Int32(3)})
	var le *types.LimitExceededException
	if !errors.As(err, &le) {
		t.Fatalf("over the shard quota: %v", err)
	}
}

// A request the fake cannot take is answered in the service's error shape,
// and a failure inside the fake is a 500, never a crash of the server.
func TestWireMalformed(t *testing.T) {
	f := New()
	f.AddStream("s", 1)
	f.Hook = func(op string, _ any) error {
		if op == "ListShards" {
			panic("boom")
		}
		return nil
	}
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	post := func(target, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("X-Amz-Target", target)
		req.Header.Set("Content-Type", jsonType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		target, body string
		status       int
		want         string
	}{
		{"Kinesis_20131202.GetRecords", `{"ShardIterator":`, 400, `"__type":"SerializationException"`},
		{"Kinesis_20131202.GetRecords", `[1,2]`, 400, `"__type":"SerializationException"`},
		{"Kinesis_20131202.GetShardIterator", `{"StreamName":"s","ShardId":7}`, 400, `"__type":"SerializationException"`},
		{"Kinesis_20131202.GetShardIterator", `{"StreamName":"s","ShardId":"shardId-000000000000","ShardIteratorType":"AT_TIMESTAMP","Timestamp":"soon"}`, 400, `"__type":"SerializationException"`},
		{"Kinesis_20131202.TagResource", `{}`, 400, `"__type":"UnknownOperationException"`},
		{"", `{}`, 400, `"__type":"UnknownOperationException"`},
		{"Kinesis_20131202.ListShards", `{"StreamName":"s"}`, 500, `"__type":"InternalFailure"`},
		{"Kinesis_20131202.DescribeStreamSummary", `{"StreamName":"s"}`, 200, `"StreamStatus":"ACTIVE"`},
	} {
		status, body := post(tc.target, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %s", tc.target, tc.body, status, body, tc.status, tc.want)
		}
	}
	big := bytes.Repeat([]byte("x"), maxRequestBytes+10)
	if status, body := post("Kinesis_20131202.PutRecords", string(big)); status != 413 || !strings.Contains(body, "SerializationException") {
		t.Errorf("oversized request: %d %s", status, body)
	}
	var api smithy.APIError
	_, err := client(f).ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String("s")})
	if !errors.As(err, &api) || api.ErrorCode() != "InternalFailure" {
		t.Errorf("panicking call through the SDK: %v", err)
	}
}

// With StateDelay a new stream is CREATING, a resharded one UPDATING and a
// deleted one DELETING for that long, as the service keeps them.
func TestWireStateDelay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f := New()
	f.Now = func() time.Time { return now }
	f.StateDelay = 2 * time.Second
	c := client(f)
	status := func() types.StreamStatus {
		t.Helper()
		out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})
		if err != nil {
			var nf *types.ResourceNotFoundException
			if errors.As(err, &nf) {
				return "GONE"
			}
			t.Fatal(err)
		}
		return out.StreamDescriptionSummary.StreamStatus
	}
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if st := status(); st != types.StreamStatusCreating {
		t.Fatalf("after create: %s", st)
	}
	_, err := c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("s"), PartitionKey: aws.String("k"), Data: []byte("x")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("put while CREATING: %v", err)
	}
	now = now.Add(2 * time.Second)
	if st := status(); st != types.StreamStatusActive {
		t.Fatalf("after the delay: %s", st)
	}
	if _, err := c.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("s"), TargetShardCount: aws.Int32(2), ScalingType: types.ScalingTypeUniformScaling}); err != nil {
		t.Fatal(err)
	}
	if st := status(); st != types.StreamStatusUpdating {
		t.Fatalf("after a reshard: %s", st)
	}
	_, err = c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("s"), ShardToSplit: aws.String("shardId-000000000001"), NewStartingHashKey: aws.String("1")})
	var iu *types.ResourceInUseException
	if !errors.As(err, &iu) {
		t.Fatalf("a reshard while UPDATING: %v", err)
	}
	now = now.Add(2 * time.Second)
	if _, err := c.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	if st := status(); st != types.StreamStatusDeleting {
		t.Fatalf("after delete: %s", st)
	}
	now = now.Add(2 * time.Second)
	if st := status(); st != "GONE" {
		t.Fatalf("after the delete's delay: %s", st)
	}
}

// An on-demand stream refuses reshards as the service does.
func TestWireOnDemand(t *testing.T) {
	ctx := context.Background()
	c := client(New())
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("od"), StreamModeDetails: &types.StreamModeDetails{StreamMode: types.StreamModeOnDemand}}); err != nil {
		t.Fatal(err)
	}
	sum, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("od")})
	if err != nil || sum.StreamDescriptionSummary.StreamModeDetails.StreamMode != types.StreamModeOnDemand || aws.ToInt32(sum.StreamDescriptionSummary.OpenShardCount) != 4 {
		t.Fatalf("%+v, %v", sum, err)
	}
	_, err = c.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("od"), TargetShardCount: aws.Int32(8), ScalingType: types.ScalingTypeUniformScaling})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" {
		t.Fatalf("reshard of an on-demand stream: %v", err)
	}
}
