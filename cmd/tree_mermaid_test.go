package cmd

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// splitTree is a stream whose whole-space shard was split in halves, and
// each half again, depth times: 2^(depth+1)-2 edges.
func splitTree(t *testing.T, depth int) *lineage.Graph {
	t.Helper()
	var listed []types.Shard
	var add func(i, d int, start *big.Int)
	add = func(i, d int, start *big.Int) {
		width := new(big.Int).Lsh(big.NewInt(1), uint(128-d))
		end := new(big.Int).Sub(new(big.Int).Add(start, width), big.NewInt(1))
		s := types.Shard{ShardId: aws.String(fmt.Sprintf("shardId-%012d", i)),
			HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(start.String()), EndingHashKey: aws.String(end.String())},
			SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if i > 0 {
			s.ParentShardId = aws.String(fmt.Sprintf("shardId-%012d", (i-1)/2))
		}
		if d < depth {
			s.SequenceNumberRange.EndingSequenceNumber = aws.String("2")
			add(2*i+1, d+1, start)
			add(2*i+2, d+1, new(big.Int).Add(start, new(big.Int).Rsh(width, 1)))
		}
		listed = append(listed, s)
	}
	add(0, 0, new(big.Int))
	g, err := lineage.Build(listed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTreeMermaidWarnsBeyondMermaidsLimits(t *testing.T) {
	deep := splitTree(t, 8) // 510 edges
	open := map[string]bool{}
	for _, s := range deep.Open() {
		open[s.ID] = true
	}
	cases := []struct {
		name string
		l    *render.Lineage
		warn string
	}{
		{"small", &render.Lineage{Stream: "s", Graph: splitTree(t, 3)}, ""},
		{"510 edges", &render.Lineage{Stream: "s", Graph: deep}, "warning: this diagram has 510 edges and "},
		{"its open shards", &render.Lineage{Stream: "s", Graph: deep, Only: open, Filter: "open"}, ""},
	}
	for _, tc := range cases {
		ios, _, out, errOut := TestIO()
		f := NewFactory(ios)
		if err := writeLineage(f, tc.l, &TreeOptions{Output: "mermaid"}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "---\ntitle: ") {
			t.Fatalf("%s: stdout %.40q", tc.name, out.String())
		}
		got := errOut.String()
		switch {
		case tc.warn == "" && got != "":
			t.Fatalf("%s: stderr %q", tc.name, got)
		case tc.warn != "" && (!strings.HasPrefix(got, tc.warn) || !strings.HasSuffix(got, " characters; Mermaid's default configuration draws at most 500 edges (maxEdges) and 50,000 characters (maxTextSize), and GitHub cannot raise them, so it will not render there: show fewer shards with --open or --at TIMESTAMP\n")):
			t.Fatalf("%s: stderr %q", tc.name, got)
		}
	}
}
