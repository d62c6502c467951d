package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// SplitOptions are the inputs of `split`.
type SplitOptions struct {
	ReshardOptions
	Shard     string // the SHARD argument; its full id after validation
	At        string
	AtPercent string
	Balanced  bool
	// Goal is the split the flags ask for, resolved by validation.
	Goal reshard.SplitGoal
}

func newSplitCmd(f *Factory, runF func(*SplitOptions) error) *cobra.Command {
	opts := &SplitOptions{}
	c := &cobra.Command{
		Use:   "split STREAM SHARD",
		Short: "Split an open shard in two, after a preview",
		Long: `Split an open shard at a hash key: the lower child takes the shard's start up
to the key minus one, the upper child the key up to the shard's end.

The key is --at HASHKEY (a canonical decimal), or --at-percent P of the
shard's range (0 < P < 100, decimals allowed: start + floor(width × P / 100)),
or by default the exact middle (P = 50, so a whole-space shard splits at
2^127 like a new two-shard stream). --balanced samples the shard's recent
records (up to --sample of those of the last --sample-window, 1000 and 5m
by default, spread evenly over it, within the shard's read limits) and
splits at the median hash of their partition keys, so that the two
children get equal traffic rather than equal key space; the preview shows
the sample and each child's share.

Every rule is checked before anything is sent: the stream is ACTIVE and
provisioned, the shard is open, and the key lies from the shard's start + 2
to its end - 1 (each child needs two keys). The preview shows the open
shards before and after and the call; then, on a terminal, you confirm.
Without a terminal pass --yes (or --dry-run to stop after the preview).
After the call the tool waits for ACTIVE and prints the new layout.

Output: -o table (default) or -o json (the plan and the result in one
document).`,
		Example: `  kinesis-shards split orders 3
  kinesis-shards split orders shardId-000000000003 --at-percent 25 --dry-run
  kinesis-shards split orders 3 --at 255211775190703847597530955573826158592 --yes
  kinesis-shards split orders 3 --balanced --sample 2000
  kinesis-shards split orders 3 --yes -o json | jq '.result.layout'`,
		Args: exactArgs(2, "STREAM SHARD"),
		RunE: runE(f, opts, runF),
	}
	c.Flags().StringVar(&opts.At, "at", "", "split at this hash key (canonical decimal)")
	c.Flags().StringVar(&opts.AtPercent, "at-percent", "", "split at this percentage of the shard's range, 0 < P < 100 (default 50)")
	c.Flags().BoolVar(&opts.Balanced, "balanced", false, "split at the median hash of the shard's recent records")
	addReshardFlags(c, &opts.ReshardOptions, "sample up to N recent records of the shard to show each child's share of its traffic (default 1000 with --balanced)")
	return c
}

func (o *SplitOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeReshard(f, c, args[0])
	o.Shard = args[1]
	return nil
}

func (o *SplitOptions) validate() error {
	id, err := lineage.ParseShardID(o.Shard)
	if err != nil {
		return usageError(err)
	}
	o.Shard = id
	o.Goal = reshard.SplitGoal{Shard: id, Median: o.Balanced}
	atSet, pctSet := o.given["at"], o.given["at-percent"]
	switch {
	case atSet && pctSet:
		return usageErrorf("--at and --at-percent do not go together: give the key or the percentage")
	case o.Balanced && (atSet || pctSet):
		return usageErrorf("--balanced picks the split key from sampled traffic: it does not go with --at or --at-percent")
	case atSet:
		k, err := lineage.ParseHashKey(o.At)
		if err != nil {
			return usageErrorf("--at: %v", err)
		}
		o.Goal.At = &k
	case pctSet:
		p, err := lineage.ParsePercent(o.AtPercent)
		if err != nil {
			return usageErrorf("--at-percent: %v", err)
		}
		o.Goal.Percent = p
	}
	if o.Balanced {
		if !o.given["sample"] {
			o.Sample = reshard.DefaultSampleSize
		}
		if o.Sample < reshard.MinMedianSample {
			return usageErrorf("--balanced needs --sample of at least %d records, not %d", reshard.MinMedianSample, o.Sample)
		}
		o.SampleMin = reshard.MinMedianSample // a median of fewer says little
	}
	return o.validateReshard()
}

func (o *SplitOptions) run(ctx context.Context, f *Factory) error {
	return o.runReshardGoal(ctx, f, o.Goal)
}
