package cmd

import (
	"context"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// ScaleOptions are the inputs of `scale`.
type ScaleOptions struct {
	ReshardOptions
	To       int
	Method   string
	Even     bool
	Balanced bool
	By       string
}

func newScaleCmd(f *Factory, runF func(*ScaleOptions) error) *cobra.Command {
	opts := &ScaleOptions{Method: enumNames("method", "scale")[0], By: enumNames("by", "scale")[0]}
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

--balanced places the boundaries where they divide the sampled traffic
best instead of the even layout (with SplitShard and MergeShards calls; it
samples every open shard, --sample records each, 1000 by default): the
hottest new shard as cool as any boundaries make it and, among those, the
others as even as the order of the keys allows, in bytes, or in records
with --by records. A partition key always lands on one shard, so a
boundary never divides one key's records, and a key that carries more than
1/N of the traffic is named; the other shards share what it leaves. A new
sample can move the boundaries: to run exactly the previewed plan, write it
with --dry-run -o json and give it back with --plan FILE (refused if the
stream's open shards have changed since). A boundary already in place stays when it
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
		RunE: runE(f, opts, runF),
	}
	c.Flags().IntVar(&opts.To, "to", 0, "the number of open shards to reach (1 to 10000)")
	c.Flags().StringVar(&opts.Method, "method", opts.Method, enumUsage("method", "scale"))
	c.Flags().BoolVar(&opts.Even, "even", false, "with --method splits: even out the ranges also when the stream already has N open shards")
	c.Flags().BoolVar(&opts.Balanced, "balanced", false, "place the boundaries where they divide the sampled traffic best (SplitShard and MergeShards calls)")
	c.Flags().StringVar(&opts.By, "by", opts.By, "what traffic shares count, with --balanced or --sample: "+enumUsage("by", "scale"))
	addReshardFlags(c, &opts.ReshardOptions, "sample up to N recent records of each open shard to show traffic shares (default 1000 with --balanced)")
	return c
}

func (o *ScaleOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeReshard(f, c, args[0])
	return nil
}

func (o *ScaleOptions) validate() error {
	if !o.given["to"] {
		return usageErrorf("say how many open shards with --to N")
	}
	if o.To < 1 || o.To > reshard.MaxShards {
		return usageErrorf("--to %d is not a shard count a stream can have: it must be from 1 to %d", o.To, reshard.MaxShards)
	}
	if methods := enumNames("method", "scale"); !slices.Contains(methods, o.Method) {
		return usageErrorf("--method %q is not known: use %s", o.Method, text.OrList(methods))
	}
	if err := o.validateBalanced(); err != nil {
		return err
	}
	if o.Even && reshard.Method(o.Method) != reshard.MethodSplits {
		return usageErrorf("--even goes with --method splits: UpdateShardCount cannot even out a stream that already has the count")
	}
	return o.validateReshard()
}

// validateBalanced checks --balanced and --by; --balanced implies --method
// splits, the only method that places boundaries.
func (o *ScaleOptions) validateBalanced() error {
	if bys := enumNames("by", "scale"); !slices.Contains(bys, o.By) {
		return usageErrorf("--by %q is not known: use %s", o.By, text.OrList(bys))
	}
	if o.given["by"] && !o.Balanced && !o.given["sample"] {
		return usageErrorf("--by says what traffic shares count: it goes with --balanced or --sample")
	}
	if !o.Balanced {
		return nil
	}
	switch {
	case o.given["method"] && reshard.Method(o.Method) != reshard.MethodSplits:
		return usageErrorf("--balanced places each boundary itself, with SplitShard and MergeShards calls: it does not go with --method %s", o.Method)
	case o.Even:
		return usageErrorf("--balanced and --even do not go together: balance the traffic or the key space")
	case !o.given["sample"]:
		o.Sample = reshard.DefaultSampleSize
	case o.Sample < 1:
		return usageErrorf("--balanced needs a sample: --sample must be at least 1, not %d", o.Sample)
	}
	o.Method = string(reshard.MethodSplits)
	return nil
}

func (o *ScaleOptions) run(ctx context.Context, f *Factory) error {
	return o.runReshardGoal(ctx, f, reshard.ScaleGoal{Target: o.To, Method: reshard.Method(o.Method), Even: o.Even, Balanced: o.Balanced, By: reshard.Measure(o.By)})
}
