// Package swar holds the byte-class check that the JSON hot paths (the
// record encoder of render and the GetRecords decoder of tail) run eight
// bytes at a time: SIMD within a register.
//
// Imports: the standard library only.
package swar
