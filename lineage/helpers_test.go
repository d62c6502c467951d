package lineage

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// sid is the service's id for shard n.
func sid(n int) string { return fmt.Sprintf("shardId-%012d", n) }

// listedShard builds one ListShards entry. parents are ParentShardId then
// AdjacentParentShardId; a closed shard gets an EndingSequenceNumber.
func listedShard(id string, r HashRange, open bool, parents ...string) types.Shard {
	s := types.Shard{
		ShardId: aws.String(id),
		HashKeyRange: &types.HashKeyRange{
			StartingHashKey: aws.String(r.Start.String()),
			EndingHashKey:   aws.String(r.End.String()),
		},
		SequenceNumberRange: &types.SequenceNumberRange{
			StartingSequenceNumber: aws.String("49590338271490256608559692538361571095921575989136588898"),
		},
	}
	if !open {
		s.SequenceNumberRange.EndingSequenceNumber = aws.String("49590338271512557353758223161503106814194224350642569218")
	}
	if len(parents) > 0 {
		s.ParentShardId = aws.String(parents[0])
	}
	if len(parents) > 1 {
		s.AdjacentParentShardId = aws.String(parents[1])
	}
	return s
}

// genHistory returns a shuffled listing of about n shards (n or n+1) grown
// from one whole-space shard by random splits (at random points) and merges
// of adjacent open shards, numbered the way the service numbers them.
func genHistory(n int, seed uint64) []types.Shard {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type live struct {
		id  int
		rng HashRange
	}
	out := []types.Shard{listedShard(sid(0), WholeSpace, true)}
	open := []live{{0, WholeSpace}}
	closeShard := func(id int) {
		out[id].SequenceNumberRange.EndingSequenceNumber = aws.String(fmt.Sprint(1000 + id))
	}
	for len(out) < n {
		i := r.IntN(len(open))
		w := open[i].rng.Width()
		merge := len(open) >= 2 && (n-len(out) == 1 || r.IntN(10) < 4 || w.Cmp(big.NewInt(4)) < 0)
		if !merge {
			p := open[i]
			k := p.rng.KeyAtPercent(big.NewRat(int64(1+r.IntN(98)), 1))
			if lo, _ := p.rng.Start.Add64(2); k.Cmp(lo) < 0 {
				k = lo // the service's rule: Start+2 <= k <= End-1
			}
			loEnd, _ := k.Sub64(1)
			a, b := live{len(out), HashRange{p.rng.Start, loEnd}}, live{len(out) + 1, HashRange{k, p.rng.End}}
			out = append(out, listedShard(sid(a.id), a.rng, true, sid(p.id)), listedShard(sid(b.id), b.rng, true, sid(p.id)))
			closeShard(p.id)
			open = slices.Replace(open, i, i+1, a, b)
			continue
		}
		if i == len(open)-1 {
			i--
		}
		lo, hi := open[i], open[i+1]
		c := live{len(out), HashRange{lo.rng.Start, hi.rng.End}}
		out = append(out, listedShard(sid(c.id), c.rng, true, sid(lo.id), sid(hi.id)))
		closeShard(lo.id)
		closeShard(hi.id)
		open = slices.Replace(open, i, i+2, c)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// shortIDs maps shards to their short ids, for compact expectations.
func shortIDs(ss []*Shard) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = ShortID(s.ID)
	}
	return out
}

// checkInvariants asserts what must hold for every graph Build returns from
// listed, whatever the listing: every id once, parents before children,
// parent and child lists mirror each other and match the listing, trimmed
// shards are exactly the unlisted parents, depths and children are ordered
// as documented.
func checkInvariants(t testing.TB, g *Graph, listed []types.Shard) {
	t.Helper()
	all := g.Shards()
	if len(all) != g.Len() {
		t.Fatalf("Shards() has %d, Len() = %d", len(all), g.Len())
	}
	at := make(map[string]int, len(all))
	for i, s := range all {
		if _, dup := at[s.ID]; dup {
			t.Fatalf("shard %q appears twice in Shards()", s.ID)
		}
		at[s.ID] = i
		if g.Shard(s.ID) != s {
			t.Fatalf("Shard(%q) is not the shard in Shards()", s.ID)
		}
	}
	byID := make(map[string]*types.Shard, len(listed))
	for i := range listed {
		byID[*listed[i].ShardId] = &listed[i]
	}
	epochs := 0
	for i, s := range all {
		ls, isListed := byID[s.ID]
		if isListed == (s.State == StateTrimmed) {
			t.Fatalf("shard %q: listed=%v but state %v", s.ID, isListed, s.State)
		}
		if isListed {
			var want []string
			for _, p := range []*string{ls.ParentShardId, ls.AdjacentParentShardId} {
				if p != nil && *p != "" {
					want = append(want, *p)
				}
			}
			if !slices.Equal(s.Parents, want) {
				t.Fatalf("shard %q: parents %q, listing says %q", s.ID, s.Parents, want)
			}
			wantState := StateOpen
			if ls.SequenceNumberRange != nil && aws.ToString(ls.SequenceNumberRange.EndingSequenceNumber) != "" {
				wantState = StateClosed
			}
			if s.State != wantState {
				t.Fatalf("shard %q: state %v, want %v", s.ID, s.State, wantState)
			}
			if s.Range.Start.String() != *ls.HashKeyRange.StartingHashKey || s.Range.End.String() != *ls.HashKeyRange.EndingHashKey {
				t.Fatalf("shard %q: range %v, listing %s..%s", s.ID, s.Range, *ls.HashKeyRange.StartingHashKey, *ls.HashKeyRange.EndingHashKey)
			}
		} else if len(s.Parents) != 0 || len(s.Children) == 0 || s.Range != (HashRange{}) || s.StartingSequenceNumber != "" {
			t.Fatalf("trimmed shard %q: %+v", s.ID, *s)
		}
		depth := 0
		for _, p := range s.Parents {
			j, ok := at[p]
			if !ok || j >= i {
				t.Fatalf("parent %q of %q is at %d, child at %d (ok=%v)", p, s.ID, j, i, ok)
			}
			if !slices.Contains(all[j].Children, s.ID) {
				t.Fatalf("parent %q does not list child %q", p, s.ID)
			}
			depth = max(depth, all[j].Depth+1)
		}
		if s.Depth != depth {
			t.Fatalf("shard %q: depth %d, want %d", s.ID, s.Depth, depth)
		}
		epochs = max(epochs, depth+1)
		for k, c := range s.Children {
			j, ok := at[c]
			if !ok || j <= i {
				t.Fatalf("child %q of %q at %d, parent at %d", c, s.ID, j, i)
			}
			if !slices.Contains(all[j].Parents, s.ID) {
				t.Fatalf("child %q does not list parent %q", c, s.ID)
			}
			if k > 0 {
				prev := all[at[s.Children[k-1]]]
				if c := prev.Range.Start.Cmp(all[j].Range.Start); c > 0 || c == 0 && CompareShardIDs(prev.ID, all[j].ID) >= 0 {
					t.Fatalf("children of %q out of order: %q", s.ID, s.Children)
				}
			}
		}
		if len(s.Parents) != cap(s.Parents) || len(s.Children) != cap(s.Children) {
			t.Fatalf("shard %q: parent/child slices not capped", s.ID)
		}
	}
	if g.Epochs() != epochs {
		t.Fatalf("Epochs = %d, want %d", g.Epochs(), epochs)
	}
}
