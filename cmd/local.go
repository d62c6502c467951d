package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
)

// LocalOptions are the inputs of `local`.
type LocalOptions struct {
	Host       string
	Port       int
	ShardLimit int
	StateDelay time.Duration
	Quotas     bool

	// ready, for tests: called with the address once the server listens.
	ready func(addr string)
}

func newLocalCmd(f *Factory, runF func(*LocalOptions) error) *cobra.Command {
	opts := &LocalOptions{Host: "127.0.0.1", Port: 4567, ShardLimit: 500, Quotas: true}
	c := &cobra.Command{
		Use:   "local",
		Short: "Serve an in-memory Kinesis on a port, for trying the tool and testing consumers",
		Long: `Serve a Kinesis of its own, in memory, on a port: the Kinesis API over HTTP
(the JSON protocol the SDKs speak) with the service's rules for hash ranges
and partition-key routing, splits and merges (parents closed, children
opened, ChildShards at a shard's end), iterators of every type (expiring
after five minutes), ListShards paging, the account's shard quota, the
limits of PutRecords, and each shard's read and write quotas (5 calls and
2 MiB a second of reads, 1,000 records and 1 MiB a second of writes), over
which calls are throttled as the service throttles them, and enhanced
fan-out (consumers and SubscribeToShard's event stream). Point this
tool, an SDK or your own consumer at it with the export lines it prints
on stdout; stop it with Ctrl-C. Nothing is kept after it stops.

It listens on 127.0.0.1 unless --host says otherwise; it accepts any
credentials and any signature, so it says so on stderr when it listens on
another address. It does not serve tags, encryption, stream mode or
retention changes: those calls get UnknownOperationException.

--state-delay keeps a new stream CREATING, a resharded one UPDATING and a
deleted one DELETING that long, as the service does for some seconds
(default 0: every change is instant).`,
		Example: `  kinesis-shards local
  kinesis-shards local --port 4568 --shard-limit 50 --state-delay 2s
  # in another shell, with the lines it printed:
  export AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:4567 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
  kinesis-shards create orders --shards 2 --yes`,
		Args: noArgs,
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.StringVar(&opts.Host, "host", opts.Host, "address to listen on (anything but 127.0.0.1 or ::1 is reachable from other machines)")
	fl.IntVar(&opts.Port, "port", opts.Port, "port to listen on (0: any free port)")
	fl.IntVar(&opts.ShardLimit, "shard-limit", opts.ShardLimit, "the account's shard quota: open shards of every stream together")
	fl.DurationVar(&opts.StateDelay, "state-delay", 0, "how long a stream stays CREATING, UPDATING or DELETING after a change")
	fl.BoolVar(&opts.Quotas, "quotas", opts.Quotas, "throttle what goes over each shard's read and write quotas, and expire iterators after five minutes (--quotas=false serves every call)")
	return c
}

func (o *LocalOptions) complete(*Factory, *cobra.Command, []string) error { return nil }

func (o *LocalOptions) validate() error {
	switch {
	case o.Port < 0 || o.Port > 65535:
		return usageErrorf("--port must be from 0 to 65535, not %d", o.Port)
	case o.ShardLimit < 1:
		return usageErrorf("--shard-limit must be at least 1")
	case o.StateDelay < 0:
		return usageErrorf("--state-delay must not be negative")
	case o.Host == "":
		return usageErrorf("--host needs an address (127.0.0.1 for this machine only)")
	}
	return nil
}

func (o *LocalOptions) run(ctx context.Context, f *Factory) error {
	svc := fake.New()
	svc.ShardLimit, svc.StateDelay, svc.Quotas = o.ShardLimit, o.StateDelay, o.Quotas
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	url := "http://" + net.JoinHostPort(o.Host, strconv.Itoa(addr.Port))
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(f.IO.ErrOut, "warning: listening on %s, which other machines may reach: this fake Kinesis accepts any credentials\n", ln.Addr())
	}
	fmt.Fprintf(f.IO.ErrOut, "a fake Kinesis (in memory) is serving on %s; Ctrl-C stops it\n", url)
	for _, l := range []string{"AWS_ENDPOINT_URL_KINESIS=" + url, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local"} {
		fmt.Fprintln(f.IO.Out, "export "+l)
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if o.ready != nil {
		o.ready(url)
	}
	select {
	case err := <-served:
		return fmt.Errorf("the fake Kinesis stopped: %w", err)
	case <-ctx.Done():
	}
	// Calls in flight get a moment to finish; open subscriptions (which
	// last up to five minutes) are cut after it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		_ = srv.Close()
	}
	fmt.Fprintln(f.IO.ErrOut, "stopped")
	return nil
}
