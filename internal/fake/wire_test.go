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

// With Quotas, a shard serves 5 reads a second, refuses reads after a big
// answer until its 2 MiB a second has refilled, takes 1,000 records a
// second, and iterators expire after five minutes.
func TestWireQuotas(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f := New()
	f.Now = func() time.Time { return now }
	f.Quotas = true
	f.AddStream("q", 1)
	c := client(f)
	throttled := func(err error) bool {
		var pt *types.ProvisionedThroughputExceededException
		return errors.As(err, &pt)
	}
	// Writes: 1,000 records of this second, then every further entry fails.
	entries := make([]types.PutRecordsRequestEntry, 500)
	for i := range entries {
		entries[i] = types.PutRecordsRequestEntry{PartitionKey: aws.String("k"), Data: []byte("x")}
	}
	for call := range 3 {
		out, err := c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("q"), Records: entries})
		if err != nil {
			t.Fatal(err)
		}
		want := int32(0)
		if call == 2 {
			want = 500
		}
		if got := aws.ToInt32(out.FailedRecordCount); got != want {
			t.Fatalf("call %d: %d failed, want %d", call+1, got, want)
		}
		if want > 0 && aws.ToString(out.Records[0].ErrorCode) != "ProvisionedThroughputExceededException" {
			t.Fatalf("failed entry %+v", out.Records[0])
		}
	}
	_, err := c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("q"), PartitionKey: aws.String("k"), Data: []byte("x")})
	if !throttled(err) {
		t.Fatalf("PutRecord over the quota: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("q"), PartitionKey: aws.String("k"), Data: []byte("x")}); err != nil {
		t.Fatalf("PutRecord in the next second: %v", err)
	}
	// Reads: five calls a second.
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("q"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeLatest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		_, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
		if (i == 5) != throttled(err) {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	// A big answer: 1,001 records of 1 KiB, about 1 MiB, keep the shard
	// refused for about half a second.
	now = now.Add(2 * time.Second)
	it, _ = c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("q"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	f.mu.Lock()
	for i := range f.streams["q"].shards[0].Records {
		f.streams["q"].shards[0].Records[i].Data = bytes.Repeat([]byte("x"), 1024)
	}
	f.mu.Unlock()
	page, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(page.Records) != 1001 {
		t.Fatalf("big read: %v", err)
	}
	now = now.Add(400 * time.Millisecond)
	if _, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: page.NextShardIterator}); !throttled(err) {
		t.Fatalf("read within the refill: %v", err)
	}
	now = now.Add(200 * time.Millisecond)
	if _, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: page.NextShardIterator}); err != nil {
		t.Fatalf("read after the refill: %v", err)
	}
	// Iterators expire after five minutes.
	now = now.Add(5*time.Minute + time.Second)
	_, err = c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: page.NextShardIterator})
	var ei *types.ExpiredIteratorException
	if !errors.As(err, &ei) {
		t.Fatalf("an old iterator: %v", err)
	}
}

// Enhanced fan-out over the wire: a consumer registered and described, a
// subscription through the SDK's own event stream decoding that delivers
// the shard's records and, at its end, the children; one subscription per
// consumer and shard at a time.
func TestWireSubscribeToShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := New()
	s := f.AddStream("efo", 1)
	c := client(f)
	reg, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(s.ARN), ConsumerName: aws.String("app")})
	if err != nil {
		t.Fatal(err)
	}
	arn := reg.Consumer.ConsumerARN
	if !strings.HasPrefix(aws.ToString(arn), s.ARN+"/consumer/app:") || reg.Consumer.ConsumerStatus != types.ConsumerStatusActive {
		t.Fatalf("consumer %+v", reg.Consumer)
	}
	if _, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(s.ARN), ConsumerName: aws.String("app")}); !errors.As(err, new(*types.ResourceInUseException)) {
		t.Fatalf("a second registration: %v", err)
	}
	list, err := c.ListStreamConsumers(ctx, &kinesis.ListStreamConsumersInput{StreamARN: aws.String(s.ARN)})
	if err != nil || len(list.Consumers) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for i := range 3 {
		f.Put("efo", "k", []byte{byte('a' + i)})
	}
	sub, err := c.SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: arn, ShardId: aws.String("shardId-000000000000"),
		StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.GetStream().Close()
	if _, err := c.SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: arn, ShardId: aws.String("shardId-000000000000"),
		StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeLatest}}); !errors.As(err, new(*types.ResourceInUseException)) {
		t.Fatalf("a second subscription: %v", err)
	}
	var got []string
	var children []types.ChildShard
	split := false
	for ev := range sub.GetStream().Events() {
		e, ok := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent)
		if !ok {
			t.Fatalf("event %T", ev)
		}
		for _, r := range e.Value.Records {
			got = append(got, string(r.Data))
		}
		if len(got) == 3 && !split {
			split = true
			f.SplitHalf("efo", "shardId-000000000000")
		}
		if e.Value.ContinuationSequenceNumber == nil {
			children = e.Value.ChildShards
		}
	}
	if err := sub.GetStream().Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "") != "abc" || len(children) != 2 {
		t.Fatalf("records %v, children %+v", got, children)
	}
	// The subscription ended: the shard is free again, and a deregistered
	// consumer is gone.
	if _, err := c.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{ConsumerARN: arn}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: arn}); !errors.As(err, new(*types.ResourceNotFoundException)) {
		t.Fatalf("describe after deregistration: %v", err)
	}
}
