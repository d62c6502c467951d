package lineage

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"
)

// HashRange is a contiguous run of hash keys, inclusive at both ends, as in
// the service's HashKeyRange. A range with Start > End is empty (Build never
// produces one).
type HashRange struct {
	Start HashKey `json:"start"`
	End   HashKey `json:"end"`
}

// WholeSpace is the range of every hash key, 0 .. 2^128-1.
var WholeSpace = HashRange{Start: HashKey{}, End: MaxHashKey}

// maxLayoutShards is the most shards EvenLayout builds: the service's limit
// for UpdateShardCount and for the shards of one stream.
const maxLayoutShards = 10000

// Contains reports whether k lies in r.
func (r HashRange) Contains(k HashKey) bool {
	return r.Start.Cmp(k) <= 0 && k.Cmp(r.End) <= 0
}

// IsEmpty reports whether r holds no key (Start > End).
func (r HashRange) IsEmpty() bool { return r.Start.Cmp(r.End) > 0 }

// String returns "start..end" in canonical decimals.
func (r HashRange) String() string { return r.Start.String() + ".." + r.End.String() }

// Width returns End-Start+1, the number of keys in r: 2^128 for the whole
// space, which is why it is a big.Int. An empty range has width 0.
func (r HashRange) Width() *big.Int {
	w, whole, ok := r.width()
	switch {
	case !ok:
		return new(big.Int)
	case whole:
		return new(big.Int).Lsh(big.NewInt(1), 128)
	}
	return w.Big()
}

// width returns End-Start+1 as a HashKey; whole is set when that is 2^128
// (which does not fit), ok is false for an empty range.
func (r HashRange) width() (w HashKey, whole, ok bool) {
	d, under := r.End.Sub(r.Start)
	if under {
		return HashKey{}, false, false
	}
	w, over := d.Add64(1)
	return w, over, true
}

// Fraction returns the share of the key space r covers, Width / 2^128. The
// division is by 2^128, not 2^128-1, so two halves are exactly 0.5 each and
// the whole space is exactly 1. The result is correctly rounded.
func (r HashRange) Fraction() float64 {
	w, whole, ok := r.width()
	switch {
	case !ok:
		return 0
	case whole:
		return 1
	}
	return math.Ldexp(toFloat64(w), -128) // exact: a power-of-two scale of a normal float
}

// toFloat64 converts k to the nearest float64 without math/big.
func toFloat64(k HashKey) float64 {
	if k.hi == 0 {
		return float64(k.lo) // Go rounds integer-to-float conversions to nearest
	}
	// Take the top 64 significant bits; fold every bit below them into bit 0
	// (a sticky bit) so that float64(m) rounds the way the exact value would.
	n := uint(bits.LeadingZeros64(k.hi))
	m, rest := k.hi, k.lo
	if n > 0 {
		m = k.hi<<n | k.lo>>(64-n)
		rest = k.lo << n
	}
	if rest != 0 {
		m |= 1
	}
	return math.Ldexp(float64(m), int(64-n))
}

var hundred = big.NewInt(100)

// KeyAtPercent returns Start + floor(Width × p / 100), computed exactly. For
// 0 < p < 100 the key lies in r; p is clamped to [0, 100) otherwise, so the
// result is always in r. A nil p means 50. The service's further rule for
// split points (Start+2 <= key <= End-1) is the caller's to check.
func (r HashRange) KeyAtPercent(p *big.Rat) HashKey {
	if r.IsEmpty() {
		return r.Start
	}
	if p == nil {
		return r.Midpoint()
	}
	if p.Sign() <= 0 {
		return r.Start
	}
	if p.Cmp(big.NewRat(100, 1)) >= 0 {
		return r.End
	}
	num := r.Width()
	num.Mul(num, p.Num())
	den := new(big.Int).Mul(p.Denom(), hundred)
	num.Quo(num, den) // both positive: Quo truncates, which is floor
	// num < Width <= 2^128, so it fits and Start+num <= End.
	off, err := HashKeyFromBig(num)
	if err != nil {
		return r.End // unreachable; never panic
	}
	k, _ := r.Start.Add(off)
	return k
}

// Midpoint returns Start + Width/2 (floor), the same key as KeyAtPercent(50):
// the exact half, so a whole-space shard splits at 2^127 like the service's
// two-shard layout. AWS's own samples use (Start+End)/2, which is one key
// lower when the width is even; see docs/KINESIS-NOTES.md §2.
func (r HashRange) Midpoint() HashKey {
	w, whole, ok := r.width()
	if !ok {
		return r.Start
	}
	half := HashKey{w.hi >> 1, w.lo>>1 | w.hi<<63}
	if whole {
		half = HashKey{hi: 1 << 63} // 2^128 / 2
	}
	k, _ := r.Start.Add(half)
	return k
}

// ParsePercent parses a split percentage: a plain decimal ("50", "33.5",
// "0.25") strictly between 0 and 100. Signs, exponents, fractions like "1/2"
// and a trailing "%" are refused: big.Rat would accept some of them, users
// would not expect it to. The error wraps ErrBadPercent.
func ParsePercent(s string) (*big.Rat, error) {
	if !isPlainDecimal(s) {
		return nil, newKindError(ErrBadPercent, "percentage "+quote(s)+" is not a decimal number such as 50 or 33.5")
	}
	p, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, newKindError(ErrBadPercent, "percentage "+quote(s)+" is not a decimal number such as 50 or 33.5")
	}
	if p.Sign() <= 0 || p.Cmp(big.NewRat(100, 1)) >= 0 {
		return nil, newKindError(ErrBadPercent, "percentage "+quote(s)+" is out of range: it must be greater than 0 and less than 100")
	}
	return p, nil
}

// isPlainDecimal matches [0-9]+(\.[0-9]+)? of a sane length.
func isPlainDecimal(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0:
			dot, digits = true, 0
		default:
			return false
		}
	}
	return digits > 0
}

// EvenLayout returns the ranges CreateStream gives a stream of n shards
// (seen on AWS; docs/KINESIS-NOTES.md §2): step = floor(2^128/n), shard i starts at
// i×step, each ends one before the next starts, and the last one runs to
// 2^128-1, taking the remainder. Note floor(i×2^128/n) is a different formula
// (it differs for n=6, i=2). n must be 1..10000; the error wraps ErrBadShardCount.
func EvenLayout(n int) ([]HashRange, error) {
	if n < 1 || n > maxLayoutShards {
		return nil, newKindError(ErrBadShardCount, fmt.Sprintf("shard count %d is out of range: an even layout has 1 to %d shards", n, maxLayoutShards))
	}
	if n == 1 {
		return []HashRange{WholeSpace}, nil // step would be 2^128, which does not fit
	}
	// floor(2^128/n) from (2^128-1) = q·n + rem: it is q+1 exactly when rem = n-1.
	d := uint64(n)
	qhi, r := math.MaxUint64/d, math.MaxUint64%d
	qlo, rem := bits.Div64(r, math.MaxUint64, d)
	step := HashKey{qhi, qlo}
	if rem == d-1 {
		step, _ = step.Add64(1)
	}
	out := make([]HashRange, n)
	var start HashKey
	for i := range out {
		next, _ := start.Add(step) // i·step < 2^128 for every i < n
		end, _ := next.Sub64(1)
		if i == n-1 {
			end = MaxHashKey
		}
		out[i] = HashRange{Start: start, End: end}
		start = next
	}
	return out, nil
}

// CoverageError says how a set of ranges fails to tile the key space: Gaps
// are the keys no range holds, Overlaps the keys two or more ranges hold.
// Both are sorted, disjoint and maximal (adjacent runs are joined).
type CoverageError struct {
	Gaps, Overlaps []HashRange
}

func (e *CoverageError) Error() string {
	var b strings.Builder
	b.WriteString("hash key ranges do not cover 0 .. 2^128-1 exactly once:")
	list := func(what string, rs []HashRange) {
		const show = 3
		fmt.Fprintf(&b, " %s ", what)
		for i, r := range rs {
			if i == show {
				fmt.Fprintf(&b, " and %d more", len(rs)-show)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.String())
		}
	}
	if len(e.Gaps) > 0 {
		list("no range holds", e.Gaps)
	}
	if len(e.Gaps) > 0 && len(e.Overlaps) > 0 {
		b.WriteString(";")
	}
	if len(e.Overlaps) > 0 {
		list("more than one range holds", e.Overlaps)
	}
	return b.String()
}

// CheckCoverage reports whether ranges tile the whole key space exactly once,
// in any order (the caller's slice is not modified). It returns nil or a
// *CoverageError. Empty ranges (Start > End) hold no keys; no ranges at all is
// one gap of the whole space.
func CheckCoverage(ranges []HashRange) error {
	sorted := make([]HashRange, 0, len(ranges))
	for _, r := range ranges {
		if !r.IsEmpty() {
			sorted = append(sorted, r)
		}
	}
	slices.SortFunc(sorted, func(a, b HashRange) int {
		return cmp.Or(a.Start.Cmp(b.Start), a.End.Cmp(b.End))
	})
	var (
		e       CoverageError
		next    HashKey // first key not yet covered by the ranges swept so far
		covered HashKey // highest key covered so far (valid when seen)
		seen    bool
		done    bool // covered reached 2^128-1
	)
	for _, r := range sorted {
		if !done && r.Start.Cmp(next) > 0 {
			end, _ := r.Start.Sub64(1)
			e.Gaps = append(e.Gaps, HashRange{next, end})
		}
		if seen && r.Start.Cmp(covered) <= 0 {
			// Every key of r up to `covered` lies in an earlier range too, since
			// earlier ranges start no later than r.
			o := HashRange{r.Start, minKey(r.End, covered)}
			if n := len(e.Overlaps); n > 0 && adjacentOrOverlapping(e.Overlaps[n-1], o) {
				e.Overlaps[n-1].End = maxKey(e.Overlaps[n-1].End, o.End)
			} else {
				e.Overlaps = append(e.Overlaps, o)
			}
		}
		if !seen || r.End.Cmp(covered) > 0 {
			covered, seen = r.End, true
		}
		var over bool
		next, over = covered.Add64(1)
		done = done || over
	}
	if !done {
		e.Gaps = append(e.Gaps, HashRange{next, MaxHashKey})
	}
	if len(e.Gaps) == 0 && len(e.Overlaps) == 0 {
		return nil
	}
	return &e
}

// adjacentOrOverlapping reports whether b starts no later than one past a's
// end, given a.Start <= b.Start.
func adjacentOrOverlapping(a, b HashRange) bool {
	if a.End == MaxHashKey {
		return true
	}
	after, _ := a.End.Add64(1)
	return b.Start.Cmp(after) <= 0
}

func minKey(a, b HashKey) HashKey {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b HashKey) HashKey {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}
