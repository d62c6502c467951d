package fake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// clockFake is a fake on a clock the test moves.
func clockFake(start time.Time) (*Fake, *time.Time) {
	f := New()
	now := start
	f.Now = func() time.Time { return now }
	return f, &now
}

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// readKeys reads a shard from an iterator to its tip (or end) and returns
// the partition keys, in order.
func readKeys(t *testing.T, c *kinesis.Client, it *string) []string {
	t.Helper()
	var keys []string
	for it != nil {
		out, err := c.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: it})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			keys = append(keys, aws.ToString(r.PartitionKey))
		}
		if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
			break
		}
		it = out.NextShardIterator
	}
	return keys
}

func iterator(t *testing.T, c *kinesis.Client, stream, shard string, typ types.ShardIteratorType, seq string, ts time.Time) *string {
	t.Helper()
	in := &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: aws.String(shard), ShardIteratorType: typ}
	if seq != "" {
		in.StartingSequenceNumber = aws.String(seq)
	}
	if !ts.IsZero() {
		in.Timestamp = aws.Time(ts)
	}
	out, err := c.GetShardIterator(context.Background(), in)
	if err != nil {
		t.Fatalf("%s %s: %v", typ, seq, err)
	}
	return out.ShardIterator
}

// Records older than the stream's 24 hours are no longer read: every
// iterator type starts after them, a trimmed sequence number reads on from
// the oldest record kept, and an iterator issued before the trim does too.
func TestRetentionTrimsByAge(t *testing.T) {
	f, now := clockFake(t0)
	f.AddStream("s", 1)
	c := client(f)
	const sh = "shardId-000000000000"
	var seqs []string
	for i, age := range []time.Duration{0, time.Hour, 12 * time.Hour, 23 * time.Hour} {
		*now = t0.Add(age)
		_, seq := f.Put("s", fmt.Sprintf("k%d", i), []byte("x"))
		seqs = append(seqs, seq)
	}
	early := iterator(t, c, "s", sh, types.ShardIteratorTypeTrimHorizon, "", time.Time{})
	sum, err := c.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})
	if err != nil || aws.ToInt32(sum.StreamDescriptionSummary.RetentionPeriodHours) != 24 {
		t.Fatalf("retention %v, %v; want 24 hours", sum, err)
	}

	*now = t0.Add(25*time.Hour + time.Minute) // k0 and k1 have aged out
	want := "k2 k3"
	for name, it := range map[string]*string{
		"TRIM_HORIZON":                    iterator(t, c, "s", sh, types.ShardIteratorTypeTrimHorizon, "", time.Time{}),
		"AT_TIMESTAMP before the horizon": iterator(t, c, "s", sh, types.ShardIteratorTypeAtTimestamp, "", t0),
		"AT_SEQUENCE_NUMBER trimmed":      iterator(t, c, "s", sh, types.ShardIteratorTypeAtSequenceNumber, seqs[0], time.Time{}),
		"AFTER_SEQUENCE_NUMBER trimmed":   iterator(t, c, "s", sh, types.ShardIteratorTypeAfterSequenceNumber, seqs[0], time.Time{}),
		"AFTER the last trimmed":          iterator(t, c, "s", sh, types.ShardIteratorTypeAfterSequenceNumber, seqs[1], time.Time{}),
		"an iterator issued before":       early,
	} {
		if got := strings.Join(readKeys(t, c, it), " "); got != want {
			t.Errorf("%s read %q, want %q", name, got, want)
		}
	}
	if got := strings.Join(readKeys(t, c, iterator(t, c, "s", sh, types.ShardIteratorTypeAtSequenceNumber, seqs[3], time.Time{})), " "); got != "k3" {
		t.Errorf("AT_SEQUENCE_NUMBER of a kept record read %q", got)
	}
	_, err = c.GetShardIterator(context.Background(), &kinesis.GetShardIteratorInput{StreamName: aws.String("s"), ShardId: aws.String(sh),
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: aws.String("12345")})
	var ia *types.InvalidArgumentException
	if !errors.As(err, &ia) {
		t.Errorf("a sequence number of no record: %v, want InvalidArgumentException", err)
	}
	if got := len(f.ShardRecords("s", sh)); got != 2 {
		t.Errorf("%d records kept, want 2", got)
	}
	// The read side for other servers (SubscribeToShard) agrees.
	idx, ok, err := f.StartIndex("s", sh, types.ShardIteratorTypeTrimHorizon, "", time.Time{})
	if rd := f.ReadShard("s", sh, idx, 10); !ok || err != nil || len(rd.Records) != 2 || rd.LastSeq != seqs[1] {
		t.Errorf("StartIndex %d %v %v; ReadShard %+v", idx, ok, err, rd)
	}
	rd := f.ReadShard("s", sh, 0, 10)
	if !rd.Listed || !rd.Behind || len(rd.Records) != 0 || rd.LastSeq != seqs[1] || rd.Next != idx {
		t.Errorf("ReadShard at a trimmed index: %+v, want no records, behind, after %s, next at %d", rd, seqs[1], idx)
	}
	// A subscription continues from the oldest record kept, not one
	// record at a time through what was trimmed.
	if rd = f.ReadShard("s", sh, rd.Next, 10); len(rd.Records) != 2 || rd.Next != idx+2 {
		t.Errorf("ReadShard from Next: %+v, want the 2 records kept, then index %d", rd, idx+2)
	}
}

// A closed shard stays listed until it closed longer ago than the
// retention period, then leaves ListShards and cannot be read; its
// children stay.
func TestRetentionClosedShardLeavesListings(t *testing.T) {
	ctx := context.Background()
	f, now := clockFake(t0)
	f.AddStream("s", 2)
	c := client(f)
	f.Put("s", "a", []byte("x"))
	*now = t0.Add(time.Hour)
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("s"), ShardToSplit: aws.String("shardId-000000000000"),
		NewStartingHashKey: aws.String("85070591730234615865843651857942052864")}); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(2 * time.Hour)
	f.Merge("s", "shardId-000000000003", "shardId-000000000001")
	listed := func() string {
		t.Helper()
		out, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s")})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range out.Shards {
			ids = append(ids, strings.TrimPrefix(aws.ToString(s.ShardId), "shardId-00000000000"))
		}
		return strings.Join(ids, " ")
	}
	// Past retention, shard 0's record is trimmed, but it closed only 24
	// hours ago: still listed, and read to its end with its children.
	*now = t0.Add(25*time.Hour - time.Minute)
	if got := listed(); got != "0 1 2 3 4" {
		t.Fatalf("listed %q", got)
	}
	out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iterator(t, c, "s", "shardId-000000000000", types.ShardIteratorTypeTrimHorizon, "", time.Time{})})
	if err != nil || len(out.Records) != 0 || out.NextShardIterator != nil || len(out.ChildShards) != 2 {
		t.Fatalf("reading the emptied parent: %+v, %v", out, err)
	}
	*now = t0.Add(25*time.Hour + time.Minute)
	if got := listed(); got != "1 2 3 4" {
		t.Fatalf("listed %q, want shard 0 gone", got)
	}
	_, err = c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("s"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("an iterator on the trimmed shard: %v", err)
	}
	*now = t0.Add(26*time.Hour + time.Minute) // the merge's parents (closed by the helper) go too
	if got := listed(); got != "2 4" {
		t.Fatalf("listed %q, want the open shards only", got)
	}
}

// ListShards pages stay whole when a shard is trimmed between two pages.
func TestListShardsPagesAcrossATrim(t *testing.T) {
	ctx := context.Background()
	f, now := clockFake(t0)
	f.PageSize = 2
	f.AddStream("s", 2)
	f.SplitHalf("s", "shardId-000000000000")
	c := client(f)
	first, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s")})
	if err != nil || len(first.Shards) != 2 || first.NextToken == nil {
		t.Fatalf("first page %+v, %v", first, err)
	}
	*now = t0.Add(25 * time.Hour)
	if _, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	second, err := c.ListShards(ctx, &kinesis.ListShardsInput{NextToken: first.NextToken})
	if err != nil || len(second.Shards) != 2 || aws.ToString(second.Shards[0].ShardId) != "shardId-000000000002" || second.NextToken != nil {
		t.Fatalf("second page %+v, %v; want shards 2 and 3", second, err)
	}
}

// The retention period changes within the service's bounds and rules, and
// a shorter one trims at once.
func TestRetentionPeriodChanges(t *testing.T) {
	ctx := context.Background()
	f, now := clockFake(t0)
	f.AddStream("s", 1)
	c := client(f)
	hours := func() int32 {
		t.Helper()
		out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToInt32(out.StreamDescriptionSummary.RetentionPeriodHours)
	}
	increase := func(h int32) error {
		_, err := c.IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String("s"), RetentionPeriodHours: aws.Int32(h)})
		return err
	}
	decrease := func(h int32) error {
		_, err := c.DecreaseStreamRetentionPeriod(ctx, &kinesis.DecreaseStreamRetentionPeriodInput{StreamName: aws.String("s"), RetentionPeriodHours: aws.Int32(h)})
		return err
	}
	if err := increase(48); err != nil || hours() != 48 {
		t.Fatalf("increase to 48: %v, now %d", err, hours())
	}
	f.Put("s", "old", []byte("x"))
	*now = t0.Add(30 * time.Hour)
	if n := len(f.ShardRecords("s", "shardId-000000000000")); n != 1 {
		t.Fatalf("%d records kept at 30 hours of 48", n)
	}
	if err := decrease(24); err != nil || hours() != 24 {
		t.Fatalf("decrease to 24: %v, now %d", err, hours())
	}
	if n := len(f.ShardRecords("s", "shardId-000000000000")); n != 0 {
		t.Fatalf("%d records kept at 30 hours of 24", n)
	}
	for _, tc := range []struct {
		call func(int32) error
		h    int32
		want string
	}{
		{increase, 12, "Minimum allowed retention period is 24 hours. Requested retention period (12 hours) is too short."},
		{decrease, 23, "Minimum allowed retention period is 24 hours"},
		{increase, 8761, "Maximum allowed retention period is 8760 hours. Requested retention period (8761 hours) is too long."},
		{decrease, 48, "Requested retention period (48 hours) for stream s can not be longer than existing retention period (24 hours). Use IncreaseRetentionPeriod API."},
	} {
		var ia *types.InvalidArgumentException
		if err := tc.call(tc.h); !errors.As(err, &ia) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d hours: %v, want InvalidArgumentException %q", tc.h, err, tc.want)
		}
	}
	if err := increase(8760); err != nil {
		t.Fatal(err)
	}
	var ia *types.InvalidArgumentException
	if err := increase(100); !errors.As(err, &ia) || !strings.Contains(err.Error(), "can not be shorter than existing retention period (8760 hours). Use DecreaseRetentionPeriod API.") {
		t.Errorf("a shorter increase: %v", err)
	}
	if _, err := f.IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String("s")}); err == nil || !strings.Contains(err.Error(), "ValidationException") {
		t.Errorf("no hours: %v, want ValidationException", err)
	}
	// Not ACTIVE: refused, as a reshard is.
	f.StateDelay = time.Minute
	if err := decrease(24); err != nil {
		t.Fatal(err)
	}
	var iu *types.ResourceInUseException
	if err := decrease(24); !errors.As(err, &iu) {
		t.Errorf("while UPDATING: %v, want ResourceInUseException", err)
	}
	// Fake.Retention is the period of new streams; less than an hour is
	// reported as one.
	f.Retention = 30 * time.Minute
	f.AddStream("short", 1)
	out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("short")})
	if err != nil || aws.ToInt32(out.StreamDescriptionSummary.RetentionPeriodHours) != 1 {
		t.Fatalf("short: %+v, %v", out, err)
	}
	f.Put("short", "k", []byte("x"))
	*now = now.Add(31 * time.Minute)
	if n := len(f.ShardRecords("short", "shardId-000000000000")); n != 1 {
		t.Fatalf("%d records before a call looked at the stream", n) // trimming is lazy
	}
	if _, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("short")}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.ShardRecords("short", "shardId-000000000000")); n != 0 {
		t.Fatalf("%d records kept past a 30-minute retention", n)
	}
}

// Over MaxBytes, the oldest records of the whole service go first, whatever
// their stream; TRIM_HORIZON follows; a deleted stream's bytes free room.
func TestMaxBytesTrimsOldestFirst(t *testing.T) {
	ctx := context.Background()
	f, now := clockFake(t0)
	f.MaxBytes = 100
	hits := 0
	f.OnMaxBytes = func() { hits++ }
	f.AddStream("a", 1)
	f.AddStream("b", 1)
	c := client(f)
	put := func(stream, key string, size int) {
		*now = now.Add(time.Second)
		f.Put(stream, key, make([]byte, size-len(key)))
	}
	keys := func(stream string) string {
		return strings.Join(readKeys(t, c, iterator(t, c, stream, "shardId-000000000000", types.ShardIteratorTypeTrimHorizon, "", time.Time{})), " ")
	}
	for i := range 5 { // 10 records of 10 bytes: exactly the bound
		put("a", fmt.Sprintf("a%d", i), 10)
		put("b", fmt.Sprintf("b%d", i), 10)
	}
	early := iterator(t, c, "a", "shardId-000000000000", types.ShardIteratorTypeTrimHorizon, "", time.Time{})
	if hits != 0 || keys("a") != "a0 a1 a2 a3 a4" {
		t.Fatalf("trimmed within the bound: %d, %q", hits, keys("a"))
	}
	put("a", "a5", 10) // a0, the oldest, goes
	put("b", "b5", 35) // then b0, a1, b1 and a2: 40 bytes for 35
	if got, want := keys("a")+" | "+keys("b"), "a3 a4 a5 | b2 b3 b4 b5"; got != want || hits != 1 {
		t.Fatalf("kept %q, want %q; OnMaxBytes called %d times, want once", got, want, hits)
	}
	if got := strings.Join(readKeys(t, c, early), " "); got != "a3 a4 a5" {
		t.Fatalf("an iterator issued before the trim read %q", got)
	}
	// b's 65 bytes leave with it: a, at 30, takes 70 more before anything
	// goes.
	if _, err := c.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("b")}); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		put("a", fmt.Sprintf("c%d", i), 10)
	}
	if got := keys("a"); got != "a3 a4 a5 c0 c1 c2 c3 c4 c5 c6" {
		t.Fatalf("after b was deleted, a keeps %q", got)
	}
	put("a", "c7", 10)
	if got := keys("a"); got != "a4 a5 c0 c1 c2 c3 c4 c5 c6 c7" {
		t.Fatalf("over the bound again, a keeps %q", got)
	}
}
