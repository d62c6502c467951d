package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// MergeOptions are the inputs of `merge`.
type MergeOptions struct {
	ReshardOptions
	// Shards are the SHARD arguments; their full ids after validation.
	Shards [2]string
}

func newMergeCmd(f *Factory, runF func(*MergeOptions) error) *cobra.Command {
	opts := &MergeOptions{}
	c := &cobra.Command{
		Use:   "merge STREAM SHARD SHARD",
		Short: "Merge two adjacent open shards into one, after a preview",
		Long: `Merge two open shards whose hash ranges touch into one shard holding both
ranges. Give the shards in either order: the tool checks that both are open
and adjacent and sends the one with the lower range as ShardToMerge, which
the service requires.

Every rule is checked before anything is sent (the stream is ACTIVE and
provisioned, both shards are open, different and adjacent). The preview
shows the open shards before and after and the call (--sample N adds each
shard's share of the recent traffic); then, on a terminal, you confirm.
Without a terminal pass --yes (or --dry-run to stop after the preview).
After the call the tool waits for ACTIVE and prints the new layout.

Output: -o table (default) or -o json (the plan and the result in one
document).`,
		Example: `  kinesis-shards merge orders 4 5
  kinesis-shards merge orders shardId-000000000005 shardId-000000000004 --dry-run
  kinesis-shards merge orders 4 5 --sample 500 --yes`,
		Args: exactArgs(3, "STREAM SHARD SHARD"),
		RunE: runE(f, opts, runF),
	}
	addReshardFlags(c, &opts.ReshardOptions, "sample up to N recent records of each shard to show traffic shares")
	return c
}

func (o *MergeOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeReshard(f, c, args[0])
	o.Shards = [2]string{args[1], args[2]}
	return nil
}

func (o *MergeOptions) validate() error {
	for i, a := range o.Shards {
		id, err := lineage.ParseShardID(a)
		if err != nil {
			return usageError(err)
		}
		o.Shards[i] = id
	}
	if o.Shards[0] == o.Shards[1] {
		return usageErrorf("cannot merge shard %s with itself: give two different, adjacent open shards", o.Shards[0])
	}
	return o.validateReshard()
}

func (o *MergeOptions) run(ctx context.Context, f *Factory) error {
	return o.runReshardGoal(ctx, f, reshard.MergeGoal{Shards: o.Shards})
}
