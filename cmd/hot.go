package cmd

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// hotAPI is what `hot` needs from the client.
type hotAPI interface {
	kstream.DescribeAPI
	lineage.ShardLister
	reshard.SampleAPI
}

var _ hotAPI = (*kinesis.Client)(nil)

// maxHotRecords bounds --max-records: the records read are held in memory,
// about 100 bytes each beside their keys, for every open shard.
const maxHotRecords = 1000000

// HotOptions are the inputs of `hot`.
type HotOptions struct {
	base
	Output     string
	Window     time.Duration
	Top        int
	MaxRecords int
	// Threshold is the share of its write quota, in percent, from which a
	// shard is hot (--threshold).
	Threshold float64
	// From and Until are the window, resolved by validation from --window,
	// --from-timestamp and --until.
	From, Until time.Time

	fromArg, untilArg string
	now               time.Time
}

func newHotCmd(f *Factory, runF func(*HotOptions) error) *cobra.Command {
	opts := &HotOptions{Window: time.Minute, Top: reshard.DefaultTopKeys, MaxRecords: reshard.DefaultMaxRecords, Threshold: reshard.DefaultHotShare * 100}
	c := &cobra.Command{
		Use:   "hot STREAM",
		Short: "Which shard is hot, and is it one key (no split helps) or many (where to split)",
		Long: `Read the records every open shard received over a window (by default the
last minute) and report, per shard, its records and bytes, their rates
over the window (from the records' arrival times), its share of a shard's
write quota (1 MiB/s or 1,000 records/s, whichever it is nearer) and its
top partition keys (--top) with their share of its traffic.

A shard that used at least --threshold percent (50) of its write quota
over the window is hot, and gets a verdict in one sentence. Whether a split
helps is decided by rates against the quota, not by shares:

  many keys: splitting at hash H would put 51 % / 49 % of its traffic on
  each child: 40 % and 38 % of a shard's write quota (split STREAM SHARD
  --at H, or split --balanced, spreads it); a key that is half of the
  shard but under the quota by itself is named, and the split beside it
  offered

  one key: customer-7 is 83 % of this shard's bytes; splitting cannot
  spread one key (said when the key alone is over a shard's quota, or so
  nearly all of the shard that no split takes a tenth off the hotter
  child: spread its writes over several keys, or slow the writer)

  explicit-hash-keys: half or more of the traffic was written with explicit
  hash keys, which GetRecords does not return: no split point can be read
  from it (a smaller share is said beside the split point)

  uncertain: the window was sampled and its slices disagree (bursty
  writes, a thin sample), so the share of the quota is a range that
  straddles --threshold: read more with --max-records, or a shorter window

An average over the window hides the peaks of a second that throttle
writers: a shard near half its quota on average is near all of it at
peaks; when writers are throttled and no shard reaches 50 %, lower
--threshold (0 gives every shard with traffic a verdict). Pick a window after the last reshard: a shard that opened inside it
carried traffic for part of it only.

The window: --window D back from now, or --from-timestamp T (and --until U,
default now): RFC 3339, Unix seconds, or a duration ago (15m). A window
that holds more than --max-records records of a shard is sampled evenly
across it, and the figures are then estimates, marked ~, with the share of
the shard's records that was read.

Reads are paced as tail paces a shard (at most one GetRecords call per
220 ms, sized to what is still needed, and no more than the shard's
2 MiB/s read quota), and share the shard's 5 calls a second with its
consumers. Progress (shards read of all) goes to stderr on a terminal.

Output: -o table (default) or -o json.`,
		Example: `  kinesis-shards hot orders
  kinesis-shards hot orders --window 5m --top 10
  kinesis-shards hot orders --from-timestamp 2026-11-30T10:00:00Z --until 2026-11-30T10:05:00Z
  kinesis-shards hot orders -o json | jq -r '.shards[] | select(.verdict.kind != "cold") | .verdict.text'`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.DurationVar(&opts.Window, "window", opts.Window, "read the records of this long back from now (or before --until)")
	fl.StringVar(&opts.fromArg, "from-timestamp", "", "start the window at this arrival `TIMESTAMP` (RFC 3339, Unix seconds, or a duration ago: 15m)")
	fl.StringVar(&opts.untilArg, "until", "", "end the window at this arrival `TIMESTAMP` (default: now)")
	fl.IntVar(&opts.Top, "top", opts.Top, "how many partition keys to list per shard")
	fl.IntVar(&opts.MaxRecords, "max-records", opts.MaxRecords, "read at most this many records per shard; beyond, sample evenly across the window (figures are then estimates)")
	fl.Float64Var(&opts.Threshold, "threshold", opts.Threshold, "a shard is hot from this `PERCENT` of its write quota over the window (0: any traffic)")
	return c
}

func (o *HotOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output, o.now = f.Global.Output, f.Now()
	return nil
}

func (o *HotOptions) validate() (err error) {
	if o.Output, err = outputFormat("hot", o.Output); err != nil {
		return err
	}
	switch {
	case o.Window <= 0:
		return usageErrorf("--window must be positive")
	case o.given["window"] && o.given["from-timestamp"]:
		return usageErrorf("--window and --from-timestamp do not go together: the window is --window back from --until (or now), or from --from-timestamp to --until")
	case o.Top < 1 || o.Top > 1000:
		return usageErrorf("--top must be from 1 to 1000, not %d", o.Top)
	case o.MaxRecords < 1 || o.MaxRecords > maxHotRecords:
		return usageErrorf("--max-records must be from 1 to %d, not %d", maxHotRecords, o.MaxRecords)
	case !(o.Threshold >= 0 && o.Threshold <= 100):
		return usageErrorf("--threshold must be a percentage from 0 to 100, not %v", o.Threshold)
	}
	o.Until = o.now
	if o.given["until"] {
		if o.Until, err = parseTimestamp(o.untilArg, o.now); err != nil {
			return usageErrorf("--until: %v", err)
		}
	}
	o.From = o.Until.Add(-o.Window)
	if o.given["from-timestamp"] {
		if o.From, err = parseTimestamp(o.fromArg, o.now); err != nil {
			return usageErrorf("--from-timestamp: %v", err)
		}
	}
	if !o.From.Before(o.Until) {
		return usageErrorf("the window is empty: --from-timestamp %s is not before --until %s",
			o.From.UTC().Format(time.RFC3339Nano), o.Until.UTC().Format(time.RFC3339Nano))
	}
	return o.validateBase()
}

func (o *HotOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runHot(ctx, f, client, o)
}

func runHot(ctx context.Context, f *Factory, api hotAPI, o *HotOptions) error {
	sum, g, err := describeAndList(ctx, api, o.Ref)
	if err != nil {
		return err
	}
	open := g.Open()
	if len(open) == 0 {
		return fmt.Errorf("stream %s has no open shard (it is %s)", sum.Name, sum.Status)
	}
	if sum.IgnoresPartitionKeys() {
		fmt.Fprintf(f.IO.ErrOut, "note: stream %s places records without regard to their partition keys (RecordDistributionStrategy AUTO): a key's share says nothing about where a split would put it\n", sum.Name)
	}
	from := o.From
	if oldest := o.now.Add(-time.Duration(sum.RetentionHours) * time.Hour); sum.RetentionHours > 0 && from.Before(oldest) {
		from = oldest
		fmt.Fprintf(f.IO.ErrOut, "note: the window starts at %s, the oldest record the stream's %dh retention keeps\n", from.UTC().Format(time.RFC3339), sum.RetentionHours)
	}
	if !sum.Created.IsZero() && from.Before(sum.Created) {
		from = sum.Created
		fmt.Fprintf(f.IO.ErrOut, "note: the window starts at %s, when the stream was created\n", from.UTC().Format(time.RFC3339))
	}

	var p *progress
	var read atomic.Int32
	total := len(open)
	if f.IO.StderrTTY {
		p = f.startProgress(fmt.Sprintf("reading the window of %s: 0 of %d read", text.Plural(total, "open shard"), total))
	}
	ws, err := reshard.ReadWindows(ctx, api, o.Ref, open, reshard.WindowOptions{From: from, Until: o.Until, MaxRecords: o.MaxRecords,
		OnShard: func(reshard.ShardWindow) {
			n := read.Add(1)
			if p != nil {
				p.Update(fmt.Sprintf("reading the window of %s: %d of %d read", text.Plural(total, "open shard"), n, total))
			}
		}})
	if p != nil {
		p.Stop("")
	}
	if err != nil {
		return err
	}
	// 0 is reshard's "default": any traffic is a share above a billionth.
	share := max(o.Threshold/100, 1e-9)
	report := reshard.Analyze(sum.Name, ws, reshard.HotOptions{Top: o.Top, HotShare: share})
	if o.Output == "json" {
		return render.JSON(f.IO.Out, report)
	}
	return render.HotTable(f.IO.Out, report, render.HotOptions{Theme: render.NewTheme(f.IO.ColorOut()), ShortIDs: f.IO.StdoutTTY,
		Command: "kinesis-shards", HotShare: share})
}
