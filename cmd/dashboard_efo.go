package cmd

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// dashboard --efo: the sampling reader subscribes through a consumer of
// the dashboard's own, so its figures take nothing from the stream's
// other readers.

// dashboardEFOAPI is what the subscribed sampling reader needs from the
// client: the listings of a tail, the consumer calls, SubscribeToShard.
type dashboardEFOAPI interface {
	tail.API
	kstream.DescribeAPI
	kstream.ConsumerAPI
	tail.EFOAPI
}

var _ dashboardEFOAPI = (*kinesis.Client)(nil)

// dashboardEFO keeps the dashboard's consumers: one per stream it sampled,
// registered (or reused) at the stream's first read and deregistered when
// the dashboard quits. It is used from the readers' tea.Cmds.
type dashboardEFO struct {
	f     *Factory
	api   dashboardEFOAPI
	pacer *efo.Pacer

	mu        sync.Mutex
	consumers map[string]*efoConsumer // by stream ARN
}

func newDashboardEFO(f *Factory, api dashboardEFOAPI) *dashboardEFO {
	return &dashboardEFO{f: f, api: api, pacer: efo.NewPacer(0), consumers: map[string]*efoConsumer{}}
}

// read is Backend.Read through the stream's consumer.
func (d *dashboardEFO) read(ctx context.Context, ref kstream.Ref, o dashboard.ReadOptions, deliver tail.DeliverFunc) error {
	sum, err := kstream.Describe(ctx, d.api, ref)
	if err != nil {
		return err
	}
	c, err := d.consumer(ctx, sum)
	if err != nil {
		return err
	}
	opts := tail.Options{StreamName: sum.Name, StreamARN: sum.ARN, Start: tail.StartLatest, OnPoll: o.OnPoll, EFO: c.tailEFO(d.api, d.pacer)}
	_, err = tail.New(d.api, tail.NewMemoryStore(nil), opts, deliver).Run(ctx)
	return efoRunError(err, c)
}

// consumer is the stream's consumer, made ACTIVE at its first read; the
// screen is on, so nothing is said until the dashboard quits.
func (d *dashboardEFO) consumer(ctx context.Context, sum *kstream.Summary) (*efoConsumer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.consumers[sum.ARN]; c != nil {
		return c, nil
	}
	c, err := openConsumer(ctx, d.f, d.api, sum, defaultConsumerName("dashboard"), false, true)
	if err != nil {
		return nil, err
	}
	d.consumers[sum.ARN] = c
	return c, nil
}

// close deregisters every consumer and says what it did, once the screen
// is gone.
func (d *dashboardEFO) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for arn, c := range d.consumers {
		if c.created {
			fmt.Fprintf(d.f.IO.ErrOut, "the dashboard registered enhanced fan-out consumer %s of stream %s\n%s\n", c.c.Name, c.ref, efoBillingNote)
		}
		if c.close() {
			fmt.Fprintf(d.f.IO.ErrOut, "deregistered consumer %s of stream %s\n", c.c.Name, c.ref)
		} else if c.keep {
			fmt.Fprintf(d.f.IO.ErrOut, "consumer %s of stream %s is left registered: another reader uses it\n", c.c.Name, c.ref)
		}
		delete(d.consumers, arn)
	}
}
