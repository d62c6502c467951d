package render

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// previewGolden compares got with testdata/preview/name (-update rewrites it).
func previewGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "preview", name), got)
}

func pvKey(s string) lineage.HashKey {
	k, err := lineage.ParseHashKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func pvSub(k lineage.HashKey, n uint64) lineage.HashKey { r, _ := k.Sub64(n); return r }

// pvGraph is a stream whose open shards are shardId-0..n-1 with these ranges.
func pvGraph(t *testing.T, ranges ...lineage.HashRange) *lineage.Graph {
	t.Helper()
	var shards []types.Shard
	for i, r := range ranges {
		shards = append(shards, types.Shard{
			ShardId:             aws.String(fmt.Sprintf("shardId-%012d", i)),
			HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(r.Start.String()), EndingHashKey: aws.String(r.End.String())},
			SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")},
		})
	}
	g, err := lineage.Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func pvEven(t *testing.T, n int) []lineage.HashRange {
	l, err := lineage.EvenLayout(n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func pvPlan(t *testing.T, g *lineage.Graph, sample *reshard.Sample, goal reshard.Goal) *reshard.Plan {
	t.Helper()
	p, err := reshard.NewPlan(reshard.Input{Stream: reshard.Stream{Name: "orders", Status: types.StreamStatusActive}, Graph: g, Sample: sample}, goal)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPreviewGolden(t *testing.T) {
	two := pvEven(t, 2)
	half := pvKey("170141183460469231731687303715884105728")
	mock2 := []lineage.HashRange{{Start: lineage.HashKey{}, End: pvSub(half, 2)}, {Start: pvSub(half, 1), End: lineage.MaxHashKey}}

	// 1,000 records on shard 1: 667 keys user-N that hash there, and a hot
	// key making up a third of the records.
	var keys []string
	for i := 0; len(keys) < 667; i++ {
		k := fmt.Sprintf("user-%d", i)
		if two[1].Contains(lineage.PartitionKeyHash(k)) {
			keys = append(keys, k)
		}
	}
	hot := ""
	for i := 0; hot == ""; i++ {
		if k := fmt.Sprintf("hot-%d", i); two[1].Contains(lineage.PartitionKeyHash(k)) {
			hot = k
		}
	}
	for range 333 {
		keys = append(keys, hot)
	}
	keys = append(keys, "outside-1", "outside-2") // one hashes to shard 0: left out
	sample := reshard.NewSample(5*time.Minute, reshard.NewShardSample("shardId-000000000001", two[1], keys, 5*time.Minute))
	if sample.Shards[0].Outside == 0 {
		t.Fatal("test keys should include some outside the shard")
	}

	cases := []struct {
		name string
		plan *reshard.Plan
		o    PreviewOptions
	}{
		{"split.txt", pvPlan(t, pvGraph(t, two...), nil, reshard.SplitGoal{Shard: "shardId-000000000001"}), PreviewOptions{Theme: NewTheme(false)}},
		{"split-wide.txt", pvPlan(t, pvGraph(t, two...), nil, reshard.SplitGoal{Shard: "shardId-000000000001"}), PreviewOptions{Theme: NewTheme(false), Wide: true}},
		{"split-color.ansi", pvPlan(t, pvGraph(t, two...), nil, reshard.SplitGoal{Shard: "shardId-000000000001"}), PreviewOptions{Theme: NewTheme(true)}},
		{"split-balanced.txt", pvPlan(t, pvGraph(t, two...), sample, reshard.SplitGoal{Shard: "shardId-000000000001", Median: true}), PreviewOptions{Theme: NewTheme(false)}},
		{"merge.txt", pvPlan(t, pvGraph(t, pvEven(t, 3)...), nil, reshard.MergeGoal{Shards: [2]string{"shardId-000000000002", "shardId-000000000001"}}), PreviewOptions{Theme: NewTheme(false)}},
		{"scale-update.txt", pvPlan(t, pvGraph(t, pvEven(t, 4)...), nil, reshard.ScaleGoal{Target: 6}), PreviewOptions{Theme: NewTheme(false)}},
		{"scale-splits.txt", pvPlan(t, pvGraph(t, mock2...), nil, reshard.ScaleGoal{Target: 4, Method: reshard.MethodSplits}), PreviewOptions{Theme: NewTheme(false)}},
		{"scale-splits-wide.txt", pvPlan(t, pvGraph(t, mock2...), nil, reshard.ScaleGoal{Target: 4, Method: reshard.MethodSplits}), PreviewOptions{Theme: NewTheme(false), Wide: true}},
		// No boundary in common: merges of shards the plan made, named by range.
		{"scale-splits-merges.txt", pvPlan(t, pvGraph(t, pvEven(t, 4)...), nil, reshard.ScaleGoal{Target: 5, Method: reshard.MethodSplits}), PreviewOptions{Theme: NewTheme(false)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Preview(&buf, c.plan, c.o); err != nil {
				t.Fatal(err)
			}
			plain := !strings.HasSuffix(c.name, ".ansi")
			if plain == strings.Contains(buf.String(), "\x1b[") {
				t.Fatalf("colour codes present: %v", !plain)
			}
			previewGolden(t, c.name, buf.Bytes())
		})
	}
}

func TestLayoutMarksNewShards(t *testing.T) {
	two := pvEven(t, 2)
	before := []reshard.Slot{{ID: "shardId-000000000000", Range: two[0]}, {ID: "shardId-000000000001", Range: two[1]}}
	q := pvKey("255211775190703847597530955573826158592")
	after := []reshard.Slot{before[0], {ID: "shardId-000000000002", Range: lineage.HashRange{Start: two[1].Start, End: pvSub(q, 1)}}, {ID: "shardId-000000000003", Range: lineage.HashRange{Start: q, End: lineage.MaxHashKey}}}
	var buf bytes.Buffer
	if err := Layout(&buf, after, LayoutOptions{PreviewOptions: PreviewOptions{Theme: NewTheme(false)}, Before: before}); err != nil {
		t.Fatal(err)
	}
	want := `   SHARD                 HASH RANGE                 SHARE
   shardId-000000000000  0 – 170141…5727            50%
+  shardId-000000000002  170141…5728 – 255211…8591  25%
+  shardId-000000000003  255211…8592 – 340282…1455  25%
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestShareAndKeyText(t *testing.T) {
	for f, want := range map[float64]string{1: "100%", 0.5: "50%", 1.0 / 3: "33.33%", 0.999999: "99.9999%", 0: "0%", 1e-7: "1e-05%", 0.25: "25%"} {
		if got := FormatShare(f); got != want {
			t.Errorf("FormatShare(%v) = %s, want %s", f, got, want)
		}
	}
	for k, want := range map[string]string{"0": "0", "123456789012": "123456789012", "1234567890123": "123456…0123", "340282366920938463463374607431768211455": "340282…1455"} {
		if got := ShortKey(pvKey(k)); got != want {
			t.Errorf("ShortKey(%s) = %s, want %s", k, got, want)
		}
	}
}
