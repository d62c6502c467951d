package lineage

import (
	"crypto/md5"
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// Decimal constants, typed out rather than computed with the code under test.
const (
	dec2p64m1  = "18446744073709551615"
	dec2p64    = "18446744073709551616"
	dec2p126   = "85070591730234615865843651857942052864"
	dec2p127m1 = "170141183460469231731687303715884105727"
	dec2p127   = "170141183460469231731687303715884105728"
	dec2p128m1 = "340282366920938463463374607431768211455"
	dec2p128   = "340282366920938463463374607431768211456"
)

// mustKey parses a decimal for test tables.
func mustKey(t testing.TB, s string) HashKey {
	t.Helper()
	k, err := ParseHashKey(s)
	if err != nil {
		t.Fatalf("ParseHashKey(%q): %v", s, err)
	}
	return k
}

func bigOf(t testing.TB, s string) *big.Int {
	t.Helper()
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad big decimal %q", s)
	}
	return b
}

func TestParseHashKeyRoundTrip(t *testing.T) {
	tests := []struct {
		in     string
		hi, lo uint64
	}{
		{"0", 0, 0},
		{"1", 0, 1},
		{"9", 0, 9},
		{"10", 0, 10},
		{dec2p64m1, 0, 1<<64 - 1},
		{dec2p64, 1, 0},
		{"18446744073709551617", 1, 1},
		{"10000000000000000000", 0, 10_000_000_000_000_000_000},                              // 10^19: one limb boundary
		{"100000000000000000000000000000000000000", 5421010862427522170, 687399551400673280}, // 10^38
		{dec2p126, 1 << 62, 0},
		{dec2p127m1, 1<<63 - 1, 1<<64 - 1},
		{dec2p127, 1 << 63, 0},
		{dec2p128m1, 1<<64 - 1, 1<<64 - 1},
		{"113427455640312821154458202477256070485", 0x5555555555555555, 0x5555555555555555},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			k, err := ParseHashKey(tt.in)
			if err != nil {
				t.Fatalf("ParseHashKey(%q) error: %v", tt.in, err)
			}
			if k.hi != tt.hi || k.lo != tt.lo {
				t.Fatalf("ParseHashKey(%q) = {%#x %#x}, want {%#x %#x}", tt.in, k.hi, k.lo, tt.hi, tt.lo)
			}
			if got := k.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
			if got := k.Big().String(); got != tt.in {
				t.Errorf("Big() = %s, want %s", got, tt.in)
			}
			fromBig, err := HashKeyFromBig(bigOf(t, tt.in))
			if err != nil || fromBig != k {
				t.Errorf("HashKeyFromBig = %v, %v; want %v", fromBig, err, k)
			}
			text, err := k.MarshalText()
			if err != nil || string(text) != tt.in {
				t.Errorf("MarshalText = %q, %v", text, err)
			}
			var back HashKey
			if err := back.UnmarshalText(text); err != nil || back != k {
				t.Errorf("UnmarshalText(%q) = %v, %v", text, back, err)
			}
			if app, _ := k.AppendText([]byte("k=")); string(app) != "k="+tt.in {
				t.Errorf("AppendText = %q", app)
			}
		})
	}
	if MaxHashKey.String() != dec2p128m1 {
		t.Errorf("MaxHashKey = %s", MaxHashKey)
	}
}

func TestParseHashKeyRejects(t *testing.T) {
	tests := []struct {
		in      string
		wantMsg string // exact error text
	}{
		{"", "hash key is empty: it must be a decimal number from 0 to 2^128-1"},
		{"-1", `hash key "-1" is not a canonical decimal: no sign, no leading zeros`},
		{"+1", `hash key "+1" is not a canonical decimal: no sign, no leading zeros`},
		{"01", `hash key "01" is not a canonical decimal: no sign, no leading zeros`},
		{"00", `hash key "00" is not a canonical decimal: no sign, no leading zeros`},
		{" 1", `hash key " 1" is not a canonical decimal: no sign, no leading zeros`},
		{"1 ", `hash key "1 " is not a canonical decimal: no sign, no leading zeros`},
		{"1.0", `hash key "1.0" is not a canonical decimal: no sign, no leading zeros`},
		{"1e3", `hash key "1e3" is not a canonical decimal: no sign, no leading zeros`},
		{"0x10", `hash key "0x10" is not a canonical decimal: no sign, no leading zeros`},
		{"١٢٣", `hash key "١٢٣" is not a canonical decimal: no sign, no leading zeros`},       // Arabic-Indic digits
		{"１２", `hash key "１２" is not a canonical decimal: no sign, no leading zeros`},         // fullwidth digits
		{dec2p128, `hash key "` + dec2p128 + `" is larger than 2^128-1 (` + dec2p128m1 + `)`}, // 39 digits, one too many
		{"999999999999999999999999999999999999999", `hash key "999999999999999999999999999999999999999" is larger than 2^128-1 (` + dec2p128m1 + `)`},
		{"1000000000000000000000000000000000000000", `hash key "1000000000000000000000000000000000000000" is larger than 2^128-1 (` + dec2p128m1 + `)`}, // 40 digits
		{strings.Repeat("7", 80), `hash key "` + strings.Repeat("7", 60) + `"... is larger than 2^128-1 (` + dec2p128m1 + `)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			k, err := ParseHashKey(tt.in)
			if err == nil {
				t.Fatalf("ParseHashKey(%q) = %v, want error", tt.in, k)
			}
			if !errors.Is(err, ErrBadHashKey) {
				t.Errorf("error %v does not wrap ErrBadHashKey", err)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.wantMsg)
			}
			var u HashKey
			if err := u.UnmarshalText([]byte(tt.in)); !errors.Is(err, ErrBadHashKey) || u != (HashKey{}) {
				t.Errorf("UnmarshalText(%q) = %v, %v", tt.in, u, err)
			}
		})
	}
}

func TestHashKeyFromBigRejects(t *testing.T) {
	for _, in := range []*big.Int{nil, big.NewInt(-1), bigOf(t, dec2p128), new(big.Int).Lsh(big.NewInt(1), 300)} {
		if k, err := HashKeyFromBig(in); !errors.Is(err, ErrBadHashKey) {
			t.Errorf("HashKeyFromBig(%v) = %v, %v; want ErrBadHashKey", in, k, err)
		}
	}
}

func TestHashKeyJSON(t *testing.T) {
	r := HashRange{Start: mustKey(t, dec2p127), End: MaxHashKey}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"start":"` + dec2p127 + `","end":"` + dec2p128m1 + `"}`
	if string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var back HashRange
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Fatalf("unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"start":"01","end":"1"}`), &back); !errors.Is(err, ErrBadHashKey) {
		t.Fatalf("unmarshal of a non-canonical key: %v", err)
	}
}

// TestHashKeyStringMatchesBig compares the limb formatter with math/big on
// keys of every magnitude, especially around the 10^19 limb boundaries.
func TestHashKeyStringMatchesBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []HashKey{{}, MaxHashKey, {1, 0}, {0, pow19}, {0, pow19 - 1}}
	ten := big.NewInt(10)
	for e := int64(1); e <= 38; e++ {
		p := new(big.Int).Exp(ten, big.NewInt(e), nil)
		for _, d := range []int64{-1, 0, 1} {
			k, err := HashKeyFromBig(new(big.Int).Add(p, big.NewInt(d)))
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
	}
	for range 2000 {
		keys = append(keys, HashKey{rng.Uint64() >> rng.UintN(64), rng.Uint64()})
	}
	for _, k := range keys {
		if got, want := k.String(), k.Big().String(); got != want {
			t.Fatalf("String(%#x,%#x) = %s, want %s", k.hi, k.lo, got, want)
		}
	}
}

func TestHashKeyCmp(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0", "0", 0},
		{"0", "1", -1},
		{"1", "0", 1},
		{dec2p64m1, dec2p64, -1},
		{dec2p64, dec2p64m1, 1},
		{dec2p127, dec2p127m1, 1},
		{dec2p128m1, dec2p128m1, 0},
		{"18446744073709551617", dec2p64, 1},
	}
	for _, tt := range tests {
		if got := mustKey(t, tt.a).Cmp(mustKey(t, tt.b)); got != tt.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHashKeyAddSub(t *testing.T) {
	tests := []struct {
		name     string
		k        string
		n        uint64
		add      string
		addOver  bool
		sub      string
		subUnder bool
	}{
		{"zero", "0", 0, "0", false, "0", false},
		{"zero minus one", "0", 1, "1", false, dec2p128m1, true},
		{"carry into hi", dec2p64m1, 1, dec2p64, false, "18446744073709551614", false},
		{"borrow from hi", dec2p64, 1, "18446744073709551617", false, dec2p64m1, false},
		{"max plus one", dec2p128m1, 1, "0", true, "340282366920938463463374607431768211454", false},
		{"max plus max64", dec2p128m1, 1<<64 - 1, "18446744073709551614", true, "340282366920938463444927863358058659840", false},
		{"2^127 boundary", dec2p127m1, 1, dec2p127, false, "170141183460469231731687303715884105726", false},
		{"small minus more", "5", 7, "12", false, "340282366920938463463374607431768211454", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustKey(t, tt.k)
			got, over := k.Add64(tt.n)
			if got.String() != tt.add || over != tt.addOver {
				t.Errorf("Add64 = %s, %v; want %s, %v", got, over, tt.add, tt.addOver)
			}
			got, under := k.Sub64(tt.n)
			if got.String() != tt.sub || under != tt.subUnder {
				t.Errorf("Sub64 = %s, %v; want %s, %v", got, under, tt.sub, tt.subUnder)
			}
			// The 128-bit forms agree with the 64-bit ones.
			n := HashKeyFromUint64(tt.n)
			if a, o := k.Add(n); a.String() != tt.add || o != tt.addOver {
				t.Errorf("Add = %s, %v", a, o)
			}
			if s, u := k.Sub(n); s.String() != tt.sub || u != tt.subUnder {
				t.Errorf("Sub = %s, %v", s, u)
			}
		})
	}
	if s, u := mustKey(t, dec2p127).Sub(MaxHashKey); !u || s.String() != "170141183460469231731687303715884105729" {
		t.Errorf("2^127 - (2^128-1) = %s, %v; want wrap to 2^127+1 with underflow", s, u)
	}
}

func TestPartitionKeyHash(t *testing.T) {
	tests := []struct {
		pk   string
		want string // int(hashlib.md5(pk.encode()).hexdigest(), 16), computed outside Go
	}{
		{"", "281949768489412648962353822266799178366"},
		{"a", "16955237001963240173058271559858726497"},
		{"partition-key-1", "33365116028791453877729010807000998774"},
		{"héllo", "252973414135665226741597071662034525008"},
		{"日本", "103341369634063465466164320543046703539"},
	}
	for _, tt := range tests {
		t.Run(tt.pk, func(t *testing.T) {
			got := PartitionKeyHash(tt.pk)
			if got.String() != tt.want {
				t.Errorf("PartitionKeyHash(%q) = %s, want %s", tt.pk, got, tt.want)
			}
			// Cross-check with the recipe in docs/KINESIS-NOTES.md §2.
			d := md5.Sum([]byte(tt.pk))
			if ref := new(big.Int).SetBytes(d[:]); got.Big().Cmp(ref) != 0 {
				t.Errorf("PartitionKeyHash(%q) = %s, math/big says %s", tt.pk, got, ref)
			}
		})
	}
	for i := range 500 {
		pk := strings.Repeat("k", i%7) + string(rune('a'+i%26)) + strings.Repeat("é", i%3)
		d := md5.Sum([]byte(pk))
		if got, ref := PartitionKeyHash(pk), new(big.Int).SetBytes(d[:]); got.Big().Cmp(ref) != 0 {
			t.Fatalf("PartitionKeyHash(%q) = %s, want %s", pk, got, ref)
		}
	}
}
