package swar

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// Special reports whether any byte of v is a quote, a backslash, a control
// character or not ASCII: exactly, not as a filter, with the classic bit
// tricks for "has a zero byte" and "has a byte below n". Small enough to be
// inlined into the callers' loops.
func Special(v uint64) bool {
	q := v ^ (lsb * '"')
	bs := v ^ (lsb * '\\')
	return ((q-lsb)&^q|(bs-lsb)&^bs|(v-lsb*0x20)&^v|v)&msb != 0
}
