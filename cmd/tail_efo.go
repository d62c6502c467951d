package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/pflag"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Enhanced fan-out for `tail --efo` and `dashboard --efo`: the consumer a
// run reads with, from registration (or reuse) to deregistration.

// deregisterTimeout bounds the deregistration at exit: it runs after
// Ctrl-C, on a context of its own.
const deregisterTimeout = 10 * time.Second

func addTailEFOFlags(fl *pflag.FlagSet, o *TailOptions) {
	fl.BoolVar(&o.EFO, "efo", false, "read through an enhanced fan-out consumer (SubscribeToShard): 2 MiB/s per shard of its own, pushed; billed per consumer-shard hour and GB")
	fl.StringVar(&o.Consumer, "consumer", "", "with --efo: use (or create) the consumer `NAME` and keep it (default: one named for user and host, deregistered at exit)")
}

// validateEFO checks --efo and --consumer against the other flags.
func (o *TailOptions) validateEFO() error {
	if !o.EFO {
		if o.given["consumer"] {
			return usageErrorf("--consumer goes with --efo")
		}
		return nil
	}
	switch {
	case o.LeaseTable != "" || o.given["lease-table"]:
		// The KCL's way is one consumer per application, shared by every
		// worker and never deregistered by one of them; tail registers one
		// per run and deregisters it at exit, which would cut the others'
		// subscriptions.
		return usageErrorf("--efo does not go with --lease-table: the workers of a table would share one consumer that none of them may deregister; share the table polling, or read with one tail --efo")
	case o.given["poll-interval"]:
		return usageErrorf("--poll-interval does not go with --efo: subscribed shards are not polled, their records are pushed as they come")
	}
	if o.given["consumer"] {
		if err := kstream.ValidateConsumerName(o.Consumer); err != nil {
			return usageErrorf("--consumer: %v", err)
		}
	}
	return nil
}

// efoConsumer is the consumer a run reads with.
type efoConsumer struct {
	f       *Factory
	api     kstream.ConsumerAPI
	ref     kstream.Ref // with the stream's ARN
	c       *kstream.Consumer
	created bool
	keep    bool // not deregistered at exit
}

// defaultConsumerName is the consumer of a user on this host, prefixed
// for another kind of reader (the dashboard's own).
func defaultConsumerName(kind string) string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if kind != "" {
		name = kind + "-" + name
	}
	return kstream.DefaultConsumerName(name, host)
}

// openConsumer makes the named consumer ACTIVE (registering it if it does
// not exist), with progress on stderr while it is CREATING (or a previous
// run's is DELETING). A consumer this run registered is billed from now
// on: that is said once. quiet says nothing on stderr (the dashboard's
// screen is on the terminal; it tells after it quits).
func openConsumer(ctx context.Context, f *Factory, api kstream.ConsumerAPI, sum *kstream.Summary, name string, keep, quiet bool) (*efoConsumer, error) {
	ref := kstream.Ref{Name: sum.Name, ARN: sum.ARN}
	var wait kstream.ConsumerWaitOptions
	stop := func(error) {}
	if !quiet {
		wait.OnPoll, stop = consumerProgress(f, ref, name, true)
	}
	c, created, err := kstream.EnsureConsumer(ctx, api, ref, name, wait)
	stop(err)
	if err != nil {
		if created {
			// Registered, but not ACTIVE: leave nothing behind.
			e := &efoConsumer{f: f, api: api, ref: ref, c: &kstream.Consumer{Name: name}}
			e.close()
		}
		return nil, err
	}
	if created && !quiet {
		fmt.Fprintf(f.IO.ErrOut, "registered enhanced fan-out consumer %s of stream %s\n%s\n", c.Name, ref, efoBillingNote)
	}
	f.Debugf("enhanced fan-out consumer %s (%s), %s", c.Name, c.ARN, map[bool]string{true: "kept at exit", false: "deregistered at exit"}[keep])
	return &efoConsumer{f: f, api: api, ref: ref, c: c, created: created, keep: keep}, nil
}

// openTailConsumer is tail's consumer: --consumer NAME, kept; or the
// user's on this host for what the run reads, deregistered at exit (a
// killed tail leaves it, and the next reuses it).
func openTailConsumer(ctx context.Context, f *Factory, api kstream.ConsumerAPI, sum *kstream.Summary, o *TailOptions) (*efoConsumer, error) {
	if o.Consumer != "" {
		return openConsumer(ctx, f, api, sum, o.Consumer, true, false)
	}
	return openConsumer(ctx, f, api, sum, tailConsumerName(o), false, false)
}

// tailConsumerName is the default consumer of a run: the user's on this
// host, with the run's filter (filterSuffix), so that two tails of one
// stream reading different shards or records (--shard 0 and --shard 1,
// two --key) do not share a consumer, which the first to exit would
// deregister under the other. Two runs of the same filter share it, and
// the second is told so (the service's ResourceInUse).
func tailConsumerName(o *TailOptions) string {
	base, suffix := defaultConsumerName(""), o.filterSuffix()
	if len(base)+len(suffix) > 128 {
		base = base[:128-len(suffix)]
	}
	return base + suffix
}

// tailEFO is what a run reads with.
func (e *efoConsumer) tailEFO(api tail.EFOAPI, pacer *efo.Pacer) *tail.EFO {
	return &tail.EFO{API: api, ConsumerARN: e.c.ARN, Pacer: pacer}
}

// close deregisters a consumer that is not kept, on a context of its own
// (the run's may be cancelled: Ctrl-C), and reports whether it did. It
// does not wait for the consumer to be gone: AWS takes a while, and the
// next run waits if it must.
func (e *efoConsumer) close() bool {
	if e == nil || e.keep {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), deregisterTimeout)
	defer cancel()
	err := kstream.DeregisterConsumer(ctx, e.api, e.ref, e.c.Name)
	switch {
	case errors.Is(err, kstream.ErrConsumerNotFound):
	case err != nil:
		fmt.Fprintf(e.f.IO.ErrOut, "warning: consumer %s of stream %s is still registered (and billed): %v; remove it with `kinesis-shards consumers %s --deregister %s --yes`\n",
			e.c.Name, e.ref, err, e.ref.Name, e.c.Name)
		return false
	default:
		e.f.Debugf("deregistered consumer %s of stream %s", e.c.Name, e.ref)
	}
	return true
}

// consumerProgress shows a wait for a consumer on stderr (the first
// status that is not the goal starts it): onPoll for the wait's OnPoll,
// stop for its end.
func consumerProgress(f *Factory, ref kstream.Ref, name string, active bool) (onPoll func(types.ConsumerStatus, time.Duration), stop func(error)) {
	var p *progress
	goal := "ACTIVE"
	if !active {
		goal = "gone"
	}
	onPoll = func(status types.ConsumerStatus, _ time.Duration) {
		if status == "" || (active && status == types.ConsumerStatusActive) {
			return // there: the final line says so
		}
		msg := fmt.Sprintf("waiting for consumer %s of stream %s to be %s (%s)", name, ref, goal, status)
		if p == nil {
			p = f.startProgress(msg)
		} else {
			p.Update(msg)
		}
	}
	stop = func(err error) {
		if p == nil {
			return
		}
		final := ""
		if err == nil {
			final = fmt.Sprintf("consumer %s is %s after %s", name, goal, formatDuration(p.Elapsed()))
		}
		p.Stop(final)
	}
	return onPoll, stop
}

// efoRunError words what only a subscribed run meets. A consumer that
// another process reads with is left registered: deregistering it would
// cut that one's subscriptions.
func efoRunError(err error, c *efoConsumer) error {
	var iu *efo.InUseError
	if errors.As(err, &iu) {
		c.keep = true
		return fmt.Errorf("another tail with consumer %s is reading shard %s (%s for over %s): give each tail its own --consumer NAME",
			iu.Consumer, iu.ShardID, iu.Code(), efo.DefaultInUseTimeout)
	}
	return err
}
