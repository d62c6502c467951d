package render

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
)

func lagMS(n int64) *int64 { return &n }

// lagReport has a shard in every state, a KPL position, a shard that could
// not be measured and one whose lease says AT_TIMESTAMP.
func lagReport() *consumer.Report {
	sub := int64(3)
	return &consumer.Report{Stream: "orders", Source: consumer.SourceRef{Kind: consumer.SourceKCLTable, Name: "orders-app"},
		Shards: []consumer.ShardLag{
			{ShardID: "shardId-000000000000", State: consumer.StateFinished, Position: "SHARD_END", Owner: "worker-a"},
			{ShardID: "shardId-000000000009", State: consumer.StateTrimmed, Position: "49590338271490256608559692538361571095921575989136588801"},
			{ShardID: "shardId-000000000001", State: consumer.StateReading, Position: "49590338271490256608559692538361571095921575989136588898",
				MillisBehindLatest: lagMS(754), Owner: "worker-a"},
			{ShardID: "shardId-000000000002", State: consumer.StateReading, Position: "49590338271490256608559692538361571095921575989136589900", SubSequenceNumber: &sub,
				MillisBehindLatest: lagMS(int64(3*time.Hour/time.Millisecond) + 61000), Owner: "worker-b"},
			{ShardID: "shardId-000000000003", State: consumer.StateReading, Position: "12", Owner: "worker-b",
				Error: "ProvisionedThroughputExceededException: Rate exceeded for shard"},
			{ShardID: "shardId-000000000004", State: consumer.StateBlocked, Position: "TRIM_HORIZON", BlockedBy: []string{"shardId-000000000002", "shardId-000000000003"},
				MillisBehindLatest: lagMS(200000)},
			{ShardID: "shardId-000000000005", State: consumer.StateNotStarted, Position: "AT_TIMESTAMP",
				Note: "the lease says AT_TIMESTAMP without the time"},
		},
		MaxMillisBehindLatest: lagMS(int64(3*time.Hour/time.Millisecond) + 61000), WorstShard: "shardId-000000000002",
		Note: "2 lease(s) of other streams in the table were left out"}
}

func TestLagTableGolden(t *testing.T) {
	caught := &consumer.Report{Stream: "orders", Source: consumer.SourceRef{Kind: consumer.SourceCheckpoint, Name: "./orders.checkpoint"},
		Shards:                []consumer.ShardLag{{ShardID: "shardId-000000000000", State: consumer.StateReading, Position: "7", MillisBehindLatest: lagMS(0)}},
		MaxMillisBehindLatest: lagMS(0), WorstShard: "shardId-000000000000"}
	for _, tc := range []struct {
		name string
		r    *consumer.Report
		o    LagOptions
	}{
		{"table.txt", lagReport(), LagOptions{Theme: NewTheme(false)}},
		{"table-short.ansi", lagReport(), LagOptions{Theme: NewTheme(true), ShortIDs: true}},
		{"caught-up.txt", caught, LagOptions{Theme: NewTheme(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := LagTable(&buf, tc.r, tc.o); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "lag", tc.name), buf.Bytes())
		})
	}
}

func TestFormatBehind(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", 850 * time.Millisecond: "850ms", 12 * time.Second: "12s",
		200 * time.Second: "3m20s", 3*time.Hour + 61*time.Second: "3h01m",
	} {
		if got := FormatBehind(d); got != want {
			t.Errorf("FormatBehind(%v) = %q, want %q", d, got, want)
		}
	}
}
