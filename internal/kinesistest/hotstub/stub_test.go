package hotstub

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func start(t *testing.T, o Options) (*Server, *kinesis.Client) {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1})
}

func iter(t *testing.T, c *kinesis.Client, in *kinesis.GetShardIteratorInput) *string {
	t.Helper()
	in.StreamName = aws.String("hot")
	out, err := c.GetShardIterator(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out.ShardIterator
}

func throttled(err error) bool {
	var pte *types.ProvisionedThroughputExceededException
	return errors.As(err, &pte)
}

func TestRecordsAndPositions(t *testing.T) {
	c0 := &clock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	s, c := start(t, Options{Shards: 2, Start: c0.now.Add(-10 * time.Second), Rate: []float64{100, 10}, Now: c0.Now})
	// Shard 0: 100/s for 10 s (records 0..1000 have arrived, 1001 of them).
	it := iter(t, c, &kinesis.GetShardIteratorInput{ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(c0.now.Add(-2 * time.Second))})
	out, err := c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(50)})
	if err != nil {
		t.Fatal(err)
	}
	first := out.Records[0]
	if len(out.Records) != 50 || !aws.ToTime(first.ApproximateArrivalTimestamp).Equal(c0.now.Add(-2*time.Second)) ||
		aws.ToString(first.PartitionKey) != s.Key(0, 800) || len(first.Data) != 1000 || aws.ToInt64(out.MillisBehindLatest) != 1500 {
		t.Fatalf("%d records, first %v %s, behind %d", len(out.Records), first.ApproximateArrivalTimestamp, aws.ToString(first.PartitionKey), aws.ToInt64(out.MillisBehindLatest))
	}
	if !s.Range(0).Contains(lineage.PartitionKeyHash(aws.ToString(first.PartitionKey))) {
		t.Fatal("default key outside its shard")
	}
	// After the last record read, from its sequence number: the next one.
	c0.advance(time.Second)
	it = iter(t, c, &kinesis.GetShardIteratorInput{ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeAfterSequenceNumber, StartingSequenceNumber: out.Records[49].SequenceNumber})
	out2, err := c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: it})
	if err != nil {
		t.Fatal(err)
	}
	// A second later records 850..1100 have arrived (251): up to the tip.
	if len(out2.Records) != 251 || aws.ToString(out2.Records[0].PartitionKey) != s.Key(0, 850) || aws.ToInt64(out2.MillisBehindLatest) != 0 {
		t.Fatalf("%d records, behind %d", len(out2.Records), aws.ToInt64(out2.MillisBehindLatest))
	}
	if got := s.RecordsBetween(1, c0.now.Add(-5*time.Second), c0.now); got != 50 {
		t.Fatalf("RecordsBetween %d", got)
	}
}

func TestReadLimits(t *testing.T) {
	c0 := &clock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	// 1,101 bytes a record (with its one-byte key): 10,000 records would
	// pass 10 MiB.
	s, c := start(t, Options{Start: c0.now.Add(-time.Hour), RecordSize: 1100, Now: c0.Now, Key: func(int, int) string { return "k" }})
	it := iter(t, c, &kinesis.GetShardIteratorInput{ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	get := func(limit int32) (*kinesis.GetRecordsOutput, error) {
		return c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(limit)})
	}
	out, err := get(10000)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Records); n != MaxPageBytes/1101 {
		t.Fatalf("%d records in a full page", n)
	}
	it = out.NextShardIterator
	// The shard now refuses calls for size / 2 MiB/s, just under 5 s; a
	// refused call adds a second.
	c0.advance(4 * time.Second)
	if _, err := get(1); !throttled(err) {
		t.Fatalf("4 s after 10 MiB: %v", err)
	}
	c0.advance(900 * time.Millisecond)
	if _, err := get(1); !throttled(err) {
		t.Fatalf("4.9 s after 10 MiB: %v", err)
	}
	c0.advance(600 * time.Millisecond) // 5.5 s: past the 10 MiB block, within the second after a throttle
	if _, err := get(1); !throttled(err) {
		t.Fatalf("0.6 s after a throttle: %v", err)
	}
	c0.advance(time.Second)
	if _, err := get(1); err != nil {
		t.Fatalf("after the block: %v", err)
	}
	// Five calls a second: the sixth within the second is refused.
	c0.advance(time.Second)
	var got []bool
	for range 6 {
		_, err := get(1)
		got = append(got, throttled(err))
		c0.advance(150 * time.Millisecond)
	}
	if !slices.Equal(got, []bool{false, false, false, false, false, true}) {
		t.Fatalf("throttled %v", got)
	}
	st := s.Stats()[0]
	if st.GetRecords != 11 || st.Throttled != 4 || st.MaxResponseBytes != (MaxPageBytes/1101)*1101 || !slices.Equal(st.Limits, []int{10000, 1, 1, 1, 1, 1, 1}) {
		t.Fatalf("stats %+v", st)
	}
	// Block: another consumer's big read.
	c0.advance(10 * time.Second)
	s.Block(0, c0.now.Add(3*time.Second))
	if _, err := get(1); !throttled(err) {
		t.Fatalf("blocked: %v", err)
	}
	if _, err := c.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(0)}); err == nil {
		t.Fatal("Limit 0 accepted")
	}
}
