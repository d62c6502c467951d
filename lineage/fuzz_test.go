package lineage

import (
	"errors"
	"math/big"
	"regexp"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

var canonicalDecimal = regexp.MustCompile(`^(0|[1-9][0-9]{0,38})$`)

func FuzzParseHashKey(f *testing.F) {
	for _, s := range []string{"0", "1", "01", "-1", "+1", " 1", "1.0", "", dec2p64m1, dec2p64, dec2p127, dec2p128m1, dec2p128,
		"1000000000000000000000000000000000000000", "١", "99999999999999999999999999999999999999", "10000000000000000000"} {
		f.Add(s)
	}
	maxBig := MaxHashKey.Big()
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseHashKey(s)
		// Reference: the wire grammar, then the value bound, in math/big.
		want := canonicalDecimal.MatchString(s)
		if want {
			b, _ := new(big.Int).SetString(s, 10)
			want = b.Cmp(maxBig) <= 0
		}
		if (err == nil) != want {
			t.Fatalf("ParseHashKey(%q) = %v, %v; reference says valid=%v", s, k, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrBadHashKey) || k != (HashKey{}) {
				t.Fatalf("ParseHashKey(%q): %v, %v", s, k, err)
			}
			return
		}
		if k.String() != s || k.Big().String() != s {
			t.Fatalf("round trip of %q: String %s, Big %s", s, k, k.Big())
		}
		var u HashKey
		if err := u.UnmarshalText([]byte(s)); err != nil || u != k {
			t.Fatalf("UnmarshalText(%q) = %v, %v", s, u, err)
		}
	})
}

// FuzzHashKeyArith checks the 128-bit arithmetic against math/big.
func FuzzHashKeyArith(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0), uint64(1), uint64(1))
	f.Add(^uint64(0), ^uint64(0), uint64(0), uint64(1), uint64(1))
	f.Add(uint64(1), uint64(0), uint64(0), ^uint64(0), uint64(10))
	f.Add(uint64(1)<<63, uint64(0), uint64(1)<<63, uint64(0), ^uint64(0))
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	wrap := func(b *big.Int) *big.Int { return b.Mod(b, two128) }
	f.Fuzz(func(t *testing.T, ahi, alo, bhi, blo, n uint64) {
		a, b := HashKey{ahi, alo}, HashKey{bhi, blo}
		A, B, N := a.Big(), b.Big(), new(big.Int).SetUint64(n)
		if a.String() != A.String() {
			t.Fatalf("String %s != %s", a, A)
		}
		if a.Cmp(b) != A.Cmp(B) {
			t.Fatalf("Cmp(%s,%s) = %d", a, b, a.Cmp(b))
		}
		check := func(op string, got HashKey, flag bool, exact *big.Int) {
			t.Helper()
			wantFlag := exact.Sign() < 0 || exact.Cmp(two128) >= 0
			if want := wrap(exact); got.Big().Cmp(want) != 0 || flag != wantFlag {
				t.Fatalf("%s(%s, %s/%d) = %s, %v; want %s, %v", op, a, b, n, got, flag, want, wantFlag)
			}
		}
		s, o := a.Add(b)
		check("Add", s, o, new(big.Int).Add(A, B))
		s, o = a.Sub(b)
		check("Sub", s, o, new(big.Int).Sub(A, B))
		s, o = a.Add64(n)
		check("Add64", s, o, new(big.Int).Add(A, N))
		s, o = a.Sub64(n)
		check("Sub64", s, o, new(big.Int).Sub(A, N))
		r := HashRange{minKey(a, b), maxKey(a, b)}
		if got, want := r.Fraction(), refFraction(r); got != want {
			t.Fatalf("Fraction(%v) = %v, want %v", r, got, want)
		}
	})
}

// listingFromBytes turns fuzz bytes into a listing: 5 bytes a shard, with
// ids, parents and keys drawn from small pools so that they collide, link,
// overlap and, now and then, are missing or malformed. Most byte values give
// valid shards, so that most inputs build and the invariants get checked.
func listingFromBytes(data []byte) []types.Shard {
	ids := []string{sid(0), sid(1), sid(2), sid(3), sid(4), sid(5), sid(6), sid(7), sid(8), sid(10), "shardId-9", "custom"}
	keys := []string{"0", "1", "5", "100", dec2p64m1, dec2p64, dec2p126, dec2p127m1, dec2p127, dec2p128m1}
	bad := []string{"01", "", "-1", dec2p128}
	id := func(x byte) *string {
		switch x &= 0x1f; x {
		case 30:
			return aws.String("")
		case 31:
			return nil
		}
		return aws.String(ids[int(x)%len(ids)])
	}
	parent := func(x byte) *string {
		switch x &= 0x1f; {
		case x < 12:
			return aws.String(ids[x])
		case x == 12:
			return aws.String("")
		case x == 13:
			return aws.String("shardId-000000000099") // never listed: trimmed
		}
		return nil
	}
	var out []types.Shard
	for len(data) >= 5 && len(out) < 48 {
		b := data[:5]
		data = data[5:]
		s := types.Shard{ShardId: id(b[0]), ParentShardId: parent(b[1]), AdjacentParentShardId: parent(b[2])}
		i, j := int(b[3]&0x0f)%len(keys), int(b[3]>>4)%len(keys)
		start, end := keys[min(i, j)], keys[max(i, j)] // the pool is sorted
		s.HashKeyRange = &types.HashKeyRange{StartingHashKey: aws.String(start), EndingHashKey: aws.String(end)}
		switch flags := b[4]; flags >> 4 {
		case 15:
			s.HashKeyRange = nil
		case 14:
			s.HashKeyRange.StartingHashKey = aws.String(bad[int(flags)%len(bad)])
		case 13:
			s.HashKeyRange.EndingHashKey = nil
		case 12:
			s.HashKeyRange.StartingHashKey, s.HashKeyRange.EndingHashKey = s.HashKeyRange.EndingHashKey, s.HashKeyRange.StartingHashKey
		case 11:
			// no SequenceNumberRange at all: counts as open
		default:
			s.SequenceNumberRange = &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}
			if flags&1 != 0 {
				s.SequenceNumberRange.EndingSequenceNumber = aws.String("2")
			}
		}
		out = append(out, s)
	}
	return out
}

// hasCycle is a plain depth-first search over the listed parent links.
func hasCycle(listed []types.Shard) bool {
	parents := map[string][]string{}
	for _, s := range listed {
		for _, p := range []*string{s.ParentShardId, s.AdjacentParentShardId} {
			if p != nil && *p != "" {
				parents[*s.ShardId] = append(parents[*s.ShardId], *p)
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(string) bool
	visit = func(id string) bool {
		switch color[id] {
		case grey:
			return true
		case black:
			return false
		}
		color[id] = grey
		for _, p := range parents[id] {
			if visit(p) {
				return true
			}
		}
		color[id] = black
		return false
	}
	for id := range parents {
		if visit(id) {
			return true
		}
	}
	return false
}

var buildErrors = []error{ErrMissingShardID, ErrDuplicateShardID, ErrBadHashKey, ErrBadHashRange, ErrSelfParent, ErrDuplicateParent, ErrCycle}

func FuzzBuild(f *testing.F) {
	// Seeds: a split, a merge, a cycle, a trimmed parent, a self parent, a
	// missing id, a bad key.
	f.Add([]byte{0, 16, 16, 0x80, 1, 1, 0, 16, 0x50, 0, 2, 0, 16, 0x86, 0})
	f.Add([]byte{0, 16, 16, 0x50, 1, 1, 16, 16, 0x86, 1, 2, 0, 1, 0x80, 0})
	f.Add([]byte{0, 1, 16, 0x80, 1, 1, 0, 16, 0x80, 1})
	f.Add([]byte{1, 17, 16, 0x50, 0, 2, 17, 16, 0x86, 0})
	f.Add([]byte{3, 3, 16, 0x80, 0})
	f.Add([]byte{13, 16, 16, 0x80, 0})
	f.Add([]byte{0, 16, 16, 0x80, 8})
	f.Add([]byte{0, 16, 16, 0x80, 1, 1, 0, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		listed := listingFromBytes(data)
		g, err := Build(listed)
		if err != nil {
			kind := -1
			for i, e := range buildErrors {
				if errors.Is(err, e) {
					kind = i
				}
			}
			if kind < 0 {
				t.Fatalf("Build error %q wraps none of the sentinels", err)
			}
			if errors.Is(err, ErrCycle) && !hasCycle(listed) {
				t.Fatalf("Build reports a cycle the listing does not have: %v", err)
			}
			return
		}
		if hasCycle(listed) {
			t.Fatal("Build accepted a cyclic listing")
		}
		checkInvariants(t, g, listed)
		// Determinism: the reversed listing gives the same order.
		rev := slices.Clone(listed)
		slices.Reverse(rev)
		g2, err := Build(rev)
		if err != nil {
			t.Fatalf("reversed listing: %v", err)
		}
		if a, b := shortIDs(g.Shards()), shortIDs(g2.Shards()); !slices.Equal(a, b) {
			t.Fatalf("order %q, reversed listing gives %q", a, b)
		}
		// The walks stay inside the graph and in topological order.
		pos := map[*Shard]int{}
		for i, s := range g.Shards() {
			pos[s] = i
		}
		for _, s := range g.Shards() {
			sub := g.Subtree(s.ID)
			if len(sub) == 0 || sub[0] != s {
				t.Fatalf("Subtree(%q) does not start with the shard", s.ID)
			}
			for _, list := range [][]*Shard{sub, g.Ancestors(s.ID), g.KeyPath(s.Range.Start)} {
				for i := 1; i < len(list); i++ {
					if pos[list[i-1]] >= pos[list[i]] {
						t.Fatalf("walk from %q out of order", s.ID)
					}
				}
			}
			for _, a := range g.Ancestors(s.ID) {
				if pos[a] >= pos[s] {
					t.Fatalf("ancestor %q after %q", a.ID, s.ID)
				}
			}
		}
		_ = g.CheckOpenCoverage()
	})
}

// rangesFromBytes makes up to 32 ranges, 4 bytes each, with ends near the
// interesting keys so that gaps and overlaps of a few keys are common.
func rangesFromBytes(data []byte) []HashRange {
	bases := []HashKey{{}, HashKeyFromUint64(10), {1, 0}, {1 << 63, 0}, MaxHashKey, HashKeyFromUint64(100), {1<<63 - 1, ^uint64(0)}, {0, ^uint64(0)}}
	key := func(b, off byte) HashKey {
		k := bases[int(b)%len(bases)]
		d := int(off%7) - 3
		if d >= 0 {
			if r, over := k.Add64(uint64(d)); !over {
				return r
			}
			return MaxHashKey
		}
		if r, under := k.Sub64(uint64(-d)); !under {
			return r
		}
		return HashKey{}
	}
	var out []HashRange
	for len(data) >= 4 && len(out) < 32 {
		out = append(out, HashRange{key(data[0], data[1]), key(data[2], data[3])})
		data = data[4:]
	}
	return out
}

// bruteCoverage counts, on each elementary interval between the ranges' edges,
// how many ranges hold it, in math/big; it returns the maximal runs held by
// none and by more than one.
func bruteCoverage(ranges []HashRange) (gaps, overlaps []HashRange) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	one := big.NewInt(1)
	type span struct{ s, e *big.Int } // [s, e)
	var valid []span
	edges := []*big.Int{new(big.Int), two128}
	for _, r := range ranges {
		if r.IsEmpty() {
			continue
		}
		s, e := r.Start.Big(), new(big.Int).Add(r.End.Big(), one)
		valid = append(valid, span{s, e})
		edges = append(edges, s, e)
	}
	slices.SortFunc(edges, func(a, b *big.Int) int { return a.Cmp(b) })
	edges = slices.CompactFunc(edges, func(a, b *big.Int) bool { return a.Cmp(b) == 0 })
	add := func(list []HashRange, s, e *big.Int) []HashRange {
		start, _ := HashKeyFromBig(s)
		end, _ := HashKeyFromBig(new(big.Int).Sub(e, one))
		if n := len(list); n > 0 {
			if next, over := list[n-1].End.Add64(1); !over && next == start {
				list[n-1].End = end
				return list
			}
		}
		return append(list, HashRange{start, end})
	}
	for i := 0; i+1 < len(edges); i++ {
		s, e := edges[i], edges[i+1]
		n := 0
		for _, v := range valid {
			if v.s.Cmp(s) <= 0 && e.Cmp(v.e) <= 0 {
				n++
			}
		}
		switch {
		case n == 0:
			gaps = add(gaps, s, e)
		case n > 1:
			overlaps = add(overlaps, s, e)
		}
	}
	return gaps, overlaps
}

func FuzzCoverage(f *testing.F) {
	f.Add([]byte{0, 3, 4, 3})                         // the whole space
	f.Add([]byte{0, 3, 3, 2, 3, 3, 4, 3})             // two halves
	f.Add([]byte{0, 3, 3, 2, 3, 4, 4, 3})             // a one-key gap
	f.Add([]byte{0, 3, 3, 3, 3, 3, 4, 3})             // a one-key overlap
	f.Add([]byte{4, 3, 0, 3})                         // inverted
	f.Add([]byte{})                                   // nothing
	f.Add([]byte{0, 3, 4, 3, 0, 3, 4, 3, 1, 0, 5, 6}) // triple cover
	f.Fuzz(func(t *testing.T, data []byte) {
		ranges := rangesFromBytes(data)
		before := slices.Clone(ranges)
		err := CheckCoverage(ranges)
		if !slices.Equal(ranges, before) {
			t.Fatal("CheckCoverage modified its input")
		}
		gaps, overlaps := bruteCoverage(ranges)
		if gaps == nil && overlaps == nil {
			if err != nil {
				t.Fatalf("CheckCoverage(%v) = %v, brute force says it tiles", ranges, err)
			}
			return
		}
		var ce *CoverageError
		if !errors.As(err, &ce) {
			t.Fatalf("CheckCoverage(%v) = %v, brute force: gaps %v overlaps %v", ranges, err, gaps, overlaps)
		}
		if !slices.Equal(ce.Gaps, gaps) || !slices.Equal(ce.Overlaps, overlaps) {
			t.Fatalf("CheckCoverage(%v):\n gaps %v overlaps %v\nbrute force:\n gaps %v overlaps %v", ranges, ce.Gaps, ce.Overlaps, gaps, overlaps)
		}
	})
}

func FuzzKeyAtPercent(f *testing.F) {
	f.Add(uint64(0), uint64(0), ^uint64(0), ^uint64(0), "50", int64(0), uint64(0))
	f.Add(uint64(0), uint64(10), uint64(0), uint64(13), "99.999", int64(0), uint64(0))
	f.Add(uint64(5), uint64(7), uint64(5), uint64(7), "0.0001", int64(0), uint64(0))
	f.Add(uint64(0), uint64(0), uint64(1)<<63-1, ^uint64(0), "33.3333333333333333333333333333333", int64(0), uint64(0))
	f.Add(uint64(0), uint64(10), uint64(0), uint64(20), "x", int64(-3), uint64(1))
	f.Add(uint64(0), uint64(10), uint64(0), uint64(20), "x", int64(300), uint64(2))
	hundred := big.NewRat(100, 1)
	f.Fuzz(func(t *testing.T, shi, slo, ehi, elo uint64, pct string, num int64, den uint64) {
		r := HashRange{HashKey{shi, slo}, HashKey{ehi, elo}}
		if r.IsEmpty() {
			r.Start, r.End = r.End, r.Start
		}
		p, err := ParsePercent(pct)
		if err != nil {
			if !errors.Is(err, ErrBadPercent) {
				t.Fatalf("ParsePercent(%q): %v", pct, err)
			}
			// Any rational, in or out of (0, 100).
			p = new(big.Rat).SetFrac(big.NewInt(num), new(big.Int).SetUint64(den%1_000_000+1))
		} else if p.Sign() <= 0 || p.Cmp(hundred) >= 0 {
			t.Fatalf("ParsePercent(%q) = %s, outside (0, 100)", pct, p)
		}
		k := r.KeyAtPercent(p)
		if !r.Contains(k) {
			t.Fatalf("KeyAtPercent(%v, %s) = %s, outside the range", r, p, k)
		}
		// Reference: clamp, then Start + floor(width*p/100) in math/big.
		var want *big.Int
		switch {
		case p.Sign() <= 0:
			want = r.Start.Big()
		case p.Cmp(hundred) >= 0:
			want = r.End.Big()
		default:
			q := new(big.Rat).Mul(new(big.Rat).SetInt(r.Width()), p)
			q.Quo(q, hundred)
			want = new(big.Int).Quo(q.Num(), q.Denom())
			want.Add(want, r.Start.Big())
		}
		if k.Big().Cmp(want) != 0 {
			t.Fatalf("KeyAtPercent(%v, %s) = %s, want %s", r, p, k, want)
		}
		if p.Cmp(big.NewRat(50, 1)) == 0 && r.Midpoint() != k {
			t.Fatalf("Midpoint(%v) = %s, KeyAtPercent(50) = %s", r, r.Midpoint(), k)
		}
	})
}
