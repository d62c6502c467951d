package parity

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// backend is one Kinesis the scenarios run against.
type backend struct {
	name string
	c    *kinesis.Client
}

// scenario runs against a fresh stream name and returns what it observed,
// one fact a line (no sequence numbers or times: they differ by design).
type scenario struct {
	name string
	run  func(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string
	// consumers: the scenario needs enhanced fan-out (kinesalite has none).
	consumers bool
}

var scenarios = []scenario{
	{name: "create and list", run: createAndList},
	{name: "routing", run: routing},
	{name: "split", run: split},
	{name: "merge", run: merge},
	{name: "update shard count", run: updateShardCount},
	{name: "read across a split", run: readAcross},
	{name: "iterators", run: iterators},
	{name: "bad input", run: badInput},
	{name: "consumers", run: consumers, consumers: true},
}

func TestParity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	backends := []backend{fakeBackend(t)}
	for _, b := range []emulator.Backend{emulator.KinesisMock, emulator.Kinesalite} {
		if err := emulator.Available(b); err != nil {
			t.Skipf("the parity suite needs both emulators: %v (make test installs them)", err)
		}
		e, err := emulator.Start(ctx, emulator.Options{Backend: b, StateDuration: -1})
		if err != nil {
			t.Fatalf("start %s: %v", b, err)
		}
		t.Cleanup(func() { _ = e.Stop() })
		backends = append(backends, backend{name: string(b), c: kinesis.New(e.ClientOptions(), func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })})
	}
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := map[string][]string{}
			for _, b := range backends {
				if sc.consumers && b.name == string(emulator.Kinesalite) {
					continue
				}
				got[b.name] = sc.run(ctx, t, b.c, fmt.Sprintf("parity-%d-%d", i, time.Now().UnixNano()%1e9))
			}
			compare(t, sc.name, got)
		})
	}
}

// compare fails when the fake disagrees with every emulator on a line that
// no documented quirk explains.
func compare(t *testing.T, scenario string, got map[string][]string) {
	t.Helper()
	ours := got["fake"]
	var others []string
	for name := range got {
		if name != "fake" {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	agreed := false
	var diffs []string
	for _, name := range others {
		theirs := withoutQuirks(scenario, name, got[name])
		mine := withoutQuirks(scenario, name, ours)
		if slices.Equal(mine, theirs) {
			agreed = true
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s:\n  fake: %s\n  %s: %s", name, strings.Join(mine, "\n        "), name, strings.Join(theirs, "\n        ")))
	}
	if !agreed {
		t.Errorf("the fake agrees with no emulator on %q (documented quirks left out):\n%s", scenario, strings.Join(diffs, "\n"))
	}
}

// fakeBackend serves the fake on a loopback port, as kinesis-shards local
// does (quotas on, no state delay).
func fakeBackend(t *testing.T) backend {
	f := fake.New()
	f.Quotas = true
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(srv.Close)
	return backend{name: "fake", c: kinesis.New(kinesis.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1})}
}

// create makes a stream of n shards and waits for ACTIVE.
func create(ctx context.Context, t *testing.T, c *kinesis.Client, stream string, n int32) {
	t.Helper()
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(n)}); err != nil {
		t.Fatalf("create %s: %v", stream, err)
	}
	waitActive(ctx, t, c, stream)
}

func waitActive(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) {
	t.Helper()
	for i := 0; ; i++ {
		out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive {
			return
		}
		if i > 200 {
			t.Fatalf("stream %s not ACTIVE: %v", stream, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shards lists every shard: id, range, parents, open or closed.
func shards(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []types.Shard {
	t.Helper()
	var all []types.Shard
	in := &kinesis.ListShardsInput{StreamName: aws.String(stream)}
	for {
		out, err := c.ListShards(ctx, in)
		if err != nil {
			t.Fatalf("list %s: %v", stream, err)
		}
		all = append(all, out.Shards...)
		if out.NextToken == nil {
			return all
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}

func describeShards(ss []types.Shard) []string {
	var lines []string
	for _, s := range ss {
		state := "open"
		if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
			state = "closed"
		}
		lines = append(lines, fmt.Sprintf("shard %s %s..%s parent=%s adjacent=%s %s", aws.ToString(s.ShardId),
			aws.ToString(s.HashKeyRange.StartingHashKey), aws.ToString(s.HashKeyRange.EndingHashKey),
			aws.ToString(s.ParentShardId), aws.ToString(s.AdjacentParentShardId), state))
	}
	return lines
}

func createAndList(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 3)
	out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.StreamDescriptionSummary
	lines := []string{fmt.Sprintf("status %s, %d open, retention %dh", d.StreamStatus, aws.ToInt32(d.OpenShardCount), aws.ToInt32(d.RetentionPeriodHours))}
	return append(lines, describeShards(shards(ctx, t, c, stream))...)
}

// put writes records keyed key-0..key-(n-1), one call, and says where each went.
func put(ctx context.Context, t *testing.T, c *kinesis.Client, stream string, n int) []string {
	t.Helper()
	in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
	for i := range n {
		in.Records = append(in.Records, types.PutRecordsRequestEntry{PartitionKey: aws.String(fmt.Sprintf("key-%d", i)), Data: []byte(fmt.Sprintf("r%d", i))})
	}
	out, err := c.PutRecords(ctx, in)
	if err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
		t.Fatalf("put: %v (%d failed)", err, aws.ToInt32(out.FailedRecordCount))
	}
	var lines []string
	for i, r := range out.Records {
		lines = append(lines, fmt.Sprintf("key-%d -> %s", i, aws.ToString(r.ShardId)))
	}
	return lines
}

func routing(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 4)
	lines := put(ctx, t, c, stream, 40)
	for _, ehk := range []string{"0", "170141183460469231731687303715884105728", "340282366920938463463374607431768211455"} {
		out, err := c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String("x"), Data: []byte("x"), ExplicitHashKey: aws.String(ehk)})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("explicit %s -> %s", ehk, aws.ToString(out.ShardId)))
	}
	return lines
}

// middle is the middle of a shard's range.
func middle(s types.Shard) string {
	lo, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.StartingHashKey), 10)
	hi, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.EndingHashKey), 10)
	return new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1).String()
}

func split(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 2)
	ss := shards(ctx, t, c, stream)
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(stream), ShardToSplit: ss[0].ShardId, NewStartingHashKey: aws.String(middle(ss[0]))}); err != nil {
		t.Fatal(err)
	}
	waitActive(ctx, t, c, stream)
	return describeShards(shards(ctx, t, c, stream))
}

func merge(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 3)
	ss := shards(ctx, t, c, stream)
	if _, err := c.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String(stream), ShardToMerge: ss[1].ShardId, AdjacentShardToMerge: ss[2].ShardId}); err != nil {
		t.Fatal(err)
	}
	waitActive(ctx, t, c, stream)
	return describeShards(shards(ctx, t, c, stream))
}

func updateShardCount(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 2)
	out, err := c.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String(stream), TargetShardCount: aws.Int32(4), ScalingType: types.ScalingTypeUniformScaling})
	if err != nil {
		return []string{"UpdateShardCount: " + code(err)}
	}
	waitActive(ctx, t, c, stream)
	var open []string
	for _, s := range shards(ctx, t, c, stream) {
		if s.SequenceNumberRange.EndingSequenceNumber == nil {
			open = append(open, aws.ToString(s.HashKeyRange.StartingHashKey)+".."+aws.ToString(s.HashKeyRange.EndingHashKey))
		}
	}
	return append([]string{fmt.Sprintf("current %d target %d, %d open", aws.ToInt32(out.CurrentShardCount), aws.ToInt32(out.TargetShardCount), len(open))}, open...)
}

// readAcross writes to a shard, splits it, and reads it to its end.
func readAcross(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 1)
	put(ctx, t, c, stream, 5)
	ss := shards(ctx, t, c, stream)
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(stream), ShardToSplit: ss[0].ShardId, NewStartingHashKey: aws.String(middle(ss[0]))}); err != nil {
		t.Fatal(err)
	}
	waitActive(ctx, t, c, stream)
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: ss[0].ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	next := it.ShardIterator
	for calls := 0; next != nil && calls < 10; calls++ {
		out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			lines = append(lines, "record "+aws.ToString(r.PartitionKey)+" "+string(r.Data))
		}
		next = out.NextShardIterator
		if next == nil {
			var kids []string
			for _, ch := range out.ChildShards {
				kids = append(kids, aws.ToString(ch.ShardId)+"<-"+strings.Join(ch.ParentShards, "+"))
			}
			lines = append(lines, "end, children: "+strings.Join(kids, " "))
		}
		time.Sleep(250 * time.Millisecond) // within the shard's 5 reads a second
	}
	return lines
}

func iterators(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 1)
	before := time.Now().Add(-2 * time.Second)
	put(ctx, t, c, stream, 4)
	ss := shards(ctx, t, c, stream)
	first := func(in *kinesis.GetShardIteratorInput) string {
		in.StreamName, in.ShardId = aws.String(stream), ss[0].ShardId
		it, err := c.GetShardIterator(ctx, in)
		if err != nil {
			return string(in.ShardIteratorType) + ": " + code(err)
		}
		time.Sleep(250 * time.Millisecond)
		out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			return string(in.ShardIteratorType) + ": " + code(err)
		}
		var keys []string
		for _, r := range out.Records {
			keys = append(keys, aws.ToString(r.PartitionKey))
		}
		return fmt.Sprintf("%s: %v", in.ShardIteratorType, keys)
	}
	it, _ := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: ss[0].ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	all, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(all.Records) != 4 {
		t.Fatalf("read: %v", err)
	}
	second := all.Records[1].SequenceNumber
	return []string{
		first(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeTrimHorizon}),
		first(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeLatest}),
		first(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: second}),
		first(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeAfterSequenceNumber, StartingSequenceNumber: second}),
		first(&kinesis.GetShardIteratorInput{ShardIteratorType: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(before)}),
	}
}

// code is an error's code, or the error.
func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return err.Error()
}

func badInput(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 2)
	ss := shards(ctx, t, c, stream)
	try := func(what string, err error) string {
		if err == nil {
			return what + ": accepted"
		}
		return what + ": " + code(err)
	}
	_, e1 := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream + "-missing")})
	_, e2 := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)})
	_, e3 := c.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String("k"), Data: []byte("x"), ExplicitHashKey: aws.String("340282366920938463463374607431768211456")})
	_, e4 := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: aws.String("shardId-000000000099"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	_, e5 := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(stream), ShardToSplit: ss[0].ShardId, NewStartingHashKey: ss[0].HashKeyRange.StartingHashKey})
	_, e6 := c.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String(stream), ShardToMerge: ss[1].ShardId, AdjacentShardToMerge: aws.String("shardId-000000000099")})
	_, e7 := c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: []types.PutRecordsRequestEntry{}})
	return []string{
		try("describe a missing stream", e1),
		try("create an existing stream", e2),
		try("explicit hash key 2^128", e3),
		try("iterator of a missing shard", e4),
		try("split at the shard's first key", e5),
		try("merge with a missing shard", e6),
		try("PutRecords of no records", e7),
	}
}

func consumers(ctx context.Context, t *testing.T, c *kinesis.Client, stream string) []string {
	create(ctx, t, c, stream, 1)
	put(ctx, t, c, stream, 3)
	sum, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	arn := sum.StreamDescriptionSummary.StreamARN
	reg, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("app")})
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"registered " + aws.ToString(reg.Consumer.ConsumerName)}
	for i := 0; ; i++ {
		d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: reg.Consumer.ConsumerARN})
		if err == nil && d.ConsumerDescription.ConsumerStatus == types.ConsumerStatusActive {
			break
		}
		if i > 200 {
			t.Fatalf("consumer not ACTIVE: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("app")})
	lines = append(lines, "register again: "+code(err))
	list, err := c.ListStreamConsumers(ctx, &kinesis.ListStreamConsumersInput{StreamARN: arn})
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, fmt.Sprintf("%d listed", len(list.Consumers)))
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub, err := c.SubscribeToShard(sctx, &kinesis.SubscribeToShardInput{ConsumerARN: reg.Consumer.ConsumerARN, ShardId: aws.String("shardId-000000000000"),
		StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}})
	if err != nil {
		return append(lines, "subscribe: "+code(err))
	}
	var keys []string
	for ev := range sub.GetStream().Events() {
		if e, ok := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent); ok {
			for _, r := range e.Value.Records {
				keys = append(keys, aws.ToString(r.PartitionKey))
			}
		}
		if len(keys) >= 3 {
			break
		}
	}
	_ = sub.GetStream().Close()
	lines = append(lines, fmt.Sprintf("subscribed: %v", keys))
	if _, err := c.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{ConsumerARN: reg.Consumer.ConsumerARN}); err != nil {
		t.Fatal(err)
	}
	return lines
}
