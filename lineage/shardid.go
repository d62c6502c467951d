package lineage

import (
	"cmp"
	"strings"
)

const (
	shardIDPrefix = "shardId-"
	shardIDDigits = 12 // the service's ids are shardId- and 12 zero-padded digits
)

// ParseShardID normalises what a user may type for a shard to the service's
// id: "shardId-000000000007", "shardId-7", "7" and "007" all give
// "shardId-000000000007". The number has 1 to 12 ASCII digits. Anything else
// is an error wrapping ErrBadShardID.
func ParseShardID(s string) (string, error) {
	digits := strings.TrimPrefix(s, shardIDPrefix)
	if digits == "" || len(digits) > shardIDDigits || !allDigits(digits) {
		return "", newKindError(ErrBadShardID, "shard "+quote(s)+" is not a shard id: give shardId-000000000007 or just its number, 7")
	}
	var b [len(shardIDPrefix) + shardIDDigits]byte
	n := copy(b[:], shardIDPrefix)
	for i := 0; i < shardIDDigits-len(digits); i++ {
		b[n+i] = '0'
	}
	copy(b[len(b)-len(digits):], digits)
	return string(b[:]), nil
}

// ShortID returns the number of a service shard id without its zero padding:
// "shardId-000000000007" gives "7". Ids of another form (an emulator's, say)
// are returned unchanged.
func ShortID(id string) string {
	digits, ok := strings.CutPrefix(id, shardIDPrefix)
	if !ok || digits == "" || len(digits) > shardIDDigits || !allDigits(digits) {
		return id
	}
	if t := strings.TrimLeft(digits, "0"); t != "" {
		return t
	}
	return "0"
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CompareShardIDs orders shard ids numeric-aware: ids are split into a prefix
// and a trailing run of digits, prefixes compare as strings and the digits as
// numbers, so "shardId-9" sorts before "shardId-10" and unpadded emulator ids
// order the way the service's padded ones do. Ties fall back to the plain
// string order, so the order is total.
func CompareShardIDs(a, b string) int {
	pa, da := splitTrailingDigits(a)
	pb, db := splitTrailingDigits(b)
	if c := strings.Compare(pa, pb); c != 0 {
		return c
	}
	ta, tb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
	return cmp.Or(cmp.Compare(len(ta), len(tb)), strings.Compare(ta, tb), strings.Compare(a, b))
}

func splitTrailingDigits(s string) (prefix, digits string) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return s[:i], s[i:]
}
