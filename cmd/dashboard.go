package cmd

import (
	"context"
	"errors"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// DashboardOptions are the inputs of `dashboard`.
type DashboardOptions struct {
	base
	ReadOnly     bool
	Checkpoint   string
	Refresh      time.Duration
	PollInterval time.Duration
	Paused       bool
	KCLTable     string
	LeaseTable   string
	Leases       leases.DynamoAPI
	// EFO: the sampling reader subscribes through a consumer of its own.
	EFO bool

	// From the environment, for validation: -o and the terminal.
	output   string
	terminal bool
}

func newDashboardCmd(f *Factory, runF func(*DashboardOptions) error) *cobra.Command {
	opts := &DashboardOptions{}
	c := &cobra.Command{
		Use:   "dashboard [STREAM]",
		Short: "Interactive dashboard: lineage, live shard figures, records, split and merge",
		Long: `An interactive terminal dashboard. Without STREAM it starts with a filterable
list of the region's streams.

For a stream it shows the lineage tree (the renderer of ` + "`tree`" + `), a shard
table and a live record pane:

  SHARE       the shard's share of the hash key space
  REC/S IN/S  records and bytes per second written to the shard, as seen by a
              sampling reader from the tip of every open shard, averaged over
              the last 10 seconds
  BEHIND      that reader's MillisBehindLatest
  CHECKPOINT  with --checkpoint FILE: the position a ` + "`tail`" + ` saved in that file
              (read without locking it, every refresh)
  LAG         with --checkpoint FILE, --lease-table TABLE (tail workers) or
              --kcl-table TABLE (a KCL application): how far behind the tip
              that consumer is, as ` + "`lag`" + ` measures it (a GetShardIterator
              and a GetRecords per shard at every refresh; none while
              paused), or its state:
              done, blocked (by a parent not finished), trimmed. Given a
              checkpoint file and a table, LAG is the table's consumer's

The sampling reader paces itself like ` + "`tail`" + `: about one GetRecords call per
--poll-interval per caught-up shard, never more than five a second; p pauses
it (no calls at all) and resumes it from the tip. The reader is one more
consumer of every open shard: on a stream whose readers are already
throttled, start with --paused and press p only when you need the figures.
The listing is refreshed every --refresh without blocking the keyboard.

--efo makes the sampling reader subscribe through an enhanced fan-out
consumer of its own instead (kinesis-shards-dashboard-USER-HOST), so the
figures cost the stream's other readers nothing; it is registered when the
dashboard first reads a stream and deregistered when it quits, and billed
per consumer-shard hour and per GB read meanwhile.

s splits the selected shard (at the middle, at a percentage of its range, or
balanced at the median hash of sampled traffic) and m merges it with its
lower or upper neighbour: the dashboard shows the same preview as ` + "`split`" + `
and ` + "`merge`" + `, asks for y, then shows progress until the stream is ACTIVE
and the new tree. --read-only hides both.

Keys: ↑/↓ or k/j move, tab switches panes, / filters, s split, m merge,
p pause, r refresh, ? help, q quit. The dashboard needs a terminal.`,
		Example: `  kinesis-shards dashboard
  kinesis-shards dashboard orders
  kinesis-shards dashboard orders --read-only --checkpoint ./orders.checkpoint
  kinesis-shards dashboard orders --kcl-table orders-app
  kinesis-shards dashboard orders --efo`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("dashboard takes at most one STREAM (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "hide split and merge")
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "show the positions saved in this tail checkpoint `FILE`")
	fl.DurationVar(&opts.Refresh, "refresh", 5*time.Second, "how often the shards are listed again (≥ 1s)")
	fl.DurationVar(&opts.PollInterval, "poll-interval", tail.DefaultPollInterval, "how often the sampling reader polls a caught-up shard (≥ 200ms)")
	fl.BoolVar(&opts.Paused, "paused", false, "start with the sampling reader paused: no GetRecords call until p is pressed")
	fl.StringVar(&opts.KCLTable, "kcl-table", "", "overlay a KCL application's DynamoDB lease `TABLE` on the tree (owners, checkpoints, blocked children) and show its lag")
	fl.StringVar(&opts.LeaseTable, "lease-table", "", "overlay the DynamoDB lease `TABLE` of tail --lease-table workers on the tree and show their lag")
	fl.BoolVar(&opts.EFO, "efo", false, "sample through an enhanced fan-out consumer of the dashboard's own, deregistered on quit (billed per consumer-shard hour and GB)")
	return c
}

func (o *DashboardOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	stream := ""
	if len(args) == 1 {
		stream = args[0]
	}
	o.completeBase(f, c, stream)
	o.output, o.terminal = f.Global.Output, f.IO.StdinTTY && f.IO.StdoutTTY
	return nil
}

// validate checks the flags and the terminal before any call.
func (o *DashboardOptions) validate() error {
	if !o.terminal {
		return usageErrorf("dashboard needs a terminal (stdin and stdout); in scripts use `streams`, `tree STREAM` or `tail STREAM`")
	}
	if o.output != "" {
		return usageErrorf("dashboard has no -o/--output: it is interactive")
	}
	switch {
	case o.Refresh < time.Second:
		return usageErrorf("--refresh must be at least 1s")
	case o.PollInterval < 200*time.Millisecond:
		return usageErrorf("--poll-interval must be at least 200ms: a shard serves 5 GetRecords calls per second to all its readers")
	case o.EFO && o.given["poll-interval"]:
		return usageErrorf("--poll-interval does not go with --efo: subscribed shards are not polled, their records are pushed as they come")
	}
	if o.given["kcl-table"] && o.given["lease-table"] {
		return usageErrorf("--kcl-table and --lease-table do not go together: the tree shows one lease table")
	}
	for flag, table := range map[string]string{"kcl-table": o.KCLTable, "lease-table": o.LeaseTable} {
		if o.given[flag] {
			if err := checkTableName("--"+flag, table); err != nil {
				return err
			}
		}
	}
	return o.validateBase()
}

func (o *DashboardOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisWithLeases(ctx, o.Ref, o.KCLTable+o.LeaseTable, &o.Leases)
	if err != nil {
		return err
	}
	return runDashboard(ctx, f, client, o.Ref, o)
}

func runDashboard(ctx context.Context, f *Factory, api dashboardAPI, ref kstream.Ref, o *DashboardOptions) error {
	if ref.Name != "" {
		// A stream that is not there is a plain error before the screen
		// opens, worded as every command words it.
		if _, err := kstream.Describe(ctx, api, ref); err != nil {
			return err
		}
	}
	describe := func(err error) string { return text.OneLine(wordError(err, f.errCtx)) }
	// LAG follows the lease table when there is one: the checkpoint file
	// has its own column.
	lag := lagSource("", o.LeaseTable, o.KCLTable, o.Leases)
	if lag == nil && o.Checkpoint != "" {
		lag = lagSource(o.Checkpoint, "", "", nil)
	}
	backend := &dashboardBackend{api: api, leases: o.Leases, table: o.KCLTable + o.LeaseTable, lag: lag, describe: describe}
	if o.EFO {
		eapi, ok := api.(dashboardEFOAPI)
		if !ok {
			return errors.New("dashboard --efo: the client cannot subscribe")
		}
		backend.efo = newDashboardEFO(f, eapi)
		// After the screen is gone, whatever ends the dashboard.
		defer backend.efo.close()
	}
	model := dashboard.New(dashboard.Options{
		Backend:         backend,
		Stream:          ref,
		ReadOnly:        o.ReadOnly,
		Theme:           render.NewTheme(f.IO.ColorOut()),
		Checkpoint:      o.Checkpoint,
		LeaseOverlay:    o.KCLTable+o.LeaseTable != "",
		Lag:             lag != nil,
		DescribeError:   describe,
		Now:             f.Now,
		RefreshInterval: o.Refresh,
		PollInterval:    o.PollInterval,
		Paused:          o.Paused,
		Context:         ctx,
	})
	p := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithInput(f.IO.In), tea.WithOutput(f.IO.Out))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	}
	return err
}
