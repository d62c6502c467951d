package lineage

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// HashKey is an unsigned 128-bit integer: a point of the Kinesis hash key
// space 0 .. 2^128-1. The zero value is key 0. HashKeys are comparable with ==
// and ordered with Cmp; they marshal to the canonical decimal the service uses
// on the wire (and so to a JSON string).
type HashKey struct{ hi, lo uint64 }

// MaxHashKey is 2^128-1, the last key of the space.
var MaxHashKey = HashKey{math.MaxUint64, math.MaxUint64}

const (
	pow19        = 10_000_000_000_000_000_000 // 10^19, the largest power of ten below 2^64
	maxKeyDigits = 39                         // len("340282366920938463463374607431768211455")
)

// ParseHashKey parses a hash key in the service's canonical form: a decimal
// matching 0|[1-9][0-9]{0,38} whose value is at most 2^128-1. Anything else
// (a sign, leading zeros, spaces, other digits) is refused rather than
// normalised, because the service refuses it too. The error wraps ErrBadHashKey.
func ParseHashKey(s string) (HashKey, error) {
	if s == "" {
		return HashKey{}, newKindError(ErrBadHashKey, "hash key is empty: it must be a decimal number from 0 to 2^128-1")
	}
	if len(s) > maxKeyDigits || s[0] == '0' && len(s) > 1 {
		return HashKey{}, badKey(s)
	}
	// One pass: check and accumulate in chunks of up to 19 digits, which fit
	// a uint64, so the 128-bit multiply runs at most three times.
	var k HashKey
	for rest := s; rest != ""; {
		n := min(len(rest), 19)
		var v uint64
		for i := 0; i < n; i++ {
			d := rest[i] - '0'
			if d > 9 {
				return HashKey{}, notCanonical(s)
			}
			v = v*10 + uint64(d)
		}
		rest = rest[n:]
		var over bool
		if k, over = k.mulAdd(pow10[n], v); over {
			return HashKey{}, badKey(s)
		}
	}
	return k, nil
}

// pow10[n] is 10^n for n <= 19.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// mulAdd returns k*m + a and whether the result overflowed 128 bits.
func (k HashKey) mulAdd(m, a uint64) (HashKey, bool) {
	hiCarry, hi := bits.Mul64(k.hi, m)
	loHi, lo := bits.Mul64(k.lo, m)
	hi, c1 := bits.Add64(hi, loHi, 0)
	lo, c2 := bits.Add64(lo, a, 0)
	hi, c3 := bits.Add64(hi, 0, c2)
	return HashKey{hi, lo}, hiCarry != 0 || c1 != 0 || c3 != 0
}

// badKey explains why s, too long or with a leading zero or too large, is
// refused: a non-digit anywhere makes it "not canonical" first.
func badKey(s string) error {
	if !allDigits(s) || s[0] == '0' {
		return notCanonical(s)
	}
	return tooLarge(s)
}

func notCanonical(s string) error {
	return newKindError(ErrBadHashKey, "hash key "+quote(s)+" is not a canonical decimal: no sign, no leading zeros")
}

func tooLarge(s string) error {
	return newKindError(ErrBadHashKey, "hash key "+quote(s)+" is larger than 2^128-1 (340282366920938463463374607431768211455)")
}

// HashKeyFromBig converts b, which must lie in 0 .. 2^128-1.
func HashKeyFromBig(b *big.Int) (HashKey, error) {
	if b == nil {
		return HashKey{}, newKindError(ErrBadHashKey, "hash key is missing")
	}
	if b.Sign() < 0 || b.BitLen() > 128 {
		return HashKey{}, newKindError(ErrBadHashKey, "hash key "+quote(b.String())+" is outside 0 .. 2^128-1")
	}
	var buf [16]byte
	b.FillBytes(buf[:])
	return HashKeyFromBytes(buf), nil
}

// HashKeyFromUint64 returns the key v.
func HashKeyFromUint64(v uint64) HashKey { return HashKey{lo: v} }

// HashKeyFromBytes reads b as an unsigned big-endian integer, the way the
// service reads an MD5 digest.
func HashKeyFromBytes(b [16]byte) HashKey {
	return HashKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Bytes returns k as 16 big-endian bytes.
func (k HashKey) Bytes() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return b
}

// Big returns k as a new big.Int.
func (k HashKey) Big() *big.Int {
	b := k.Bytes()
	return new(big.Int).SetBytes(b[:])
}

// IsZero reports whether k is key 0.
func (k HashKey) IsZero() bool { return k.hi == 0 && k.lo == 0 }

// String returns the canonical decimal form, the one the service accepts.
func (k HashKey) String() string {
	if k.hi == 0 {
		return strconv.FormatUint(k.lo, 10)
	}
	var buf [maxKeyDigits]byte
	return string(k.appendDecimal(buf[:0]))
}

// AppendText appends the canonical decimal form to b (encoding.TextAppender).
func (k HashKey) AppendText(b []byte) ([]byte, error) { return k.appendDecimal(b), nil }

// MarshalText returns the canonical decimal form, so JSON carries hash keys as
// strings: a JSON number would lose precision in most readers.
func (k HashKey) MarshalText() ([]byte, error) {
	return k.appendDecimal(make([]byte, 0, maxKeyDigits)), nil
}

// UnmarshalText parses the canonical decimal form (see ParseHashKey).
func (k *HashKey) UnmarshalText(b []byte) error {
	v, err := ParseHashKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// appendDecimal formats without math/big: split k into base-10^19 limbs with
// two 128-by-64-bit divisions (2^128 < 10^57, so at most three limbs).
func (k HashKey) appendDecimal(b []byte) []byte {
	if k.hi == 0 {
		return strconv.AppendUint(b, k.lo, 10)
	}
	qhi, rhi := k.hi/pow19, k.hi%pow19
	qlo, low := bits.Div64(rhi, k.lo, pow19) // rhi < pow19, so no overflow panic
	if qhi == 0 {
		b = strconv.AppendUint(b, qlo, 10)
	} else {
		top, mid := bits.Div64(qhi, qlo, pow19) // qhi <= 1 < pow19
		b = strconv.AppendUint(b, top, 10)
		b = append19(b, mid)
	}
	return append19(b, low)
}

// append19 appends v (< 10^19) as exactly 19 digits, zero-padded.
func append19(b []byte, v uint64) []byte {
	var d [19]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:]...)
}

// Cmp returns -1, 0 or +1 as k is less than, equal to or greater than o.
func (k HashKey) Cmp(o HashKey) int {
	switch {
	case k.hi < o.hi:
		return -1
	case k.hi > o.hi:
		return 1
	case k.lo < o.lo:
		return -1
	case k.lo > o.lo:
		return 1
	}
	return 0
}

// Add64 returns k+n; the bool reports overflow past 2^128-1 (the sum then
// wraps around).
func (k HashKey) Add64(n uint64) (HashKey, bool) {
	lo, c := bits.Add64(k.lo, n, 0)
	hi, c := bits.Add64(k.hi, 0, c)
	return HashKey{hi, lo}, c != 0
}

// Sub64 returns k-n; the bool reports underflow below 0 (the difference then
// wraps around).
func (k HashKey) Sub64(n uint64) (HashKey, bool) {
	lo, b := bits.Sub64(k.lo, n, 0)
	hi, b := bits.Sub64(k.hi, 0, b)
	return HashKey{hi, lo}, b != 0
}

// Add returns k+o and whether it overflowed.
func (k HashKey) Add(o HashKey) (HashKey, bool) {
	lo, c := bits.Add64(k.lo, o.lo, 0)
	hi, c := bits.Add64(k.hi, o.hi, c)
	return HashKey{hi, lo}, c != 0
}

// Sub returns k-o and whether it underflowed.
func (k HashKey) Sub(o HashKey) (HashKey, bool) {
	lo, b := bits.Sub64(k.lo, o.lo, 0)
	hi, b := bits.Sub64(k.hi, o.hi, b)
	return HashKey{hi, lo}, b != 0
}

// PartitionKeyHash returns the hash key the service gives a partition key:
// the MD5 of its UTF-8 bytes read as an unsigned big-endian integer. (A Go
// string is already the byte sequence, so no conversion is needed.)
func PartitionKeyHash(pk string) HashKey {
	return HashKeyFromBytes(md5.Sum([]byte(pk)))
}
