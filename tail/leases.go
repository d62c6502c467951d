package tail

import (
	"context"
	"errors"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// ShardInfo is what a tail knows of a shard, for its Leases.
type ShardInfo struct {
	ID        string
	Parents   []string
	Closed    bool
	Range     lineage.HashRange
	HaveRange bool
	// Listed: the shard is in the latest listing. A lease whose shard is
	// not listed, while a listed shard descends from it, was trimmed by
	// retention: it counts as read, exactly as a trimmed parent does
	// without a lease table.
	Listed bool
}

// Assignment is what a Leases sync answers: where every shard stands, and
// which shards this worker may read now.
type Assignment struct {
	// Positions of every shard the table knows (all workers).
	Positions map[string]Position
	// Held: the shards this worker holds, each with the moment from which
	// another worker may take it (the sending of its last answered renewal
	// plus the lease duration: a renewal can only land after it was sent).
	// A shard is given only once its parents are at SHARD_END or gone.
	Held map[string]time.Time
	// Starts says where a held shard without a position starts (the
	// lease's TRIM_HORIZON, LATEST, or an AT_TIMESTAMP without its time).
	Starts map[string]StartMode
	// Free: shards ready to be read (parents finished) whose lease no
	// worker holds (none, or expired), and which this worker did not
	// take. Nobody reads them until a worker does: --idle-exit waits.
	Free map[string]bool
	// HandOff: shards of ours another worker asked for. The tail stops
	// their readers, and hands each over with the position of the last
	// record written (Leases.HandOff), so that the other worker goes on
	// from there instead of printing again what we wrote since the last
	// checkpoint.
	HandOff map[string]bool
}

// ErrLeaseLost: another worker took the shard.
var ErrLeaseLost = errors.New("lease lost to another worker")

// Leases share the shards of one stream among several tail processes (the
// DynamoDB lease table) and keep their checkpoints. The tail calls Sync at
// the start and every SyncInterval, Checkpoint instead of Store.Save, and
// Release at exit. Sync and Checkpoint may run at the same time; neither
// waits for the other.
type Leases interface {
	// Sync records the known shards (creating leases for new ones), renews
	// the held leases, takes or steals leases to balance the work, and
	// returns the assignment. On an error the assignment, when not nil,
	// carries Held only (the renewals that were answered): the tail keeps
	// reading those shards until their time runs out.
	Sync(ctx context.Context, known []ShardInfo) (*Assignment, error)
	// Checkpoint records a held shard's delivered position, SHARD_END, or
	// (Position.From) where its reading started; ErrLeaseLost when it is
	// no longer held.
	Checkpoint(ctx context.Context, shard string, p Position) error
	// HandOff checkpoints p, where a shard of Assignment.HandOff stopped,
	// and gives the lease to the worker that asked for it, in one write;
	// ErrLeaseLost when it is no longer ours to give.
	HandOff(ctx context.Context, shard string, p Position) error
	// Release gives back every held lease.
	Release(ctx context.Context) error
	// SyncInterval is how often Sync must run (well inside the lease
	// duration).
	SyncInterval() time.Duration
	// LeaseDuration: after this long without a renewal, other workers may
	// take a lease.
	LeaseDuration() time.Duration
}
