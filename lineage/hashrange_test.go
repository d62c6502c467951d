package lineage

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"testing"
)

func rng(t testing.TB, start, end string) HashRange {
	t.Helper()
	return HashRange{mustKey(t, start), mustKey(t, end)}
}

func TestHashRangeContainsWidth(t *testing.T) {
	tests := []struct {
		name       string
		r          HashRange
		width      string
		in, out    []string
		emptyRange bool
	}{
		{"whole", WholeSpace, dec2p128, []string{"0", dec2p127, dec2p128m1}, nil, false},
		{"single key", rng(t, "5", "5"), "1", []string{"5"}, []string{"4", "6"}, false},
		{"lower half", rng(t, "0", dec2p127m1), dec2p127, []string{"0", dec2p127m1}, []string{dec2p127}, false},
		{"across 2^64", rng(t, dec2p64m1, dec2p64), "2", []string{dec2p64m1, dec2p64}, []string{"18446744073709551614", "18446744073709551617"}, false},
		{"inverted", rng(t, "10", "9"), "0", nil, []string{"9", "10"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Width().String(); got != tt.width {
				t.Errorf("Width = %s, want %s", got, tt.width)
			}
			if tt.r.IsEmpty() != tt.emptyRange {
				t.Errorf("IsEmpty = %v", tt.r.IsEmpty())
			}
			for _, k := range tt.in {
				if !tt.r.Contains(mustKey(t, k)) {
					t.Errorf("Contains(%s) = false", k)
				}
			}
			for _, k := range tt.out {
				if tt.r.Contains(mustKey(t, k)) {
					t.Errorf("Contains(%s) = true", k)
				}
			}
		})
	}
}

func TestHashRangeFraction(t *testing.T) {
	tests := []struct {
		name string
		r    HashRange
		want float64
	}{
		{"whole space", WholeSpace, 1},
		{"lower half", rng(t, "0", dec2p127m1), 0.5},
		{"upper half", rng(t, dec2p127, dec2p128m1), 0.5},
		{"quarter", rng(t, dec2p126, dec2p127m1), 0.25},
		{"one key", rng(t, "7", "7"), 0x1p-128},
		{"2^64 keys", rng(t, "0", dec2p64m1), 0x1p-64},
		{"empty", rng(t, "1", "0"), 0},
		// A third of the space: the width 113427455640312821154458202477256070485
		// rounds to the float64 nearest 1/3.
		{"first of three", rng(t, "0", "113427455640312821154458202477256070484"), 1.0 / 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Fraction(); got != tt.want {
				t.Errorf("Fraction = %v (%b), want %v (%b)", got, got, tt.want, tt.want)
			}
		})
	}
	// The even layouts' fractions sum to 1 within rounding, and each matches
	// the correctly rounded big.Float quotient.
	for _, n := range []int{2, 3, 6, 7, 1000} {
		layout, err := EvenLayout(n)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, r := range layout {
			f := r.Fraction()
			sum += f
			if ref := refFraction(r); f != ref {
				t.Fatalf("N=%d %v: Fraction = %v, big.Float says %v", n, r, f, ref)
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("N=%d: fractions sum to %v", n, sum)
		}
	}
}

// refFraction is Width/2^128 through big.Float, rounded once to float64.
func refFraction(r HashRange) float64 {
	f := new(big.Float).SetPrec(0).SetInt(r.Width()) // exact
	f.SetMantExp(f, -128)
	v, _ := f.Float64()
	return v
}

// The starting keys of the even layouts, as AWS creates them (docs/KINESIS-NOTES.md §2).
var awsEvenStarts = map[int][]string{
	2: {"0", "170141183460469231731687303715884105728"},
	3: {"0", "113427455640312821154458202477256070485", "226854911280625642308916404954512140970"},
	6: {"0", "56713727820156410577229101238628035242", "113427455640312821154458202477256070484",
		"170141183460469231731687303715884105726", "226854911280625642308916404954512140968",
		"283568639100782052886145506193140176210"},
	1: {"0"},
	4: {"0", dec2p126, dec2p127, "255211775190703847597530955573826158592"}, // multiples of 2^126
}

func TestEvenLayout(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			got, err := EvenLayout(n)
			if err != nil {
				t.Fatal(err)
			}
			want := awsEvenStarts[n]
			if len(got) != len(want) {
				t.Fatalf("%d ranges, want %d", len(got), len(want))
			}
			for i, r := range got {
				if r.Start.String() != want[i] {
					t.Errorf("start[%d] = %s, want %s", i, r.Start, want[i])
				}
				wantEnd := dec2p128m1
				if i+1 < len(want) {
					wantEnd = new(big.Int).Sub(bigOf(t, want[i+1]), big.NewInt(1)).String()
				}
				if r.End.String() != wantEnd {
					t.Errorf("end[%d] = %s, want %s", i, r.End, wantEnd)
				}
			}
			if err := CheckCoverage(got); err != nil {
				t.Errorf("CheckCoverage: %v", err)
			}
		})
	}
}

// TestEvenLayoutTrap pins the formula: step = floor(2^128/N), start = i*step,
// which for N=6, i=2 differs from floor(i*2^128/N) (docs/KINESIS-NOTES.md §2), and
// divides 2^128, not 2^128-1 (trap 2).
func TestEvenLayoutTrap(t *testing.T) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	trap := new(big.Int).Mul(big.NewInt(2), two128)
	trap.Quo(trap, big.NewInt(6))
	if trap.String() != "113427455640312821154458202477256070485" {
		t.Fatalf("floor(2*2^128/6) = %s; the trap value changed?", trap)
	}
	got, err := EvenLayout(6)
	if err != nil {
		t.Fatal(err)
	}
	if got[2].Start.Big().Cmp(trap) == 0 {
		t.Errorf("EvenLayout(6)[2].Start = %s: that is floor(i*2^128/N), not i*floor(2^128/N)", got[2].Start)
	}
	if got[2].Start.String() != "113427455640312821154458202477256070484" {
		t.Errorf("EvenLayout(6)[2].Start = %s", got[2].Start)
	}
	two, _ := EvenLayout(2)
	if two[0].End.String() != dec2p127m1 {
		t.Errorf("EvenLayout(2)[0].End = %s, want 2^127-1 (dividing 2^128-1 gives 2^127-2)", two[0].End)
	}
}

func TestEvenLayoutLarge(t *testing.T) {
	for _, n := range []int{5, 7, 1000, 9999, 10000} {
		got, err := EvenLayout(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("N=%d: %d ranges", n, len(got))
		}
		if err := CheckCoverage(got); err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
		// Each start against the formula in math/big.
		step := new(big.Int).Lsh(big.NewInt(1), 128)
		step.Quo(step, big.NewInt(int64(n)))
		for _, i := range []int{0, 1, n / 2, n - 1} {
			want := new(big.Int).Mul(step, big.NewInt(int64(i)))
			if got[i].Start.Big().Cmp(want) != 0 {
				t.Fatalf("N=%d start[%d] = %s, want %s", n, i, got[i].Start, want)
			}
		}
		// Every shard but the last has width step; the last takes the remainder.
		if w := got[0].Width(); w.Cmp(step) != 0 {
			t.Errorf("N=%d width[0] = %s, want %s", n, w, step)
		}
	}
}

func TestEvenLayoutRejects(t *testing.T) {
	for _, n := range []int{0, -1, 10001, math.MaxInt} {
		got, err := EvenLayout(n)
		if !errors.Is(err, ErrBadShardCount) || got != nil {
			t.Errorf("EvenLayout(%d) = %v, %v; want ErrBadShardCount", n, got, err)
		}
	}
	_, err := EvenLayout(0)
	if want := "shard count 0 is out of range: an even layout has 1 to 10000 shards"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestKeyAtPercent(t *testing.T) {
	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("bad rat %q", s)
		}
		return r
	}
	tests := []struct {
		name string
		r    HashRange
		p    *big.Rat
		want string
	}{
		{"50% of the whole space", WholeSpace, rat("50"), dec2p127},
		{"50% of the lower half", rng(t, "0", dec2p127m1), rat("50"), dec2p126},
		{"50% of the upper half", rng(t, dec2p127, dec2p128m1), rat("50"), "255211775190703847597530955573826158592"},
		{"25% of the whole space", WholeSpace, rat("25"), dec2p126},
		{"33.5% of 0..999", rng(t, "0", "999"), rat("33.5"), "335"},
		{"floor: 33.3% of 0..9", rng(t, "0", "9"), rat("33.3"), "3"},
		{"tiny: 50% of 4 keys", rng(t, "10", "13"), rat("50"), "12"},
		{"tiny: 50% of 3 keys", rng(t, "10", "12"), rat("50"), "11"},
		{"tiny: 99.9% of 2 keys", rng(t, "10", "11"), rat("99.9"), "11"},
		{"tiny: 0.1% of 1 key", rng(t, "7", "7"), rat("0.1"), "7"},
		{"99.999% of the whole space", WholeSpace, rat("99.999"), "340278964097269254078739973685693893773"},
		{"at 2^64", rng(t, dec2p64m1, dec2p64), rat("50"), dec2p64},
		{"clamped below", rng(t, "10", "20"), rat("-5"), "10"},
		{"clamped at 0", rng(t, "10", "20"), rat("0"), "10"},
		{"clamped at 100", rng(t, "10", "20"), rat("100"), "20"},
		{"clamped above", rng(t, "10", "20"), rat("250"), "20"},
		{"nil means 50", WholeSpace, nil, dec2p127},
		{"empty range", rng(t, "20", "10"), rat("50"), "20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.KeyAtPercent(tt.p); got.String() != tt.want {
				t.Errorf("KeyAtPercent = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMidpoint(t *testing.T) {
	tests := []struct {
		r    HashRange
		want string
	}{
		{WholeSpace, dec2p127},
		{rng(t, "0", dec2p127m1), dec2p126},
		{rng(t, "0", "0"), "0"},
		{rng(t, "0", "1"), "1"},
		{rng(t, "0", "2"), "1"},
		{rng(t, "5", "10"), "8"},
		{rng(t, dec2p64m1, dec2p64), dec2p64},
		{rng(t, dec2p128m1, dec2p128m1), dec2p128m1},
		{rng(t, "1", dec2p128m1), dec2p127}, // width 2^128-1: 1 + floor((2^128-1)/2)
	}
	fifty := big.NewRat(50, 1)
	for _, tt := range tests {
		t.Run(tt.r.String(), func(t *testing.T) {
			got := tt.r.Midpoint()
			if got.String() != tt.want {
				t.Errorf("Midpoint = %s, want %s", got, tt.want)
			}
			if kp := tt.r.KeyAtPercent(fifty); kp != got {
				t.Errorf("KeyAtPercent(50) = %s, Midpoint = %s", kp, got)
			}
		})
	}
	// Halving an even layout gives the even layout of twice as many shards.
	four, _ := EvenLayout(4)
	eight, _ := EvenLayout(8)
	for i, r := range four {
		if m := r.Midpoint(); m != eight[2*i+1].Start {
			t.Errorf("midpoint of %v = %s, want %s", r, m, eight[2*i+1].Start)
		}
	}
}

func TestParsePercent(t *testing.T) {
	good := []struct{ in, want string }{
		{"50", "50/1"},
		{"0.5", "1/2"},
		{"99.999", "99999/1000"},
		{"33.5", "67/2"},
		{"1", "1/1"},
		{"0.0001", "1/10000"},
		{"050", "50/1"},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePercent(tt.in)
			if err != nil {
				t.Fatalf("ParsePercent(%q): %v", tt.in, err)
			}
			if p.String() != tt.want {
				t.Errorf("ParsePercent(%q) = %s, want %s", tt.in, p, tt.want)
			}
		})
	}
	bad := []struct{ in, msg string }{
		{"0", `percentage "0" is out of range: it must be greater than 0 and less than 100`},
		{"0.000", `percentage "0.000" is out of range: it must be greater than 0 and less than 100`},
		{"100", `percentage "100" is out of range: it must be greater than 0 and less than 100`},
		{"100.0", `percentage "100.0" is out of range: it must be greater than 0 and less than 100`},
		{"250", `percentage "250" is out of range: it must be greater than 0 and less than 100`},
		{"-1", `percentage "-1" is not a decimal number such as 50 or 33.5`},
		{"+1", `percentage "+1" is not a decimal number such as 50 or 33.5`},
		{"abc", `percentage "abc" is not a decimal number such as 50 or 33.5`},
		{"1e2", `percentage "1e2" is not a decimal number such as 50 or 33.5`},
		{"", `percentage "" is not a decimal number such as 50 or 33.5`},
		{"50%", `percentage "50%" is not a decimal number such as 50 or 33.5`},
		{"1/2", `percentage "1/2" is not a decimal number such as 50 or 33.5`},
		{".5", `percentage ".5" is not a decimal number such as 50 or 33.5`},
		{"5.", `percentage "5." is not a decimal number such as 50 or 33.5`},
		{"1.2.3", `percentage "1.2.3" is not a decimal number such as 50 or 33.5`},
		{" 50", `percentage " 50" is not a decimal number such as 50 or 33.5`},
		{"５０", `percentage "５０" is not a decimal number such as 50 or 33.5`},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.in, func(t *testing.T) {
			p, err := ParsePercent(tt.in)
			if err == nil {
				t.Fatalf("ParsePercent(%q) = %v, want error", tt.in, p)
			}
			if !errors.Is(err, ErrBadPercent) {
				t.Errorf("error %v does not wrap ErrBadPercent", err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error = %q\nwant    %q", err, tt.msg)
			}
		})
	}
}

func TestCheckCoverage(t *testing.T) {
	halves, _ := EvenLayout(2)
	thirds, _ := EvenLayout(3)
	tests := []struct {
		name     string
		in       []HashRange
		gaps     []HashRange
		overlaps []HashRange
	}{
		{"single whole shard", []HashRange{WholeSpace}, nil, nil},
		{"two halves", halves, nil, nil},
		{"unordered thirds", []HashRange{thirds[2], thirds[0], thirds[1]}, nil, nil},
		{"empty input", nil, []HashRange{WholeSpace}, nil},
		{"only empty ranges", []HashRange{rng(t, "5", "4")}, []HashRange{WholeSpace}, nil},
		{"gap at the start", []HashRange{rng(t, "10", dec2p128m1)}, []HashRange{rng(t, "0", "9")}, nil},
		{"gap at the end", []HashRange{rng(t, "0", dec2p127)}, []HashRange{rng(t, "170141183460469231731687303715884105729", dec2p128m1)}, nil},
		{"gap in the middle", []HashRange{rng(t, dec2p127, dec2p128m1), rng(t, "0", "99")}, []HashRange{rng(t, "100", dec2p127m1)}, nil},
		{"one-key gap", []HashRange{rng(t, "0", "9"), rng(t, "11", dec2p128m1)}, []HashRange{rng(t, "10", "10")}, nil},
		{"overlap", []HashRange{rng(t, "0", "20"), rng(t, "10", dec2p128m1)}, nil, []HashRange{rng(t, "10", "20")}},
		{"one-key overlap", []HashRange{rng(t, "0", "10"), rng(t, "10", dec2p128m1)}, nil, []HashRange{rng(t, "10", "10")}},
		{"duplicate whole", []HashRange{WholeSpace, WholeSpace}, nil, []HashRange{WholeSpace}},
		{"nested", []HashRange{WholeSpace, rng(t, "5", "6")}, nil, []HashRange{rng(t, "5", "6")}},
		{"adjacent overlaps join", []HashRange{rng(t, "0", "10"), rng(t, "5", "20"), rng(t, "11", dec2p128m1)}, nil, []HashRange{rng(t, "5", "20")}},
		{"triple cover reported once", []HashRange{rng(t, "0", "10"), rng(t, "0", "10"), rng(t, "0", dec2p128m1)}, nil, []HashRange{rng(t, "0", "10")}},
		{
			"gaps and overlaps, unordered",
			[]HashRange{rng(t, "50", "60"), rng(t, "0", "10"), rng(t, "55", "70"), rng(t, "100", dec2p128m1)},
			[]HashRange{rng(t, "11", "49"), rng(t, "71", "99")},
			[]HashRange{rng(t, "55", "60")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]HashRange(nil), tt.in...)
			err := CheckCoverage(tt.in)
			if !reflect.DeepEqual(tt.in, before) {
				t.Errorf("CheckCoverage reordered its input: %v", tt.in)
			}
			if tt.gaps == nil && tt.overlaps == nil {
				if err != nil {
					t.Fatalf("CheckCoverage = %v, want nil", err)
				}
				return
			}
			var ce *CoverageError
			if !errors.As(err, &ce) {
				t.Fatalf("CheckCoverage = %v, want *CoverageError", err)
			}
			if !reflect.DeepEqual(ce.Gaps, tt.gaps) {
				t.Errorf("Gaps = %v, want %v", ce.Gaps, tt.gaps)
			}
			if !reflect.DeepEqual(ce.Overlaps, tt.overlaps) {
				t.Errorf("Overlaps = %v, want %v", ce.Overlaps, tt.overlaps)
			}
		})
	}
}

func TestCoverageErrorText(t *testing.T) {
	err := CheckCoverage([]HashRange{rng(t, "50", "60"), rng(t, "0", "10"), rng(t, "55", "70"), rng(t, "100", dec2p128m1)})
	want := "hash key ranges do not cover 0 .. 2^128-1 exactly once: no range holds 11..49, 71..99; more than one range holds 55..60"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	var many []HashRange
	for i := uint64(0); i < 5; i++ {
		many = append(many, HashRange{HashKeyFromUint64(10 * i), HashKeyFromUint64(10*i + 5)})
	}
	err = CheckCoverage(many)
	want = "hash key ranges do not cover 0 .. 2^128-1 exactly once: no range holds 6..9, 16..19, 26..29 and 2 more"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}
