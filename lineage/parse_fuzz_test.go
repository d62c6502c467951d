package lineage

import (
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseShardID: never panics; what it accepts names a shard number of at
// most 12 digits, in the canonical 12-digit form, and parsing is idempotent.
func FuzzParseShardID(f *testing.F) {
	for _, s := range []string{"7", "007", "shardId-7", "shardId-000000000007", "", "shardId-", "-1", "1e3", "shardId-0000000000007", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseShardID(s)
		if err != nil {
			return
		}
		digits, ok := strings.CutPrefix(id, "shardId-")
		if !ok || len(digits) != 12 {
			t.Fatalf("ParseShardID(%q) = %q", s, id)
		}
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil {
			t.Fatalf("ParseShardID(%q) = %q: %v", s, id, err)
		}
		want, _ := strconv.ParseUint(strings.TrimPrefix(s, "shardId-"), 10, 64)
		if n != want {
			t.Fatalf("ParseShardID(%q) = %q, number %d", s, id, n)
		}
		if again, err := ParseShardID(id); err != nil || again != id {
			t.Fatalf("not idempotent: %q → %q → %q, %v", s, id, again, err)
		}
		if ShortID(id) != strconv.FormatUint(n, 10) {
			t.Fatalf("ShortID(%q) = %q", id, ShortID(id))
		}
	})
}

// FuzzParsePercent: never panics; accepted values are strictly between 0
// and 100, and the split key they give is inside any range.
func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"50", "0.5", "99.999", "0", "100", "-1", "1e2", "50%", "", " 50", "33.333333333333333333333"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePercent(s)
		if err != nil {
			return
		}
		if p.Sign() <= 0 || p.Cmp(big.NewRat(100, 1)) >= 0 {
			t.Fatalf("ParsePercent(%q) = %v, outside (0, 100)", s, p)
		}
		whole := HashRange{Start: HashKey{}, End: MaxHashKey}
		if k := whole.KeyAtPercent(p); !whole.Contains(k) {
			t.Fatalf("key %v outside the whole space", k)
		}
	})
}
