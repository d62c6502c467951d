package fake

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// listIDs lists a stream's shards with a filter, page by page (pages of
// one, so that the filter must survive the NextToken).
func listIDs(t *testing.T, f *Fake, stream string, sf *types.ShardFilter) []string {
	t.Helper()
	in := &kinesis.ListShardsInput{StreamName: aws.String(stream), ShardFilter: sf, MaxResults: aws.Int32(1)}
	var ids []string
	for {
		out, err := f.ListShards(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range out.Shards {
			ids = append(ids, aws.ToString(sh.ShardId))
		}
		if out.NextToken == nil {
			return ids
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken, MaxResults: aws.Int32(1)}
	}
}

// TestListShardsFilters: the shards open at a time, from a time on, the
// open ones and those after an id, as the service answers them, across
// pages.
func TestListShardsFilters(t *testing.T) {
	f, now := clockFake(t0)
	ctx := context.Background()
	if _, err := f.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(time.Minute)
	f.SplitHalf("s", "shardId-000000000000") // 0 closes; 2 and 3 open
	*now = t0.Add(2 * time.Minute)
	f.Merge("s", "shardId-000000000003", "shardId-000000000001") // 1 and 3 close; 4 opens
	*now = t0.Add(3 * time.Minute)

	at := func(d time.Duration) *types.ShardFilter {
		return &types.ShardFilter{Type: types.ShardFilterTypeAtTimestamp, Timestamp: aws.Time(t0.Add(d))}
	}
	for _, tc := range []struct {
		name string
		sf   *types.ShardFilter
		want []string
	}{
		{"none", nil, []string{"shardId-000000000000", "shardId-000000000001", "shardId-000000000002", "shardId-000000000003", "shardId-000000000004"}},
		{"at creation", at(30 * time.Second), []string{"shardId-000000000000", "shardId-000000000001"}},
		{"between split and merge", at(90 * time.Second), []string{"shardId-000000000001", "shardId-000000000002", "shardId-000000000003"}},
		{"after the merge", at(150 * time.Second), []string{"shardId-000000000002", "shardId-000000000004"}},
		{"from between", &types.ShardFilter{Type: types.ShardFilterTypeFromTimestamp, Timestamp: aws.Time(t0.Add(90 * time.Second))},
			[]string{"shardId-000000000001", "shardId-000000000002", "shardId-000000000003", "shardId-000000000004"}},
		{"at latest", &types.ShardFilter{Type: types.ShardFilterTypeAtLatest}, []string{"shardId-000000000002", "shardId-000000000004"}},
		{"after an id", &types.ShardFilter{Type: types.ShardFilterTypeAfterShardId, ShardId: aws.String("shardId-000000000002")}, []string{"shardId-000000000003", "shardId-000000000004"}},
	} {
		if got := listIDs(t, f, "s", tc.sf); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	_, err := f.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s"), ShardFilter: &types.ShardFilter{Type: types.ShardFilterTypeAtTimestamp}})
	if ia := (*types.InvalidArgumentException)(nil); !errors.As(err, &ia) {
		t.Errorf("AT_TIMESTAMP without a time: %v, want InvalidArgumentException", err)
	}
}

// TestMillisBehindLatest: the age of the first record an answer leaves
// unread, 0 at the tip.
func TestMillisBehindLatest(t *testing.T) {
	f, now := clockFake(t0)
	f.AddStream("s", 1)
	f.Put("s", "a", []byte("1"))
	*now = t0.Add(time.Second)
	f.Put("s", "b", []byte("2"))
	*now = t0.Add(5 * time.Second)
	ctx := context.Background()
	it, err := f.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("s"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
	if err != nil || len(out.Records) != 1 || aws.ToInt64(out.MillisBehindLatest) != 4000 {
		t.Fatalf("first read: %v, %d records, %d ms behind; want 1 record, 4000 ms behind", err, len(out.Records), aws.ToInt64(out.MillisBehindLatest))
	}
	out, err = f.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: out.NextShardIterator})
	if err != nil || len(out.Records) != 1 || aws.ToInt64(out.MillisBehindLatest) != 0 {
		t.Fatalf("at the tip: %v, %d records, %d ms behind; want 1 record, 0", err, len(out.Records), aws.ToInt64(out.MillisBehindLatest))
	}
}

// TestReshardsKeepTheShardQuota: SplitShard and UpdateShardCount are
// refused, with nothing changed, when they would open more shards than the
// account's quota.
func TestReshardsKeepTheShardQuota(t *testing.T) {
	f := New()
	f.ShardLimit = 3
	ctx := context.Background()
	if _, err := f.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("s"), TargetShardCount: aws.Int32(4), ScalingType: types.ScalingTypeUniformScaling}); !isLimit(err) {
		t.Fatalf("UpdateShardCount to 4 of a 3-shard quota: %v", err)
	}
	split := func(id string) error {
		sh := f.Stream("s").shard(id)
		mid := new(big.Int).Rsh(new(big.Int).Add(sh.Start, sh.End), 1)
		_, err := f.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("s"), ShardToSplit: aws.String(id), NewStartingHashKey: aws.String(mid.String())})
		return err
	}
	if err := split("shardId-000000000000"); err != nil {
		t.Fatalf("a split to 3 of 3: %v", err)
	}
	if err := split("shardId-000000000001"); !isLimit(err) {
		t.Fatalf("a split to 4 of 3: %v", err)
	}
	if got := f.OpenShards("s"); len(got) != 3 {
		t.Fatalf("open shards %v, want 3", got)
	}
}

func isLimit(err error) bool {
	var le *types.LimitExceededException
	return errors.As(err, &le)
}
