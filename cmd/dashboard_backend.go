package cmd

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// dashboardAPI is what the dashboard's backend needs from the Kinesis
// client: ListStreams for the picker, the listing and reshard calls, and
// GetShardIterator and GetRecords for the sampling reader and the sample
// of a balanced split.
type dashboardAPI interface {
	kinesis.ListStreamsAPIClient
	tail.API
	reshardAPI
}

var (
	_ dashboardAPI      = (*kinesis.Client)(nil)
	_ dashboard.Backend = (*dashboardBackend)(nil)
)

// dashboardBackend is the dashboard's Backend over the real clients: each
// method is the call the commands make for the same thing (streams lists,
// tree lists and reads leases, split and merge run the executor, tail
// reads), so the dashboard says what they say.
type dashboardBackend struct {
	api dashboardAPI
	// leases and table: the --kcl-table or --lease-table overlay (nil and
	// "" without it).
	leases leases.DynamoAPI
	table  string
	// lag is the LAG column's source (nil without one).
	lag consumer.Source
	// describe words a shard's failure as the commands do.
	describe func(error) string
	// efo: with --efo, the sampling reader subscribes (dashboard_efo.go).
	efo *dashboardEFO
}

func (b *dashboardBackend) ListStreams(ctx context.Context) ([]string, error) {
	return kstream.StreamNames(ctx, b.api, 0)
}

func (b *dashboardBackend) Describe(ctx context.Context, ref kstream.Ref) (*kstream.Summary, error) {
	return kstream.Describe(ctx, b.api, ref)
}

func (b *dashboardBackend) ListShards(ctx context.Context, ref kstream.Ref) (*lineage.Graph, error) {
	return lineage.Load(ctx, b.api, lineage.ListOptions{StreamName: ref.Name, StreamARN: ref.ARN})
}

func (b *dashboardBackend) Quota(ctx context.Context) (*reshard.Quota, error) {
	return reshard.LoadQuota(ctx, b.api)
}

func (b *dashboardBackend) Sample(ctx context.Context, ref kstream.Ref, shards []*lineage.Shard, o reshard.SampleOptions) (*reshard.Sample, error) {
	return reshard.SampleTraffic(ctx, b.api, ref, shards, o)
}

func (b *dashboardBackend) Reshard(ctx context.Context, ref kstream.Ref, p *reshard.Plan, o dashboard.ReshardOptions) (*reshard.Result, error) {
	x := &reshard.Executor{API: b.api, Stream: ref, Wait: o.Wait, OnEvent: o.OnEvent}
	return x.Run(ctx, p)
}

// Read is a tail from the tip of every open shard, with tail's pacing (at
// most one GetRecords per shard per poll interval while caught up, never
// more than five a second) and its positions kept in memory only.
func (b *dashboardBackend) Read(ctx context.Context, ref kstream.Ref, o dashboard.ReadOptions) error {
	opts := tail.Options{StreamName: ref.Name, StreamARN: ref.ARN, Start: tail.StartLatest, PollInterval: o.PollInterval, OnPoll: o.OnPoll}
	deliver := func(batch []tail.Record) error {
		o.OnRecords(batch)
		return nil
	}
	if b.efo != nil {
		return b.efo.read(ctx, ref, o, deliver)
	}
	_, err := tail.New(b.api, tail.NewMemoryStore(nil), opts, deliver).Run(ctx)
	return err
}

func (b *dashboardBackend) ReadCheckpoint(path string) (tail.StreamIdentity, map[string]tail.Position, error) {
	return tail.ReadCheckpoint(path)
}

// Leases reads the --kcl-table overlay as `tree --kcl-table` does.
func (b *dashboardBackend) Leases(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error) {
	d, _, err := consumer.DiagnoseLeases(ctx, b.leases, b.table, g, sum)
	if err != nil {
		return nil, err
	}
	return leaseMarks(d), nil
}

// Lag reads the consumer's positions and measures them as `lag` does.
func (b *dashboardBackend) Lag(ctx context.Context, ref kstream.Ref, g *lineage.Graph, sum *kstream.Summary, measure bool) (*consumer.Report, error) {
	return consumer.Lag(ctx, b.api, ref, g, sum, b.lag, consumer.Options{Measure: measure, DescribeError: b.describe})
}
