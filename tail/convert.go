package tail

import (
	"bytes"
	"compress/gzip"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// convert turns a GetRecords page into delivered records: KPL aggregates
// are split into user records, gzip is unpacked with Decompress, and on
// resume inside an aggregate what was delivered is skipped. size is the
// page's payload bytes (for the read-quota pacing).
func (r *reader) convert(in []types.Record) (out []Record, size int) {
	out = make([]Record, 0, len(in))
	for i := range in {
		rec := &in[i]
		size += len(rec.Data) + len(aws.ToString(rec.PartitionKey))
		seq := aws.ToString(rec.SequenceNumber)
		base := Record{
			ShardID:        r.id,
			SequenceNumber: seq,
			PartitionKey:   aws.ToString(rec.PartitionKey),
			ArrivalTime:    aws.ToTime(rec.ApproximateArrivalTimestamp),
			Data:           rec.Data,
		}
		skipping := r.skipSeq != "" && seq == r.skipSeq
		if r.skipSeq != "" && seq != r.skipSeq {
			r.skipSeq = "" // past the resumed aggregate
		}
		if users, ok := Deaggregate(rec.Data); ok {
			for _, u := range users {
				if skipping && u.SubSequence <= r.skipSub {
					continue
				}
				ur := base
				ur.Aggregated = true
				ur.SubSequence = u.SubSequence
				ur.PartitionKey = u.PartitionKey
				ur.ExplicitHashKey = u.ExplicitHashKey
				ur.Data = u.Data
				ur.OutsideShard = r.outside(u)
				out = append(out, r.unpack(ur))
			}
			continue
		}
		if skipping {
			continue // a plain record at the checkpoint was delivered
		}
		out = append(out, r.unpack(base))
	}
	if r.skipSeq != "" && len(in) > 0 {
		r.skipSeq = ""
	}
	return out, size
}

// outside reports whether a user record's hash is outside the shard.
func (r *reader) outside(u UserRecord) bool {
	if !r.haveRange {
		return false
	}
	var h lineage.HashKey
	if u.ExplicitHashKey != "" {
		k, err := lineage.ParseHashKey(u.ExplicitHashKey)
		if err != nil {
			return true
		}
		h = k
	} else {
		h = lineage.PartitionKeyHash(u.PartitionKey)
	}
	return !r.rng.Contains(h)
}

var gzipMagic = []byte{0x1f, 0x8b}

// unpack applies --decompress.
func (r *reader) unpack(rec Record) Record {
	if !r.t.opts.Decompress || !bytes.HasPrefix(rec.Data, gzipMagic) {
		return rec
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Data))
	if err != nil {
		return rec
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxDecompressed+1))
	if err != nil || len(b) > maxDecompressed {
		return rec
	}
	rec.Data, rec.Decompressed = b, true
	return rec
}
