package dashboard

import (
	"context"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Backend is everything the dashboard asks of the world outside the
// terminal, in the domain's types: the dashboard never sees a client, so
// it can be driven by any implementation (cmd's, over the Kinesis and
// DynamoDB clients; a test's, in memory). Every method is called from a
// tea.Cmd, never from Update, and may block until ctx ends.
type Backend interface {
	// ListStreams names the region's streams, sorted, for the picker.
	ListStreams(ctx context.Context) ([]string, error)
	// Describe reads the stream's summary (status, mode, ARN).
	Describe(ctx context.Context, ref kstream.Ref) (*kstream.Summary, error)
	// ListShards lists every shard of the stream the service still lists.
	ListShards(ctx context.Context, ref kstream.Ref) (*lineage.Graph, error)
	// Quota reads the account's shard quota for the planner; an error
	// wraps reshard.ErrQuotaUnknown, as reshard.LoadQuota's do.
	Quota(ctx context.Context) (*reshard.Quota, error)
	// Sample reads a bounded, paced sample of the shards' recent records
	// for a balanced split.
	Sample(ctx context.Context, ref kstream.Ref, shards []*lineage.Shard, o reshard.SampleOptions) (*reshard.Sample, error)
	// Reshard runs a split or merge plan as reshard.Executor does: the
	// call, the wait for ACTIVE, the listing that checks the new layout,
	// and the look for a lost answer (Result.Lost). Errors are the
	// executor's (a *reshard.StepError once a step began).
	Reshard(ctx context.Context, ref kstream.Ref, p *reshard.Plan, o ReshardOptions) (*reshard.Result, error)
	// Read is the sampling reader: it reads from the tip of every open
	// shard until ctx ends, reporting every poll and every batch.
	Read(ctx context.Context, ref kstream.Ref, o ReadOptions) error
	// ReadCheckpoint reads a tail checkpoint file without locking it: the
	// positions of the CHECKPOINT column (--checkpoint).
	ReadCheckpoint(path string) (tail.StreamIdentity, map[string]tail.Position, error)
	// Leases reads a KCL lease table for the overlay on the tree
	// (--kcl-table): owners, checkpoints, blocked children. It is called
	// only when Options.LeaseOverlay is set.
	Leases(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error)
	// Lag reads a consumer's positions (a checkpoint file, a lease table)
	// over the listing, as `kinesis-shards lag` does, and with measure
	// also how far behind the tip each shard's position is (one
	// GetShardIterator and one GetRecords per shard): the LAG column. It
	// is called only when Options.Lag is set; measure is off while the
	// sampling reader is paused, which promises no GetRecords call.
	Lag(ctx context.Context, ref kstream.Ref, g *lineage.Graph, sum *kstream.Summary, measure bool) (*consumer.Report, error)
}

// ReadOptions configure the sampling reader.
type ReadOptions struct {
	// PollInterval is how often a caught-up shard is polled.
	PollInterval time.Duration
	// OnPoll receives the figures of every poll of a shard.
	OnPoll func(tail.PollStats)
	// OnRecords receives every batch read; the batch is the callee's once
	// OnRecords returns (keep a copy).
	OnRecords func([]tail.Record)
}

// ReshardOptions configure a run of a plan.
type ReshardOptions struct {
	// Wait bounds the wait for ACTIVE after each call and paces its polls.
	Wait kstream.WaitOptions
	// OnEvent receives the executor's progress.
	OnEvent func(reshard.Event)
}
