package render

import (
	"io"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// The `tree` benchmarks: a synthetic 10,000-shard history (random splits
// and merges, trimmed roots) listed in id order as the service lists it,
// built into a graph and rendered, the whole path of `kinesis-shards tree`
// after the ListShards calls. docs/PERFORMANCE.md records the figures.

func linBench10000(b *testing.B) []types.Shard {
	listing := linSynthHistory(10000, 1)
	slices.SortFunc(listing, func(x, y types.Shard) int { return lineage.CompareShardIDs(*x.ShardId, *y.ShardId) })
	return listing
}

func linBenchFormat(b *testing.B, fn func(w io.Writer, l *Lineage) error) {
	listing := linBench10000(b)
	b.ReportAllocs()
	for b.Loop() {
		g, err := lineage.Build(listing)
		if err != nil {
			b.Fatal(err)
		}
		l := linDoc(g)
		l.Key = NewKeyMark(g, linGoldenKey)
		if err := fn(io.Discard, l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTree10000 is Build plus the plain tree (what a pipe gets).
func BenchmarkTree10000(b *testing.B) {
	linBenchFormat(b, func(w io.Writer, l *Lineage) error {
		return Tree(w, l.Graph, TreeOptions{KeyPath: l.keyPath()})
	})
}

// BenchmarkTree10000Color is the terminal tree: colour and short ids.
func BenchmarkTree10000Color(b *testing.B) {
	th := NewTheme(true)
	linBenchFormat(b, func(w io.Writer, l *Lineage) error {
		return Tree(w, l.Graph, TreeOptions{Theme: th, ShortIDs: true, KeyPath: l.keyPath()})
	})
}

func BenchmarkTree10000Wide(b *testing.B) {
	linBenchFormat(b, func(w io.Writer, l *Lineage) error {
		return Tree(w, l.Graph, TreeOptions{Wide: true, KeyPath: l.keyPath()})
	})
}

func BenchmarkTable10000(b *testing.B) {
	linBenchFormat(b, func(w io.Writer, l *Lineage) error { return LineageTable(w, l, TableOptions{}) })
}

func BenchmarkJSON10000(b *testing.B) { linBenchFormat(b, LineageJSON) }

func BenchmarkDot10000(b *testing.B) { linBenchFormat(b, LineageDot) }

func BenchmarkMermaid10000(b *testing.B) { linBenchFormat(b, LineageMermaid) }

// BenchmarkBuild10000 is the baseline the others include.
func BenchmarkBuild10000(b *testing.B) {
	listing := linBench10000(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lineage.Build(listing); err != nil {
			b.Fatal(err)
		}
	}
}
