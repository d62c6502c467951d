package tail

import (
	"bytes"
	"crypto/md5"

	"google.golang.org/protobuf/encoding/protowire"
)

// KPL aggregation: magic F3 89 9A C2, a protobuf AggregatedRecord, then the
// MD5 of the protobuf bytes only (docs/KINESIS-NOTES.md §7).
//
//	message AggregatedRecord { repeated string partition_key_table = 1; repeated string explicit_hash_key_table = 2; repeated Record records = 3; }
//	message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2; required bytes data = 3; repeated Tag tags = 4; }
//
// The protobuf is read with protowire, field by field: three messages do
// not justify generated code, and the decoder hands out sub-slices of the
// aggregate instead of copies.
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
		field, wire, n := protowire.ConsumeTag(body)
		if n < 0 {
			return nil, false
		}
		body = body[n:]
		if wire != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(field, wire, body); n < 0 {
				return nil, false
			}
			body = body[n:]
			continue
		}
		v, n := consumeBytes(body)
		if n < 0 {
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
		field, wire, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ur, false
		}
		b = b[n:]
		switch {
		case (field == 1 || field == 2) && wire == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
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
		case field == 3 && wire == protowire.BytesType:
			v, n := consumeBytes(b)
			if n < 0 {
				return ur, false
			}
			b = b[n:]
			ur.Data, haveData = v, true
		default:
			if n = protowire.ConsumeFieldValue(field, wire, b); n < 0 {
				return ur, false
			}
			b = b[n:]
		}
	}
	return ur, haveKey && haveData
}

// consumeBytes reads a length-delimited value: a sub-slice of b whose
// capacity ends with it, so an append to it cannot overwrite what follows.
func consumeBytes(b []byte) ([]byte, int) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, n
	}
	return v[:len(v):len(v)], n
}
