package render

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/hotstub"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

var hotT0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// hotWindow is shard n's window of a minute: records of size bytes with
// key(i), each standing for weight records.
func hotWindow(n int, r lineage.HashRange, count int, weight float64, key func(i int) string, size int) reshard.ShardWindow {
	w := reshard.ShardWindow{ShardID: fmt.Sprintf("shardId-%012d", n), Range: r, From: hotT0, Until: hotT0.Add(time.Minute), Covered: time.Minute}
	for i := range count {
		w.Records = append(w.Records, reshard.WindowRecord{Arrival: hotT0.Add(time.Duration(i) * time.Millisecond), PartitionKey: key(i), Bytes: size, Weight: weight})
		w.Estimated += weight
	}
	w.Sampled = weight > 1
	return w
}

// hotReport: shard 0 hot with one key (70 % of its records, sampled: a
// quarter read), shard 1 hot with many keys, shard 2 cold.
func hotReport(t *testing.T) *reshard.HotReport {
	t.Helper()
	layout, err := lineage.EvenLayout(3)
	if err != nil {
		t.Fatal(err)
	}
	k0, k1, k2 := hotstub.KeysIn(layout[0], 100), hotstub.KeysIn(layout[1], 3000), hotstub.KeysIn(layout[2], 50)
	return reshard.Analyze("orders", []reshard.ShardWindow{
		hotWindow(0, layout[0], 12000, 4, func(i int) string {
			if i%10 < 7 {
				return "customer-7"
			}
			return k0[i%100]
		}, 120),
		hotWindow(1, layout[1], 36000, 1, func(i int) string { return k1[i%3000] }, 900),
		hotWindow(2, layout[2], 600, 1, func(i int) string { return k2[i%50] }, 200),
	}, reshard.HotOptions{})
}

func TestHotTableGolden(t *testing.T) {
	r := hotReport(t)
	for _, tc := range []struct {
		name string
		o    HotOptions
	}{
		{"table.txt", HotOptions{Theme: NewTheme(false), Command: "kinesis-shards"}},
		{"table-short.ansi", HotOptions{Theme: NewTheme(true), ShortIDs: true, Command: "kinesis-shards"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HotTable(&buf, r, tc.o); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "hot", tc.name), buf.Bytes())
		})
	}
}

// Nothing hot, nothing sampled: one line says so, and no estimate note.
func TestHotTableCold(t *testing.T) {
	layout, _ := lineage.EvenLayout(1)
	r := reshard.Analyze("orders", []reshard.ShardWindow{hotWindow(0, layout[0], 60, 1, func(i int) string { return fmt.Sprint(i) }, 10)}, reshard.HotOptions{})
	var buf bytes.Buffer
	if err := HotTable(&buf, r, HotOptions{Theme: NewTheme(false)}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "hot", "cold.txt"), buf.Bytes())
}
