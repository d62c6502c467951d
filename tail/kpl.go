package tail

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
)

// KPL aggregation (KINESIS.md §7): magic F3 89 9A C2, a protobuf
// AggregatedRecord, then the MD5 of the protobuf bytes.
//
//	message AggregatedRecord { repeated string partition_key_table = 1; repeated string explicit_hash_key_table = 2; repeated Record records = 3; }
//	message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2; required bytes data = 3; repeated Tag tags = 4; }
//
// The protobuf is read by hand: three messages do not justify a code
// generator, and the decoder can hand out sub-slices instead of copies.
var kplMagic = [4]byte{0xF3, 0x89, 0x9A, 0xC2}

// UserRecord is one record of a KPL aggregate.
type UserRecord struct {
	PartitionKey    string
	ExplicitHashKey string // "" when not set
	Data            []byte // a sub-slice of the aggregate
	SubSequence     int64  // index in the aggregate, from 0
}

// Deaggregate returns the user records of a KPL aggregate. ok is false when
// data is not a valid aggregate (wrong magic, too short, checksum mismatch,
// malformed protobuf, index out of range): such a record is passed through
// untouched, as the KCL does.
func Deaggregate(data []byte) (recs []UserRecord, ok bool) {
	if len(data) <= len(kplMagic)+md5.Size || !bytes.Equal(data[:4], kplMagic[:]) {
		return nil, false
	}
	body := data[4 : len(data)-md5.Size]
	sum := md5.Sum(body)
	if !bytes.Equal(sum[:], data[len(data)-md5.Size:]) {
		return nil, false
	}
	var (
		keys, ehks []string
		raw        [][]byte
	)
	for len(body) > 0 {
		field, wire, n := readTag(body)
		if n <= 0 {
			return nil, false
		}
		body = body[n:]
		if wire != 2 {
			if n = skipField(body, wire); n < 0 {
				return nil, false
			}
			body = body[n:]
			continue
		}
		v, n := readBytes(body)
		if n <= 0 {
			return nil, false
		}
		body = body[n:]
		switch field {
		case 1:
			keys = append(keys, string(v))
		case 2:
			ehks = append(ehks, string(v))
		case 3:
			raw = append(raw, v)
		}
	}
	if len(raw) == 0 {
		return nil, false
	}
	recs = make([]UserRecord, 0, len(raw))
	for i, r := range raw {
		ur, ok := decodeUserRecord(r, keys, ehks)
		if !ok {
			return nil, false
		}
		ur.SubSequence = int64(i)
		recs = append(recs, ur)
	}
	return recs, true
}

func decodeUserRecord(b []byte, keys, ehks []string) (UserRecord, bool) {
	var (
		ur                UserRecord
		haveKey, haveData bool
	)
	for len(b) > 0 {
		field, wire, n := readTag(b)
		if n <= 0 {
			return ur, false
		}
		b = b[n:]
		switch {
		case (field == 1 || field == 2) && wire == 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return ur, false
			}
			b = b[n:]
			if field == 1 {
				if v >= uint64(len(keys)) {
					return ur, false
				}
				ur.PartitionKey, haveKey = keys[v], true
			} else {
				if v >= uint64(len(ehks)) {
					return ur, false
				}
				ur.ExplicitHashKey = ehks[v]
			}
		case field == 3 && wire == 2:
			v, n := readBytes(b)
			if n <= 0 {
				return ur, false
			}
			b = b[n:]
			ur.Data, haveData = v, true
		default:
			n := skipField(b, wire)
			if n < 0 {
				return ur, false
			}
			b = b[n:]
		}
	}
	return ur, haveKey && haveData
}

func readTag(b []byte) (field uint64, wire uint64, n int) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, n
	}
	return v >> 3, v & 7, n
}

// readBytes reads a length-delimited value.
func readBytes(b []byte) ([]byte, int) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, -1
	}
	end := n + int(l)
	return b[n:end:end], end
}

// skipField returns how many bytes a value of the wire type takes, or -1.
func skipField(b []byte, wire uint64) int {
	switch wire {
	case 0:
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return -1
		}
		return n
	case 1:
		if len(b) < 8 {
			return -1
		}
		return 8
	case 2:
		_, n := readBytes(b)
		return n
	case 5:
		if len(b) < 4 {
			return -1
		}
		return 4
	}
	return -1
}
