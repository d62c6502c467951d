package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// ScaleOptions are the inputs of `scale`.
type ScaleOptions struct {
	ReshardOptions
	Stream   string
	To       int
	Method   string
	Even     bool
	Balanced bool
	By       string
}

func newScaleCmd(f *Factory) *cobra.Command {
	opts := &ScaleOptions{Method: string(reshard.MethodUpdateShardCount), By: string(reshard.ByBytes)}
	c := &cobra.Command{
		Use:   "scale STREAM --to N",
		Short: "Reach N open shards in the even layout (or balanced by traffic), after a preview",
		Long: `Reach N open shards with the even layout CreateStream gives N shards.

--method update-shard-count (the default) sends one UpdateShardCount call.
Its limits are checked first: from O open shards it reaches ceil(O/2) to
2×O (at most 10000); outside them scale refuses and says so, and never
switches method by itself. The service then splits and merges on its own,
leaving short-lived intermediate shards in the lineage, and each stream
allows 10 such calls per rolling 24 hours.

--method splits sends SplitShard and MergeShards calls instead, one at a
time, waiting for ACTIVE after each: boundaries already in place stay,
every missing one is added by a split and every extra one removed by a
merge, the fewest calls possible, ending exactly on the even layout. It
has no count limit and no daily quota. With --even it also evens out a
stream that already has N open shards with uneven ranges.

--balanced places the boundaries at the quantiles of the sampled traffic
instead of the even layout (with SplitShard and MergeShards calls; it
samples every open shard, --sample records each, 1000 by default), so
that each new shard carries an equal share of it: of its bytes, or of its
records with --by records. A partition key always lands on one shard, so a
boundary never divides one key's records, and a key that carries more than
1/N of the traffic is named. A boundary already in place stays when it
divides the traffic within 5% of a shard's fair share of its target.

--to equal to the open count is "nothing to do" and exits 0 (so scale --to
N is safe to repeat); a note says when the ranges are uneven. Every rule is
checked before anything is sent (the stream is ACTIVE and provisioned, the
target within limits, the account's shard quota). The
preview shows the open shards before and after and every call (--sample N
adds shares of the recent traffic); then, on a terminal, you confirm.
Without a terminal pass --yes (or --dry-run to stop after the preview).

Output: -o table (default) or -o json (the plan and the result in one
document).`,
		Example: `  kinesis-shards scale orders --to 8
  kinesis-shards scale orders --to 3 --method splits --dry-run
  kinesis-shards scale orders --to 12 --method splits --yes -o json
  kinesis-shards scale orders --to 4 --method splits --even --dry-run
  kinesis-shards scale orders --to 6 --balanced --dry-run
  kinesis-shards scale orders --to 6 --balanced --by records --sample 5000`,
		Args: exactArgs(1, "STREAM"),
		RunE: markRan(func(c *cobra.Command, args []string) error {
			opts.Stream = args[0]
			if !c.Flags().Changed("to") {
				return usageErrorf("say how many open shards with --to N")
			}
			if opts.To < 1 || opts.To > reshard.MaxShards {
				return usageErrorf("--to %d is not a shard count a stream can have: it must be from 1 to %d", opts.To, reshard.MaxShards)
			}
			method := reshard.Method(opts.Method)
			if method != reshard.MethodUpdateShardCount && method != reshard.MethodSplits {
				return usageErrorf("--method %q is not known: use update-shard-count or splits", opts.Method)
			}
			if err := opts.checkBalanced(c); err != nil {
				return err
			}
			if opts.Balanced {
				method = reshard.MethodSplits
			}
			if opts.Even && method != reshard.MethodSplits {
				return usageErrorf("--even goes with --method splits: UpdateShardCount cannot even out a stream that already has the count")
			}
			if err := opts.validate(f); err != nil {
				return err
			}
			client, ref, err := f.Kinesis(c.Context(), opts.Stream)
			if err != nil {
				return err
			}
			goal := reshard.ScaleGoal{Target: opts.To, Method: method, Even: opts.Even, Balanced: opts.Balanced, By: reshard.Measure(opts.By)}
			return runReshard(c.Context(), f, client, ref, goal, &opts.ReshardOptions)
		}),
	}
	c.Flags().IntVar(&opts.To, "to", 0, "the number of open shards to reach (1 to 10000)")
	c.Flags().StringVar(&opts.Method, "method", opts.Method, "update-shard-count (one UpdateShardCount call) or splits (SplitShard and MergeShards calls)")
	c.Flags().BoolVar(&opts.Even, "even", false, "with --method splits: even out the ranges also when the stream already has N open shards")
	c.Flags().BoolVar(&opts.Balanced, "balanced", false, "place the boundaries at the quantiles of sampled traffic (SplitShard and MergeShards calls)")
	c.Flags().StringVar(&opts.By, "by", opts.By, "what traffic shares count, with --balanced or --sample: bytes or records")
	addReshardFlags(c, &opts.ReshardOptions, "sample up to N recent records of each open shard to show traffic shares (default 1000 with --balanced)")
	return c
}

// checkBalanced checks --balanced and --by before anything is sent.
func (o *ScaleOptions) checkBalanced(c *cobra.Command) error {
	if by := reshard.Measure(o.By); by != reshard.ByBytes && by != reshard.ByRecords {
		return usageErrorf("--by %q is not known: use bytes or records", o.By)
	}
	sampleSet := c.Flags().Changed("sample")
	if c.Flags().Changed("by") && !o.Balanced && !sampleSet {
		return usageErrorf("--by says what traffic shares count: it goes with --balanced or --sample")
	}
	if !o.Balanced {
		return nil
	}
	switch {
	case c.Flags().Changed("method") && reshard.Method(o.Method) != reshard.MethodSplits:
		return usageErrorf("--balanced places each boundary itself, with SplitShard and MergeShards calls: it does not go with --method %s", o.Method)
	case o.Even:
		return usageErrorf("--balanced and --even do not go together: balance the traffic or the key space")
	case !sampleSet:
		o.Sample = reshard.DefaultSampleSize
	case o.Sample < 1:
		return usageErrorf("--balanced needs a sample: --sample must be at least 1, not %d", o.Sample)
	}
	return nil
}
