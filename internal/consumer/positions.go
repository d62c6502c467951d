package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// State is where a consumer stands on a shard.
type State string

// The states, as -o json spells them.
const (
	// StateReading: the consumer has a position inside the shard.
	StateReading State = "reading"
	// StateFinished: every record of the closed shard was processed
	// (SHARD_END).
	StateFinished State = "finished"
	// StateBlocked: the shard waits for a parent that is not finished
	// (BlockedBy names it): a consumer that keeps each key's order reads a
	// child only after its parents.
	StateBlocked State = "blocked"
	// StateNotStarted: no position yet, or only a starting point
	// (TRIM_HORIZON, LATEST, AT_TIMESTAMP), and nothing holds it back.
	StateNotStarted State = "not-started"
	// StateTrimmed: retention removed the shard (the listing no longer
	// has it) before the consumer finished it.
	StateTrimmed State = "trimmed"
)

// SourceKind says where the positions come from.
type SourceKind string

// The sources.
const (
	SourceCheckpoint SourceKind = "checkpoint"  // a tail checkpoint file
	SourceLeaseTable SourceKind = "lease-table" // a lease table of tail workers
	SourceKCLTable   SourceKind = "kcl-table"   // a KCL application's lease table
)

// SourceRef names a source in a report.
type SourceRef struct {
	Kind SourceKind `json:"kind"`
	// Name is the checkpoint file's path or the table's name.
	Name string `json:"name"`
}

func (s SourceRef) String() string {
	switch s.Kind {
	case SourceCheckpoint:
		return "checkpoint file " + s.Name
	case SourceLeaseTable:
		return "lease table " + s.Name
	}
	return "KCL lease table " + s.Name
}

// ShardLag is a consumer's standing on one shard.
type ShardLag struct {
	ShardID string `json:"shardId"`
	State   State  `json:"state"`
	// Position is the position as the source keeps it: a sequence number,
	// SHARD_END, TRIM_HORIZON, LATEST or AT_TIMESTAMP; "" for none.
	Position string `json:"position"`
	// SubSequenceNumber: the position is inside a KPL aggregate.
	SubSequenceNumber *int64 `json:"subSequenceNumber,omitempty"`
	// LogEventIndex: the position is inside a CloudWatch Logs batch (tail
	// --cwlogs), after this log event of it.
	LogEventIndex *int64 `json:"logEventIndex,omitempty"`
	// MillisBehindLatest is how far the position is behind the shard's
	// tip; null when it was not measured (finished, trimmed, failed).
	MillisBehindLatest *int64 `json:"millisBehindLatest"`
	// Owner is the lease's owner; while it is handed over (the KCL 3's
	// graceful hand-off), HandingOver is the worker still reading it and
	// Owner the one it goes to.
	Owner       string   `json:"owner,omitempty"`
	HandingOver string   `json:"handingOverFrom,omitempty"`
	BlockedBy   []string `json:"blockedBy,omitempty"`
	// Error says why MillisBehindLatest could not be read.
	Error string `json:"error,omitempty"`
	// Note says why it was not asked for, when a position says where to
	// start but not exactly where (an AT_TIMESTAMP lease without its time).
	Note string `json:"note,omitempty"`

	from *from // where the measuring call starts; nil: none is made
}

// readingAt marks the shard as being read at a checkpoint: after the
// record seq, or at it when the position is inside it (a KPL aggregate's
// user record sub, a CloudWatch Logs batch's event ev).
func (sl *ShardLag) readingAt(seq string, inAggregate bool, sub int64, inBatch bool, ev int64) {
	sl.State, sl.from = StateReading, &from{kind: types.ShardIteratorTypeAfterSequenceNumber, seq: seq}
	if inAggregate {
		sl.SubSequenceNumber = &sub
		sl.from.kind = types.ShardIteratorTypeAtSequenceNumber
	}
	if inBatch {
		sl.LogEventIndex = &ev
		sl.from.kind = types.ShardIteratorTypeAtSequenceNumber
	}
}

// from is where the one GetRecords of a shard starts.
type from struct {
	kind types.ShardIteratorType
	seq  string
	ts   time.Time
}

// Source reads a consumer's positions over a stream's lineage.
type Source interface {
	Ref() SourceRef
	// Read returns one ShardLag per shard of g it stands for, in g's
	// order, not yet measured, and a note for the report ("" for none).
	Read(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) ([]ShardLag, string, error)
}

// ErrForeign: the source holds the positions of another stream.
var ErrForeign = errors.New("the positions belong to another stream")

// CheckpointFile is a tail checkpoint file, read without its lock (a tail
// may be writing it) and never written.
type CheckpointFile struct {
	Path string
}

// Ref implements Source.
func (c CheckpointFile) Ref() SourceRef { return SourceRef{Kind: SourceCheckpoint, Name: c.Path} }

// Read implements Source. A file written by a tail with --key or --shard
// stands for the shards that tail reads only (the key's path, the shard's
// subtree): the others are left out, and the note says so.
func (c CheckpointFile) Read(_ context.Context, g *lineage.Graph, sum *kstream.Summary) ([]ShardLag, string, error) {
	id, filter, pos, err := tail.ReadCheckpointFilter(c.Path)
	if err != nil {
		return nil, "", err
	}
	if id.ARN != sum.ARN || !id.Created.Equal(sum.Created) {
		return nil, "", fmt.Errorf("%w: checkpoint file %s is for %s (created %s), not for %s (created %s)", ErrForeign,
			c.Path, id.ARN, stamp(id.Created), sum.ARN, stamp(sum.Created))
	}
	all := FromCheckpoint(g, pos)
	var read []*lineage.Shard
	switch {
	case filter.Shard != "":
		read = g.Subtree(filter.Shard)
	case filter.Key != "":
		read = g.KeyPath(lineage.PartitionKeyHash(filter.Key))
	default:
		return all, "", nil
	}
	keep := map[string]bool{}
	for _, s := range read {
		keep[s.ID] = true
	}
	out := all[:0]
	for _, s := range all {
		if keep[s.ShardID] {
			out = append(out, s)
		}
	}
	note := "the file was written by a tail with " + filter.String() + ": only the shards it reads are shown"
	if filter.Key != "" {
		note += ", and its positions are of that key's records: BEHIND counts the other keys' records too"
	}
	return out, note, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// FromCheckpoint lays a tail checkpoint over the lineage, with tail's
// rule: a shard is read once each parent is at SHARD_END or trimmed, from
// just after its checkpoint (AT_SEQUENCE_NUMBER inside a KPL aggregate,
// whose rest is read again), else from its oldest record.
func FromCheckpoint(g *lineage.Graph, pos map[string]tail.Position) []ShardLag {
	out := make([]ShardLag, 0, g.Len())
	for _, s := range g.Shards() {
		p := pos[s.ID]
		sl := ShardLag{ShardID: s.ID}
		if p.SequenceNumber != "" {
			sl.Position = p.SequenceNumber
		}
		switch {
		case p.ShardEnd:
			sl.State, sl.Position = StateFinished, leases.ShardEnd
		case s.IsTrimmed():
			sl.State = StateTrimmed
		case p.SequenceNumber != "":
			// Inside a batch, the rest of the batch the record holds is unread.
			sl.readingAt(p.SequenceNumber, p.Aggregated, p.SubSequence, p.InBatch, p.LogEventIndex)
		default:
			sl.from = &from{kind: types.ShardIteratorTypeTrimHorizon}
			sl.State, sl.BlockedBy = StateNotStarted, nil
			for _, parent := range s.Parents {
				ps := g.Shard(parent)
				if ps != nil && !ps.IsTrimmed() && !pos[parent].ShardEnd {
					sl.BlockedBy = append(sl.BlockedBy, parent)
				}
			}
			if len(sl.BlockedBy) > 0 {
				sl.State = StateBlocked
			}
		}
		out = append(out, sl)
	}
	return out
}

// LeaseTable is a lease table in the KCL's schema, read only: a table of
// tail workers (KCL false), which names the stream it belongs to, or a KCL
// application's (KCL true), which does not.
type LeaseTable struct {
	API   leases.DynamoAPI
	Table string
	KCL   bool
}

// Ref implements Source.
func (t LeaseTable) Ref() SourceRef {
	if t.KCL {
		return SourceRef{Kind: SourceKCLTable, Name: t.Table}
	}
	return SourceRef{Kind: SourceLeaseTable, Name: t.Table}
}

// Read implements Source.
func (t LeaseTable) Read(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) ([]ShardLag, string, error) {
	if !t.KCL {
		if err := t.checkClaim(ctx, sum); err != nil {
			return nil, "", err
		}
	}
	d, _, err := DiagnoseLeases(ctx, t.API, t.Table, g, sum)
	if err != nil {
		return nil, "", err
	}
	note := ""
	if d.OtherStreams > 0 {
		note = fmt.Sprintf("%d lease(s) of other streams in the table were left out", d.OtherStreams)
	}
	return FromLeases(g, d), note, nil
}

// checkClaim refuses a tail lease table tied to another stream, or to
// none (a KCL application's table: --kcl-table reads those).
func (t LeaseTable) checkClaim(ctx context.Context, sum *kstream.Summary) error {
	if err := leases.CheckTable(ctx, t.API, t.Table); err != nil {
		return err
	}
	id, n, err := leases.ReadClaim(ctx, t.API, t.Table)
	switch {
	case err != nil:
		return err
	case id == nil && n > 0:
		return fmt.Errorf("lease table %s is not a table of tail workers (it names no stream): for a KCL application's lease table use --kcl-table", t.Table)
	case id == nil:
		return fmt.Errorf("lease table %s holds no leases yet: no tail with --lease-table %s has run", t.Table, t.Table)
	case id.ARN != sum.ARN || id.Created.UnixMilli() != sum.Created.UnixMilli():
		return fmt.Errorf("%w: lease table %s holds the leases of %s (created %s), not of %s (created %s)", ErrForeign,
			t.Table, id.ARN, stamp(id.Created), sum.ARN, stamp(sum.Created))
	}
	return nil
}

// DiagnoseLeases reads a lease table and lays it over the lineage as the
// KCL decides (leases.Diagnose), with the stream named as multi-stream
// tables name it; it also returns how many lease rows the table holds.
func DiagnoseLeases(ctx context.Context, api leases.DynamoAPI, table string, g *lineage.Graph, sum *kstream.Summary) (*leases.Diagnosis, int, error) {
	if err := leases.CheckTable(ctx, api, table); err != nil {
		return nil, 0, err
	}
	rows, err := leases.Scan(ctx, api, table)
	if err != nil {
		return nil, 0, err
	}
	id := leases.StreamID{Name: sum.Name, Created: sum.Created}
	if ref, err := kstream.ParseRef(sum.ARN); err == nil {
		id.Account = ref.Account
	}
	return leases.Diagnose(g, rows, id), len(rows), nil
}

// FromLeases turns a lease diagnosis into each shard's standing. A lease
// at a sequence number is measured from just after it, or at it when its
// sub-sequence number says it is inside a KPL aggregate; a lease that is
// only a starting point from that point (TRIM_HORIZON, LATEST), as is a
// shard without a lease (from TRIM_HORIZON, where the KCL creates new
// leases).
func FromLeases(g *lineage.Graph, d *leases.Diagnosis) []ShardLag {
	out := make([]ShardLag, 0, g.Len())
	for _, s := range g.Shards() {
		sl := ShardLag{ShardID: s.ID, State: StateNotStarted}
		dl := d.Shards[s.ID]
		var l *leases.Lease
		if dl != nil {
			l = dl.Lease
		}
		cp := ""
		if l != nil {
			sl.Owner, sl.HandingOver, sl.Position, cp = l.Owner, l.CheckpointOwner, l.Checkpoint, l.Checkpoint
		}
		switch {
		case dl != nil && dl.Finished:
			sl.State = StateFinished
		case s.IsTrimmed():
			sl.State = StateTrimmed
		case dl != nil && dl.Blocked:
			sl.State, sl.BlockedBy = StateBlocked, dl.BlockedBy
			sl.from = &from{kind: types.ShardIteratorTypeTrimHorizon}
		case cp == "" || cp == leases.TrimHorizon:
			sl.from = &from{kind: types.ShardIteratorTypeTrimHorizon}
		case cp == leases.Latest:
			sl.from = &from{kind: types.ShardIteratorTypeLatest}
		case cp == leases.AtTimestamp && l.From > 0:
			// tail records the time in an attribute of its own.
			sl.from = &from{kind: types.ShardIteratorTypeAtTimestamp, ts: time.UnixMilli(l.From)}
		case cp == leases.AtTimestamp:
			sl.Note = "the lease says AT_TIMESTAMP without the time (the KCL's schema has no field for it), so how far behind it starts is not known"
		default:
			sl.readingAt(cp, l.SubSequence > 0, l.SubSequence, l.HasLogEvent, l.LogEvent)
		}
		out = append(out, sl)
	}
	return out
}
