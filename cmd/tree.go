package cmd

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// treeAPI is what `tree` needs from the client.
type treeAPI interface {
	kstream.DescribeAPI
	lineage.ShardLister
}

var _ treeAPI = (*kinesis.Client)(nil)

// TreeOptions are the inputs of `tree`.
type TreeOptions struct {
	base
	Output string
	Open   bool
	// At, when set, selects the shards open at that time (--at).
	At   *time.Time
	Wide bool
	// Key, when set, is the partition key whose path is marked (--key).
	Key *string
	// KCLTable, when set, overlays a KCL application's lease table.
	KCLTable string
	// Leases reads the lease table (cmd wires DynamoDB; tests a fake).
	Leases leases.DynamoAPI

	// As given, for validation: --at and --key, and the clock.
	atArg, keyArg string
	now           time.Time
}

func newTreeCmd(f *Factory, runF func(*TreeOptions) error) *cobra.Command {
	opts := &TreeOptions{}
	c := &cobra.Command{
		Use:   "tree STREAM",
		Short: "Draw the lineage of a stream's shards: splits, merges, open and closed shards",
		Long: `List every shard of the stream (all pages of ListShards) and draw the lineage:
parents above children, each shard with its state (● open, ○ closed,
✂ trimmed: a parent a child names but retention removed), its share of the
hash key space and, with --wide, its decimal hash range and sequence range.

A merge child has two parents. The tree draws it under the parent shown
last, marked "merge of A + B", and puts a back reference (╌▷) under the
other parent, so both edges are visible where they start.

Output (-o): tree (the default, coloured on a terminal), table, json, dot
(Graphviz: kinesis-shards tree S -o dot | dot -Tsvg > lineage.svg) and
mermaid (a flowchart for Markdown). Shards come parents first. Ids are
short (7 for shardId-000000000007) on a terminal, full otherwise.

--open shows only the open shards. --at TIMESTAMP shows the shards that
were open at that time (ListShards with the AT_TIMESTAMP filter); when the
service's answer is evidently unfiltered (kinesalite ignores filters) it
says so and shows every shard. --open and --at do not go together: --at
now is --open. --key PARTITION_KEY marks the shards that held the key, from
the oldest retained one to the open one (its MD5 hash is within their hash
ranges); an on-demand stream with RecordDistributionStrategy AUTO ignores
keys, and the tool says so instead.`,
		Example: `  kinesis-shards tree orders
  kinesis-shards tree orders --key customer-42 --wide
  kinesis-shards tree orders --at 2h -o table
  kinesis-shards tree orders -o dot | dot -Tsvg > lineage.svg
  kinesis-shards tree orders -o json | jq -r '.shards[] | select(.state == "open") | .shardId'`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.BoolVar(&opts.Open, "open", false, "show only the open shards")
	fl.StringVar(&opts.atArg, "at", "", "show the shards open at `TIMESTAMP` (RFC 3339, Unix seconds, or a duration ago such as 2h)")
	fl.BoolVar(&opts.Wide, "wide", false, "add the decimal hash range and the sequence range (tree and table)")
	fl.StringVar(&opts.keyArg, "key", "", "mark the shards that held `PARTITION_KEY`, root to open shard")
	fl.StringVar(&opts.KCLTable, "kcl-table", "", "overlay a KCL application's DynamoDB lease `TABLE`: owners, checkpoints, blocked children")
	return c
}

func (o *TreeOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output, o.now = f.Global.Output, f.Now()
	return nil
}

func (o *TreeOptions) validate() (err error) {
	if o.Output, err = outputFormat("tree", o.Output); err != nil {
		return err
	}
	if o.given["at"] {
		if o.Open {
			return usageErrorf("--open and --at do not go together: --at shows the shards open at that time, --open those open now")
		}
		t, err := parseTimestamp(o.atArg, o.now)
		if err != nil {
			return usageErrorf("--at: %v", err)
		}
		o.At = &t
	}
	if o.given["key"] {
		if err := checkPartitionKey(o.keyArg); err != nil {
			return usageErrorf("--key: %v", err)
		}
		o.Key = &o.keyArg
	}
	if o.given["kcl-table"] {
		if err := checkTableName("--kcl-table", o.KCLTable); err != nil {
			return err
		}
	}
	return o.validateBase()
}

func (o *TreeOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisWithLeases(ctx, o.Ref, o.KCLTable, &o.Leases)
	if err != nil {
		return err
	}
	return runTree(ctx, f, client, o.Ref, o)
}

func runTree(ctx context.Context, f *Factory, api treeAPI, ref kstream.Ref, opts *TreeOptions) error {
	sum, err := kstream.Describe(ctx, api, ref)
	if err != nil {
		return err
	}
	list := lineage.ListOptions{StreamName: ref.Name, StreamARN: ref.ARN}

	// --at: the filtered listing only says which shards were open at T. Its
	// parents are missing from it (Build would call them trimmed), so the
	// states and the lineage come from the whole listing, taken after it so
	// that it holds every shard the filtered one names.
	var atListing []types.Shard
	beforeCreation := opts.At != nil && !sum.Created.IsZero() && opts.At.Before(sum.Created)
	if opts.At != nil && !beforeCreation {
		filtered := list
		filtered.Filter = &types.ShardFilter{Type: types.ShardFilterTypeAtTimestamp, Timestamp: aws.Time(*opts.At)}
		if atListing, err = lineage.ListShards(ctx, api, filtered); err != nil {
			return err
		}
	}
	g, err := lineage.Load(ctx, api, list)
	if err != nil {
		return err
	}

	l := &render.Lineage{Stream: sum.Name, StreamARN: sum.ARN, Status: string(sum.Status), Mode: sum.ModeName(), Graph: g}
	switch {
	case opts.Open:
		l.Only, l.Filter = map[string]bool{}, "open"
		for _, s := range g.Open() {
			l.Only[s.ID] = true
		}
	case beforeCreation:
		// Nothing was open yet; kinesis-mock would answer with every shard.
		l.Only, l.Filter, l.At = map[string]bool{}, "at", *opts.At
		fmt.Fprintf(f.IO.ErrOut, "note: stream %s was created at %s, after %s: no shard was open then\n",
			sum.Name, sum.Created.UTC().Format(time.RFC3339), opts.At.UTC().Format(time.RFC3339))
	case opts.At != nil:
		at := opts.At.UTC().Format(time.RFC3339)
		only, tiles := openAt(g, atListing)
		switch {
		case len(only) == 0:
			l.Only, l.Filter, l.At = only, "at", *opts.At
			fmt.Fprintf(f.IO.ErrOut, "note: the service lists no shard of stream %s as open at %s\n", sum.Name, at)
		case tiles:
			l.Only, l.Filter, l.At = only, "at", *opts.At
		default:
			fmt.Fprintf(f.IO.ErrOut, "warning: cannot tell which shards were open at %s: the service's answer (%d shards) is not one set of shards covering the key space "+
				"(a backend that ignores the AT_TIMESTAMP filter, or a time within a reshard); showing every shard\n", at, len(only))
		}
	}
	if opts.Key != nil {
		if sum.IgnoresPartitionKeys() {
			why := "the stream places records without regard to their partition keys (RecordDistributionStrategy AUTO)"
			l.Key = &render.KeyMark{Key: *opts.Key, Hash: lineage.PartitionKeyHash(*opts.Key), NoPath: why}
			fmt.Fprintf(f.IO.ErrOut, "note: --key marks no path: %s\n", why)
		} else {
			l.Key = render.NewKeyMark(g, *opts.Key)
		}
	}
	if opts.KCLTable != "" {
		if err := overlayLeases(ctx, f, l, sum, opts); err != nil {
			return err
		}
	}
	return writeLineage(f, l, opts)
}

// overlayLeases reads a KCL lease table and lays it over the lineage: the
// answer to "why is my consumer stuck after a reshard?".
func overlayLeases(ctx context.Context, f *Factory, l *render.Lineage, sum *kstream.Summary, opts *TreeOptions) error {
	d, rows, err := consumer.DiagnoseLeases(ctx, opts.Leases, opts.KCLTable, l.Graph, sum)
	if err != nil {
		return err
	}
	l.LeaseTable = opts.KCLTable
	l.Leases = leaseMarks(d)
	blocked := 0
	for _, s := range l.Graph.Shards() {
		if sl := d.Shards[s.ID]; sl != nil && sl.Blocked {
			blocked++
			fmt.Fprintf(f.IO.ErrOut, "blocked: shard %s %s\n", lineage.ShortID(s.ID), sl.Reason)
		}
	}
	if rows == 0 {
		fmt.Fprintf(f.IO.ErrOut, "note: lease table %s holds no leases\n", opts.KCLTable)
	}
	if d.OtherStreams > 0 {
		fmt.Fprintf(f.IO.ErrOut, "note: %d lease(s) of other streams in %s were left out\n", d.OtherStreams, opts.KCLTable)
	}
	if len(d.Orphans) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "note: %d lease(s) name shards the stream no longer lists (trimmed, or stale rows)\n", len(d.Orphans))
	}
	if blocked == 0 && rows > 0 {
		fmt.Fprintf(f.IO.ErrOut, "lease table %s: no child is blocked by an unfinished parent\n", opts.KCLTable)
	}
	return nil
}

// leaseMarks turns a diagnosis into the renderers' overlay.
func leaseMarks(d *leases.Diagnosis) map[string]*render.LeaseMark {
	out := make(map[string]*render.LeaseMark, len(d.Shards))
	for shard, sl := range d.Shards {
		m := &render.LeaseMark{Lease: sl.Lease != nil, ShardEnd: sl.Finished, Blocked: sl.Blocked,
			BlockedBy: sl.BlockedBy, Blocking: sl.Blocking, Reason: sl.Reason}
		if sl.Lease != nil {
			m.Owner, m.Checkpoint = sl.Lease.Owner, sl.Lease.Checkpoint
		}
		out[shard] = m
	}
	return out
}

// openAt takes the shards of an AT_TIMESTAMP listing from g, with their
// real states, and reports whether they tile the key space exactly once,
// as the shards open at one time do. They do not when the backend ignored
// the filter (kinesalite does) or the time fell within a reshard.
func openAt(g *lineage.Graph, listed []types.Shard) (only map[string]bool, tiles bool) {
	only = make(map[string]bool, len(listed))
	ranges := make([]lineage.HashRange, 0, len(listed))
	for _, ls := range listed {
		s := g.Shard(aws.ToString(ls.ShardId))
		if s == nil || s.IsTrimmed() || only[s.ID] {
			continue
		}
		only[s.ID] = true
		ranges = append(ranges, s.Range)
	}
	return only, lineage.CheckCoverage(ranges) == nil
}

// writeLineage writes l in the chosen format.
func writeLineage(f *Factory, l *render.Lineage, opts *TreeOptions) error {
	tty := f.IO.StdoutTTY
	theme := render.NewTheme(f.IO.ColorOut())
	w := f.IO.Out
	switch opts.Output {
	case "table":
		return render.LineageTable(w, l, render.TableOptions{Theme: theme, ShortIDs: tty, Wide: opts.Wide})
	case "json":
		return render.LineageJSON(w, l)
	case "dot":
		return render.LineageDot(w, l)
	case "mermaid":
		// Mermaid's default configuration (maxEdges 500, maxTextSize
		// 50,000 characters) refuses bigger diagrams, and GitHub cannot
		// raise either.
		var buf bytes.Buffer
		if err := render.LineageMermaid(&buf, l); err != nil {
			return err
		}
		edges := 0
		for _, s := range l.Graph.Shards() {
			for _, p := range s.Parents {
				if l.Only == nil || l.Only[s.ID] && l.Only[p] {
					edges++
				}
			}
		}
		if edges > 500 || buf.Len() > 50000 {
			fmt.Fprintf(f.IO.ErrOut, "warning: this diagram has %d edges and %d characters; Mermaid's default configuration draws at most 500 edges (maxEdges) and 50,000 characters (maxTextSize), and GitHub cannot raise them, so it will not render there: show fewer shards with --open or --at TIMESTAMP\n", edges, buf.Len())
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	o := render.TreeOptions{Theme: theme, ShortIDs: tty, Wide: opts.Wide, Only: l.Only, Leases: l.Leases}
	if l.Key != nil {
		o.KeyPath = l.Key.Path
	}
	if tty && !opts.Wide {
		o.Width = f.IO.Width // --wide asked for long lines; never cut those
	}
	return render.Tree(w, l.Graph, o)
}
