package tail

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// API is the part of the Kinesis client a tail uses; *kinesis.Client
// satisfies it.
type API interface {
	lineage.ShardLister
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, optFns ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// Record is one record as delivered: a plain record, or one user record of
// a KPL aggregate.
type Record struct {
	ShardID        string
	SequenceNumber string
	// SubSequence is the index inside a KPL aggregate (Aggregated only).
	SubSequence int64
	Aggregated  bool
	// PartitionKey is the user record's own key for aggregated records.
	PartitionKey    string
	ExplicitHashKey string
	ArrivalTime     time.Time
	Data            []byte
	// Decompressed: Data was gzip and has been unpacked (--decompress).
	Decompressed bool
	// OutsideShard flags a KPL user record whose hash is outside the
	// shard's range (the KCL drops these; we show them, flagged).
	OutsideShard bool

	// Log is set for one log event of a CloudWatch Logs batch (--cwlogs):
	// the record (or user record) held the batch, and is delivered once
	// per event. Data is then nil.
	Log *LogEvent

	// Out, when not nil, is what is written out for this record instead
	// of its own line: the --jq output, set by Options.Select.
	Out []byte
}

// position is the checkpoint a delivered record stands for.
func (r *Record) position() Position {
	p := Position{SequenceNumber: r.SequenceNumber, SubSequence: r.SubSequence, Aggregated: r.Aggregated}
	if r.Log != nil && !r.Log.Last {
		// Inside a batch: the events after this one are still to come. The
		// last event finishes the record, which then checkpoints as any.
		p.InBatch, p.LogEventIndex = true, r.Log.Index
	}
	return p
}

// DeliverFunc writes a batch of records of one shard out (and flushes it).
// Calls are serialised; a record counts as delivered once DeliverFunc has
// returned nil for its batch. An error stops the tail.
type DeliverFunc func(batch []Record) error

// WriteFunc writes a batch out as a DeliverFunc does, and reports as it
// goes: written(n) says the batch's first n records have left the process
// (n grows from call to call). The position then follows the output
// within a batch: one page of 10,000 records, or all the log events of
// its CloudWatch Logs batches, takes seconds to drain into a slow stdout,
// and a checkpoint that waited for the whole batch would replay all of it
// after a crash. The records reported count as delivered even when the
// call then fails; the rest count once it returns nil.
type WriteFunc func(batch []Record, written func(n int)) error
