package fake

import (
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// The read side for servers of other read APIs over the fake's data
// (internal/kinesistest/fanout serves SubscribeToShard from it). These
// calls run no Hook and count no call: they are the server's view, not a
// client's.

// ShardRead is what a reader of a shard finds from a record index on.
type ShardRead struct {
	// Listed is false for a shard that is missing or trimmed; the other
	// fields are then zero.
	Listed bool
	// Records from the index on, at most the limit asked for.
	Records []Rec
	// Behind: more records follow these.
	Behind bool
	// Closed: the shard is closed; with Behind false, Records reach its
	// end.
	Closed bool
	// Children of a closed shard (none with NoChildShards).
	Children []types.ChildShard
	// StartSeq is the shard's starting sequence number; LastSeq is that of
	// the record before the index ("" at index 0).
	StartSeq, LastSeq string
	// Next is the index a reader continues from: after these records, or,
	// when its index had been trimmed, at the oldest record kept.
	Next int
}

// ReadShard returns at most limit records of a shard from index idx on.
// Indices count the records retention or MaxBytes trimmed too: a reader
// whose index has been trimmed since gets no records, Behind, and the last
// record trimmed as LastSeq (a subscription continues after it).
func (f *Fake) ReadShard(stream, shard string, idx, limit int) ShardRead {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[stream]
	if s == nil {
		return ShardRead{}
	}
	f.trimAged(s)
	sh := s.shard(shard)
	if sh == nil || sh.Trimmed {
		return ShardRead{}
	}
	if idx = max(idx, 0); idx < sh.gone {
		return ShardRead{Listed: true, Behind: true, Closed: sh.Closed, StartSeq: sh.startSeq, LastSeq: sh.goneSeq, Next: sh.gone}
	}
	idx = min(idx-sh.gone, len(sh.Records))
	end := min(idx+limit, len(sh.Records))
	r := ShardRead{Listed: true, Behind: end < len(sh.Records), Closed: sh.Closed, StartSeq: sh.startSeq, LastSeq: sh.goneSeq, Next: sh.gone + end}
	for _, rec := range sh.Records[idx:end] {
		rec.Data = slices.Clone(rec.Data)
		r.Records = append(r.Records, rec)
	}
	if idx > 0 {
		r.LastSeq = sh.Records[idx-1].Seq
	}
	if sh.Closed && !f.NoChildShards {
		r.Children = s.children(sh.ID)
	}
	return r
}

// StartIndex is the index of the first record a reader of a shard that
// starts at this position gets, by GetShardIterator's rules (which
// SubscribeToShard's StartingPosition follows too). ok is false when the
// shard is missing or trimmed.
func (f *Fake) StartIndex(stream, shard string, typ types.ShardIteratorType, seq string, ts time.Time) (idx int, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[stream]
	if s == nil {
		return 0, false, nil
	}
	f.trimAged(s)
	sh := s.shard(shard)
	if sh == nil || sh.Trimmed {
		return 0, false, nil
	}
	idx, err = sh.startIndex(typ, seq, ts)
	return idx, true, err
}

// StreamARN is the ARN of a stream ("" if none).
func (f *Fake) StreamARN(stream string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.streams[stream]; s != nil {
		return s.ARN
	}
	return ""
}
