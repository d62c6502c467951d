package kpl

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
)

// Record is one user record of an aggregate.
type Record struct {
	PartitionKey    string
	ExplicitHashKey string // "" for none
	Data            []byte
}

var magic = []byte{0xF3, 0x89, 0x9A, 0xC2}

// Aggregate encodes the user records as one aggregate, with each distinct
// key written once in its table, as the KPL does.
func Aggregate(recs []Record) []byte {
	var keys, ehks []string
	index := func(table *[]string, s string) uint64 {
		i := slices.Index(*table, s)
		if i < 0 {
			*table = append(*table, s)
			i = len(*table) - 1
		}
		return uint64(i)
	}
	var records [][]byte
	for _, r := range recs {
		var rb []byte
		rb = binary.AppendUvarint(rb, 1<<3) // field 1, varint
		rb = binary.AppendUvarint(rb, index(&keys, r.PartitionKey))
		if r.ExplicitHashKey != "" {
			rb = binary.AppendUvarint(rb, 2<<3) // field 2, varint
			rb = binary.AppendUvarint(rb, index(&ehks, r.ExplicitHashKey))
		}
		rb = appendBytes(rb, 3, r.Data)
		records = append(records, rb)
	}
	var body []byte
	for _, k := range keys {
		body = appendBytes(body, 1, []byte(k))
	}
	for _, e := range ehks {
		body = appendBytes(body, 2, []byte(e))
	}
	for _, rb := range records {
		body = appendBytes(body, 3, rb)
	}
	sum := md5.Sum(body)
	return append(append(slices.Clone(magic), body...), sum[:]...)
}

// appendBytes appends a length-delimited field.
func appendBytes(b []byte, field uint64, v []byte) []byte {
	b = binary.AppendUvarint(b, field<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
