package lineage

import (
	"errors"
	"slices"
	"testing"
)

func TestParseShardID(t *testing.T) {
	good := []struct{ in, want string }{
		{"shardId-000000000007", "shardId-000000000007"},
		{"shardId-7", "shardId-000000000007"},
		{"7", "shardId-000000000007"},
		{"007", "shardId-000000000007"},
		{"0", "shardId-000000000000"},
		{"000000000000", "shardId-000000000000"},
		{"123456789012", "shardId-123456789012"},
		{"shardId-999999999999", "shardId-999999999999"},
		{"42", "shardId-000000000042"},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseShardID(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseShardID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	bad := []string{
		"", "shardId-", "shardId-0000000000007", "1234567890123", "-7", "+7", " 7", "7 ",
		"shardid-7", "ShardId-7", "shard-7", "shardId-7a", "0x7", "7.0", "٧", "shardId--7", "shardId-shardId-7",
	}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			got, err := ParseShardID(in)
			if !errors.Is(err, ErrBadShardID) || got != "" {
				t.Fatalf("ParseShardID(%q) = %q, %v; want ErrBadShardID", in, got, err)
			}
			want := "shard " + quote(in) + " is not a shard id: give shardId-000000000007 or just its number, 7"
			if err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
		})
	}
}

func TestShortID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"shardId-000000000007", "7"},
		{"shardId-000000000000", "0"},
		{"shardId-000000000120", "120"},
		{"shardId-123456789012", "123456789012"},
		{"shardId-7", "7"},
		{"shardId-", "shardId-"},
		{"shardId-0000000000007", "shardId-0000000000007"}, // 13 digits: not the service's form
		{"shardId-00000000000x", "shardId-00000000000x"},
		{"7", "7"},
		{"custom-shard", "custom-shard"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ShortID(tt.in); got != tt.want {
			t.Errorf("ShortID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCompareShardIDs(t *testing.T) {
	ids := []string{"shardId-10", "b", "shardId-000000000002", "shardId-9", "a10", "a9", "shardId-000000000010", "a", "shardId-2"}
	slices.SortFunc(ids, CompareShardIDs)
	want := []string{"a", "a9", "a10", "b", "shardId-000000000002", "shardId-2", "shardId-9", "shardId-000000000010", "shardId-10"}
	if !slices.Equal(ids, want) {
		t.Errorf("sorted = %q\nwant     %q", ids, want)
	}
	for _, a := range want {
		for _, b := range want {
			if c, d := CompareShardIDs(a, b), CompareShardIDs(b, a); c != -d || (c == 0) != (a == b) {
				t.Errorf("CompareShardIDs(%q,%q)=%d, reversed %d", a, b, c, d)
			}
		}
	}
}

// TestCompareNodesMatchesCompareShardIDs: Build's precomputed tie-break must
// order ids exactly as CompareShardIDs does.
func TestCompareNodesMatchesCompareShardIDs(t *testing.T) {
	ids := []string{"", "0", "00", "7", "07", "a", "a0", "a00", "a9", "a10", "shardId-000000000007", "shardId-7", "shardId-10",
		"shardId-9999999999999999999", "shardId-10000000000000000000", "shardId-010000000000000000000", "x18446744073709551616", "x18446744073709551615"}
	for _, a := range ids {
		for _, b := range ids {
			var na, nb node
			na.setID(a)
			nb.setID(b)
			sign := func(x int) int { return min(max(x, -1), 1) }
			if got, want := sign(compareNodes(&na, &nb)), sign(CompareShardIDs(a, b)); got != want {
				t.Errorf("compareNodes(%q, %q) = %d, CompareShardIDs = %d", a, b, got, want)
			}
		}
	}
}
