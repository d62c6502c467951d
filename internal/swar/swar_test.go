package swar

import "testing"

// Special is exact: it agrees with a byte loop on every byte value in
// every position, and on random words.
func TestSpecial(t *testing.T) {
	naive := func(v uint64) bool {
		for range 8 {
			c := byte(v)
			if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				return true
			}
			v >>= 8
		}
		return false
	}
	check := func(v uint64) {
		if Special(v) != naive(v) {
			t.Fatalf("Special(%#016x) = %v", v, Special(v))
		}
	}
	const plain = 0x6161616161616161 // "aaaaaaaa"
	for pos := range 8 {
		for c := range 256 {
			check(plain&^(0xff<<(8*pos)) | uint64(c)<<(8*pos))
			check(0x2121212121212121&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)) // "!" is 0x21, next to '"'
		}
	}
	r := uint64(0x9e3779b97f4a7c15)
	for range 1 << 20 {
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		check(r)
		check(r & 0x7f7f7f7f7f7f7f7f)
		check(r&0x3f3f3f3f3f3f3f3f | 0x4040404040404040)
	}
}
