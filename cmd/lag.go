package cmd

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// lagAPI is what `lag` needs from the client.
type lagAPI interface {
	kstream.DescribeAPI
	lineage.ShardLister
	consumer.API
}

var _ lagAPI = (*kinesis.Client)(nil)

// LagOptions are the inputs of `lag`.
type LagOptions struct {
	base
	Output string
	// One source: a tail checkpoint file, a lease table of tail workers,
	// or a KCL application's lease table.
	Checkpoint string
	LeaseTable string
	KCLTable   string
	// Leases is the lease table's client (cmd wires DynamoDB; tests a fake).
	Leases leases.DynamoAPI
}

func newLagCmd(f *Factory, runF func(*LagOptions) error) *cobra.Command {
	opts := &LagOptions{}
	c := &cobra.Command{
		Use:   "lag STREAM",
		Short: "How far behind the tip a consumer is on each shard, from its checkpoints or leases",
		Long: `Show where a consumer is on every shard and how far behind the tip it is,
from where the consumer keeps its positions (exactly one of):

  --checkpoint FILE    a tail checkpoint file (read without its lock, while
                       the tail runs, and never changed)
  --lease-table TABLE  the DynamoDB lease table of tail --lease-table workers
  --kcl-table TABLE    a KCL application's DynamoDB lease table (read only)

Per shard: its state, the position, how far behind the tip that position
is (BEHIND: the MillisBehindLatest of one GetRecords call, Limit 1, from just
after the position) and, from a lease table, the lease's owner. States:

  reading      the consumer has a position inside the shard
  finished     it read the closed shard to its end (SHARD_END)
  blocked      the shard waits for a parent that is not finished (named):
               a reader that keeps each key's order reads parents first
  not-started  no position yet (or TRIM_HORIZON, LATEST); BEHIND is then
               from where it will start: the oldest record, or the tip
  trimmed      retention removed the shard: if it was not finished, its
               unread records are gone

A position inside a KPL aggregate is measured at the aggregate (its rest is
read again); a shard without a position from its oldest record
(TRIM_HORIZON), where tail and the KCL start a new shard. A blocked shard's
BEHIND is its whole backlog. A checkpoint file written by a tail with --key
or --shard stands for the shards that tail reads, and a note says so. A
summary line names the worst shard.

Each shard gets one GetShardIterator and one GetRecords call (a few shards at
a time, each call with a deadline); a throttled call is retried with a
backoff for up to 30 seconds. A shard that could not be measured is named,
and the command then exits 1.

Output: -o table (default) or -o json.`,
		Example: `  kinesis-shards lag orders --checkpoint ./orders.checkpoint
  kinesis-shards lag orders --lease-table orders-tail
  kinesis-shards lag orders --kcl-table orders-app -o json | jq '.maxMillisBehindLatest'`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "the positions of a tail checkpoint `FILE`")
	fl.StringVar(&opts.LeaseTable, "lease-table", "", "the positions in the DynamoDB lease `TABLE` of tail --lease-table workers")
	fl.StringVar(&opts.KCLTable, "kcl-table", "", "the positions in a KCL application's DynamoDB lease `TABLE`")
	return c
}

func (o *LagOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output = f.Global.Output
	return nil
}

func (o *LagOptions) validate() (err error) {
	if o.Output, err = outputFormat("lag", o.Output); err != nil {
		return err
	}
	n := 0
	for _, fl := range []string{"checkpoint", "lease-table", "kcl-table"} {
		if o.given[fl] {
			n++
		}
	}
	switch {
	case n > 1:
		return usageErrorf("--checkpoint, --lease-table and --kcl-table do not go together: give the one place the consumer keeps its positions")
	case n == 0:
		return usageErrorf("say where the consumer keeps its positions: --checkpoint FILE (tail), --lease-table TABLE (tail --lease-table) or --kcl-table TABLE (a KCL application)")
	case o.given["checkpoint"] && o.Checkpoint == "":
		return usageErrorf("--checkpoint needs a file name")
	case o.given["lease-table"]:
		err = checkTableName("--lease-table", o.LeaseTable)
	case o.given["kcl-table"]:
		err = checkTableName("--kcl-table", o.KCLTable)
	}
	if err != nil {
		return err
	}
	return o.validateBase()
}

// table is the lease table given, if any.
func (o *LagOptions) table() string { return o.LeaseTable + o.KCLTable }

func (o *LagOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisWithLeases(ctx, o.Ref, o.table(), &o.Leases)
	if err != nil {
		return err
	}
	return runLag(ctx, f, client, o)
}

// lagSource is the consumer.Source the flags name.
func lagSource(checkpoint, leaseTable, kclTable string, api leases.DynamoAPI) consumer.Source {
	switch {
	case checkpoint != "":
		return consumer.CheckpointFile{Path: checkpoint}
	case leaseTable != "":
		return consumer.LeaseTable{API: api, Table: leaseTable}
	case kclTable != "":
		return consumer.LeaseTable{API: api, Table: kclTable, KCL: true}
	}
	return nil
}

func runLag(ctx context.Context, f *Factory, api lagAPI, o *LagOptions) error {
	sum, g, err := describeAndList(ctx, api, o.Ref)
	if err != nil {
		return err
	}
	var p *progress
	if f.IO.StderrTTY {
		p = f.startProgress(fmt.Sprintf("reading the positions and measuring %s", text.Plural(g.Len(), "shard")))
	}
	r, err := consumer.Lag(ctx, api, o.Ref, g, sum, lagSource(o.Checkpoint, o.LeaseTable, o.KCLTable, o.Leases),
		consumer.Options{Measure: true, DescribeError: func(err error) string { return text.OneLine(wordError(err, f.errCtx)) }})
	if p != nil {
		p.Stop("")
	}
	if err != nil {
		return err
	}
	if o.Output == "json" {
		err = render.JSON(f.IO.Out, r)
	} else {
		err = render.LagTable(f.IO.Out, r, render.LagOptions{Theme: render.NewTheme(f.IO.ColorOut()), ShortIDs: f.IO.StdoutTTY})
	}
	if err != nil {
		return err
	}
	if failed := r.Failed(); len(failed) > 0 {
		return fmt.Errorf("could not measure %s (%s: %s): the figures shown are not the whole answer",
			text.Plural(len(failed), "shard"), failed[0].ShardID, failed[0].Error)
	}
	return nil
}
