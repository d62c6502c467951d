package render

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// treeGolden compares got with testdata/tree/name (-update rewrites it). A
// name ending in .gz is stored gzipped and compared unzipped.
func treeGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "tree", name), got)
}

// Keys of the hand-built histories (AWS's even layouts, docs/KINESIS-NOTES.md §2).
var (
	linKeyQ  = linHashKey("85070591730234615865843651857942052864")  // 2^126
	linKeyH  = linHashKey("170141183460469231731687303715884105728") // 2^127
	linKeyT1 = linHashKey("113427455640312821154458202477256070485") // second start of 3 shards
	linKeyT2 = linHashKey("226854911280625642308916404954512140970") // third start
	linWhole = lineage.WholeSpace
)

func linHashKey(s string) lineage.HashKey {
	k, err := lineage.ParseHashKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func linBelow(k lineage.HashKey) lineage.HashKey { p, _ := k.Sub64(1); return p }

func linRange(a, b lineage.HashKey) lineage.HashRange { return lineage.HashRange{Start: a, End: b} }

func linSID(n int) string { return fmt.Sprintf("shardId-%012d", n) }

// seqStart and seqEnd are realistic, distinct sequence numbers of shard n.
func linSeqStart(n int) string {
	return fmt.Sprintf("4959033827149025660855969253836157109592157598913%07d", n*2)
}
func linSeqEnd(n int) string {
	return fmt.Sprintf("4959033827151255735375822316150310681419422435064%07d", n*2+1)
}

// listed builds one ListShards entry; parents are ParentShardId then
// AdjacentParentShardId.
func linListed(n int, r lineage.HashRange, open bool, parents ...int) types.Shard {
	s := types.Shard{
		ShardId:             aws.String(linSID(n)),
		HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(r.Start.String()), EndingHashKey: aws.String(r.End.String())},
		SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String(linSeqStart(n))},
	}
	if !open {
		s.SequenceNumberRange.EndingSequenceNumber = aws.String(linSeqEnd(n))
	}
	if len(parents) > 0 {
		s.ParentShardId = aws.String(linSID(parents[0]))
	}
	if len(parents) > 1 {
		s.AdjacentParentShardId = aws.String(linSID(parents[1]))
	}
	return s
}

// history is a hand-built listing.
type linHistory struct {
	name    string
	listing []types.Shard
}

// The partition key of the --key goldens: its MD5 starts 0x74, inside
// [2^126, 2^127) and [t1, 2^127), so its path crosses the merges.
const linGoldenKey = "customer-4"

func linHistories() []linHistory {
	h1 := linBelow(linKeyH)
	upd := []types.Shard{ // 2 -> 3 shards the way UpdateShardCount does it: two splits and a merge
		linListed(0, linRange(lineage.HashKey{}, h1), false),
		linListed(1, linRange(linKeyH, lineage.MaxHashKey), false),
		linListed(2, linRange(lineage.HashKey{}, linBelow(linKeyT1)), true, 0),
		linListed(3, linRange(linKeyT1, h1), false, 0),
		linListed(4, linRange(linKeyH, linBelow(linKeyT2)), false, 1),
		linListed(5, linRange(linKeyT2, lineage.MaxHashKey), true, 1),
		linListed(6, linRange(linKeyT1, linBelow(linKeyT2)), true, 3, 4),
	}
	return []linHistory{
		{"single-split", []types.Shard{
			linListed(0, linWhole, false),
			linListed(1, linRange(lineage.HashKey{}, h1), true, 0),
			linListed(2, linRange(linKeyH, lineage.MaxHashKey), true, 0),
		}},
		{"merge", []types.Shard{
			linListed(0, linRange(lineage.HashKey{}, h1), false),
			linListed(1, linRange(linKeyH, lineage.MaxHashKey), false),
			linListed(2, linWhole, true, 0, 1),
		}},
		{"split-merge-split", []types.Shard{
			linListed(0, linWhole, false),
			linListed(1, linRange(lineage.HashKey{}, h1), false, 0),
			linListed(2, linRange(linKeyH, lineage.MaxHashKey), false, 0),
			linListed(3, linWhole, false, 1, 2),
			linListed(4, linRange(lineage.HashKey{}, linBelow(linKeyQ)), true, 3),
			linListed(5, linRange(linKeyQ, lineage.MaxHashKey), true, 3),
		}},
		{"update-shard-count", upd},
		{"trimmed-root", []types.Shard{ // shard 0 is gone
			linListed(1, linRange(lineage.HashKey{}, h1), true, 0),
			linListed(2, linRange(linKeyH, lineage.MaxHashKey), true, 0),
		}},
		{"trimmed-merge-parent", []types.Shard{ // shard 0 is gone, 1 is not
			linListed(1, linRange(linKeyH, lineage.MaxHashKey), false),
			linListed(2, linWhole, true, 0, 1),
		}},
	}
}

func linBuild(t testing.TB, listing []types.Shard) *lineage.Graph {
	t.Helper()
	g, err := lineage.Build(listing)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func linDoc(g *lineage.Graph) *Lineage {
	return &Lineage{Stream: "orders", StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
		Status: "ACTIVE", Mode: "PROVISIONED", Graph: g}
}

func linOpenOnly(g *lineage.Graph) map[string]bool {
	m := map[string]bool{}
	for _, s := range g.Open() {
		m[s.ID] = true
	}
	return m
}

// linSynthHistory returns a shuffled listing of n shards (or n+1) grown from
// four shards by random splits and merges of adjacent open shards, ids
// numbered the way the service numbers them, and the oldest closed ones
// (among the first twentieth) trimmed by retention.
func linSynthHistory(n int, seed uint64) []types.Shard {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type live struct {
		id  int
		rng lineage.HashRange
	}
	layout, _ := lineage.EvenLayout(4)
	var out []types.Shard
	var open []live
	for i, rg := range layout {
		out = append(out, linListed(i, rg, true))
		open = append(open, live{i, rg})
	}
	closeShard := func(id int) {
		out[id].SequenceNumberRange.EndingSequenceNumber = aws.String(linSeqEnd(id))
	}
	for len(out) < n {
		i := r.IntN(len(open))
		w := open[i].rng.Width()
		merge := len(open) >= 2 && (n-len(out) == 1 || r.IntN(10) < 4 || w.Cmp(big.NewInt(4)) < 0)
		if !merge {
			p := open[i]
			k := p.rng.KeyAtPercent(big.NewRat(int64(1+r.IntN(98)), 1))
			if lo, _ := p.rng.Start.Add64(2); k.Cmp(lo) < 0 {
				k = lo
			}
			a, b := live{len(out), linRange(p.rng.Start, linBelow(k))}, live{len(out) + 1, linRange(k, p.rng.End)}
			out = append(out, linListed(a.id, a.rng, true, p.id), linListed(b.id, b.rng, true, p.id))
			closeShard(p.id)
			open = slices.Replace(open, i, i+1, a, b)
			continue
		}
		if i == len(open)-1 {
			i--
		}
		lo, hi := open[i], open[i+1]
		c := live{len(out), linRange(lo.rng.Start, hi.rng.End)}
		out = append(out, linListed(c.id, c.rng, true, lo.id, hi.id))
		closeShard(lo.id)
		closeShard(hi.id)
		open = slices.Replace(open, i, i+2, c)
	}
	// Retention trims the oldest closed shards, a shard only after its parents.
	trimmed := make([]bool, len(out))
	var kept []types.Shard
	for i, s := range out {
		if i < len(out)/20 && s.SequenceNumberRange.EndingSequenceNumber != nil {
			trimmed[i] = true
			for _, p := range []*string{s.ParentShardId, s.AdjacentParentShardId} {
				if p == nil {
					continue
				}
				var j int
				if _, err := fmt.Sscanf(*p, "shardId-%d", &j); err != nil || !trimmed[j] {
					trimmed[i] = false
				}
			}
		}
		if !trimmed[i] {
			kept = append(kept, s)
		}
	}
	r.Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
	return kept
}

var linGoldenAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
