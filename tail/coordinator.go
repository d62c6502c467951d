package tail

import (
	"context"
	"errors"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// ShardInfo is what a tail knows of a shard, for a Coordinator.
type ShardInfo struct {
	ID        string
	Parents   []string
	Closed    bool
	Range     lineage.HashRange
	HaveRange bool
}

// Assignment is a Coordinator's answer: where every shard stands, and
// which shards this worker may read now.
type Assignment struct {
	// Positions of every shard the coordinator knows (all workers).
	Positions map[string]Position
	// Held: the shards this worker holds and may read. The coordinator
	// gives a shard only once its parents are at SHARD_END or gone.
	Held map[string]bool
	// Starts says where a held shard without a position starts (the
	// lease's TRIM_HORIZON, LATEST or AT_TIMESTAMP).
	Starts map[string]StartMode
}

// ErrLeaseLost: another worker took the shard.
var ErrLeaseLost = errors.New("lease lost to another worker")

// Coordinator shares the shards of one stream among several tail processes
// (the DynamoDB lease table) and keeps their checkpoints. The tail calls
// Sync at the start and every SyncInterval, Checkpoint instead of
// Store.Save, and Release at exit.
type Coordinator interface {
	// Sync records the known shards (creating leases for new ones), renews
	// the held leases, takes or steals leases to balance the work, and
	// returns the assignment.
	Sync(ctx context.Context, known []ShardInfo) (*Assignment, error)
	// Checkpoint records a held shard's delivered position or SHARD_END;
	// ErrLeaseLost when it is no longer held.
	Checkpoint(ctx context.Context, shard string, p Position) error
	// Release gives back every held lease.
	Release(ctx context.Context) error
	// SyncInterval is how often Sync must run (well inside the lease
	// duration).
	SyncInterval() time.Duration
	// LeaseDuration: after this long without a successful Sync, other
	// workers may take our leases, so the tail stops reading them.
	LeaseDuration() time.Duration
}
