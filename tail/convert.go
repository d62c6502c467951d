package tail

import (
	"bytes"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// resumeSkip is what a reader that resumed inside the record seq skips of
// it: the user records of a KPL aggregate before sub (a plain record is
// sub 0), sub itself unless inBatch, and with inBatch the log events up to
// event of sub's CloudWatch Logs batch. Only what was delivered whole is
// skipped: a record that is not a batch (or a run without CWLogs) gets sub
// delivered whole again.
type resumeSkip struct {
	seq     string
	sub     int64
	inBatch bool
	event   int64
}

// at says whether the user record sub of a record is skipped (atSkip: the
// record is the resumed one), and if not, the last of its log events that
// is (-1: none).
func (s *resumeSkip) at(atSkip bool, sub int64) (skip bool, afterEvent int64) {
	switch {
	case !atSkip:
		return false, -1
	case sub < s.sub, sub == s.sub && !s.inBatch:
		return true, 0
	case sub == s.sub:
		return false, s.event
	}
	return false, -1
}

// convert turns a GetRecords page into delivered records: KPL aggregates
// are split into user records, CloudWatch Logs batches into log events
// with CWLogs, gzip is unpacked with Decompress, and on resume inside an
// aggregate or a batch what was delivered is skipped. size is the page's
// payload bytes (for the read-quota pacing).
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
		// The record the resume points into, or one past it.
		atSkip := r.skip.seq != "" && seq == r.skip.seq
		if r.skip.seq != "" && !atSkip {
			r.skip = resumeSkip{}
		}
		if users, ok := Deaggregate(rec.Data); ok {
			for _, u := range users {
				skipped, after := r.skip.at(atSkip, u.SubSequence)
				if skipped {
					continue
				}
				ur := base
				ur.Aggregated = true
				ur.SubSequence = u.SubSequence
				ur.PartitionKey = u.PartitionKey
				ur.ExplicitHashKey = u.ExplicitHashKey
				ur.Data = u.Data
				ur.OutsideShard = r.outside(u)
				out = r.appendItem(out, ur, after)
			}
			continue
		}
		if skipped, after := r.skip.at(atSkip, 0); !skipped {
			out = r.appendItem(out, base, after)
		}
	}
	if r.skip.seq != "" && len(in) > 0 {
		r.skip = resumeSkip{}
	}
	return out, size
}

// appendItem appends what one (user) record delivers: itself, unpacked
// with Decompress, or with CWLogs the log events of its batch after the
// index afterEvent (nothing for a CONTROL_MESSAGE; the record itself,
// unpacked, when it is not a batch).
func (r *reader) appendItem(out []Record, rec Record, afterEvent int64) []Record {
	if !r.t.opts.CWLogs {
		return append(out, r.unpack(rec))
	}
	cw := DecodeCWLogs(rec.Data)
	switch cw.Kind {
	case CWLogsControl:
		r.controls++
		r.logf("skipped a CloudWatch Logs CONTROL_MESSAGE (record %s; %d on this shard so far)", recordLabel(&rec), r.controls)
		return out
	case NotCWLogs:
		if !r.warnedNotCWLogs {
			r.warnedNotCWLogs = true
			r.t.opts.Warnf("shard %s: record %s is not a CloudWatch Logs batch (%s); it is printed as with --decompress, as is every such record of this shard (said once per shard)", r.id, recordLabel(&rec), cw.Reason)
		}
		rec.Data, rec.Decompressed = cw.Data, cw.Decompressed
		return append(out, rec)
	}
	rec.Data = nil
	for i := range cw.Events {
		if int64(i) > afterEvent {
			ev := rec
			ev.Log = &cw.Events[i]
			out = append(out, ev)
		}
	}
	return out
}

// recordLabel names a record in messages: its sequence number, and the
// sub-sequence number of a KPL user record.
func recordLabel(r *Record) string {
	return Position{SequenceNumber: r.SequenceNumber, SubSequence: r.SubSequence, Aggregated: r.Aggregated}.String()
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
	if b, ok := gunzip(rec.Data); ok {
		rec.Data, rec.Decompressed = b, true
	}
	return rec
}
