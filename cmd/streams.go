package cmd

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// streamsAPI is what `streams` needs from the client.
type streamsAPI interface {
	kinesis.ListStreamsAPIClient
	kstream.DescribeAPI
	lineage.ShardLister
}

var _ streamsAPI = (*kinesis.Client)(nil)

// StreamsOptions are the inputs of `streams`.
type StreamsOptions struct {
	base
	Output string
	// DescribeEvery spaces DescribeStreamSummary calls (20 TPS per account).
	DescribeEvery time.Duration
	Workers       int
	// PageSize is ListStreams' Limit (0: the service's default, 100).
	PageSize int32
}

func newStreamsCmd(f *Factory, runF func(*StreamsOptions) error) *cobra.Command {
	opts := &StreamsOptions{DescribeEvery: 100 * time.Millisecond, Workers: 8}
	return &cobra.Command{
		Use:   "streams",
		Short: "List streams with status, mode, open/total shards and retention",
		Long: `List every stream of the region (all pages of ListStreams) with its status,
capacity mode, open and total shard counts (total includes closed shards
still within retention) and retention period.

Output: -o table (default) or -o json.`,
		Example: `  kinesis-shards streams
  kinesis-shards streams -o json | jq -r '.streams[] | select(.openShards > 10) | .stream'`,
		Args: noArgs,
		RunE: runE(f, opts, runF),
	}
}

func (o *StreamsOptions) complete(f *Factory, c *cobra.Command, _ []string) error {
	o.completeBase(f, c, "")
	o.Output = f.Global.Output
	return nil
}

func (o *StreamsOptions) validate() (err error) {
	if o.Output, err = outputFormat("streams", o.Output); err != nil {
		return err
	}
	return o.validateBase()
}

func (o *StreamsOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runStreams(ctx, f, client, o)
}

func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments (got %q)", c.CommandPath(), args[0])
	}
	return nil
}

func runStreams(ctx context.Context, f *Factory, api streamsAPI, opts *StreamsOptions) error {
	names, err := kstream.StreamNames(ctx, api, opts.PageSize)
	if err != nil {
		return err
	}
	refs := make([]kstream.Ref, len(names))
	for i, name := range names {
		refs[i] = kstream.Ref{Name: name}
	}
	infos := make([]*streamInfo, len(refs))
	errs := make([]error, len(refs))

	// Describe is rate-limited account-wide; ListShards per stream.
	tick := time.NewTicker(max(opts.DescribeEvery, time.Millisecond))
	defer tick.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(opts.Workers, 1) {
		wg.Go(func() {
			for i := range jobs {
				infos[i], errs[i] = describeForList(ctx, api, refs[i], tick.C)
				if errs[i] != nil {
					cancel()
				}
			}
		})
	}
feed:
	for i := range refs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	list := make([]streamInfo, 0, len(refs))
	for i := range refs {
		if errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
			return errs[i]
		}
		if infos[i] != nil {
			list = append(list, *infos[i])
		}
	}
	if err := ctx.Err(); err != nil && len(list) < len(refs) {
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return e
			}
		}
		return err
	}
	if opts.Output == "json" {
		return render.JSON(f.IO.Out, struct {
			Streams []streamInfo `json:"streams"`
		}{list})
	}
	if len(list) == 0 {
		f.IO.ErrOut.Write([]byte("no streams\n"))
		return nil
	}
	rows := make([][]string, len(list))
	for i, s := range list {
		rows[i] = s.row()
	}
	return render.Table(f.IO.Out, streamHeader, rows)
}

// describeForList describes one stream and counts its shards. A stream
// deleted since ListStreams is dropped (nil, nil); shard counts of a stream
// that cannot be listed right now (CREATING, DELETING) are left empty. Both
// calls wait out a rate limit under the read-retry policy.
func describeForList(ctx context.Context, api streamsAPI, ref kstream.Ref, tick <-chan time.Time) (*streamInfo, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-tick:
	}
	sum, err := kstream.Describe(ctx, api, ref)
	switch {
	case awserr.Of(err) == awserr.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	info := streamInfoFrom(sum, nil)
	if sum.Status == types.StreamStatusCreating || sum.Status == types.StreamStatusDeleting {
		return &info, nil
	}
	shards, err := lineage.ListShards(ctx, api, lineage.ListOptions{StreamName: sum.Name})
	switch {
	case err == nil:
		total, open := len(shards), 0
		for _, s := range shards {
			if s.SequenceNumberRange == nil || s.SequenceNumberRange.EndingSequenceNumber == nil {
				open++
			}
		}
		info.TotalShards = &total
		if info.OpenShards == 0 {
			info.OpenShards = open
		}
	case awserr.Of(err) == awserr.InUse:
	case awserr.Of(err) == awserr.NotFound:
		return nil, nil
	default:
		return nil, err
	}
	return &info, nil
}
