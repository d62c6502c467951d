package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// LocalOptions are the inputs of `local`.
type LocalOptions struct {
	Host       string
	Port       int
	ShardLimit int
	StateDelay time.Duration
	Quotas     bool
	// Faults is --faults as given ("" for none); faults is it parsed.
	Faults string
	faults *fake.Faults
	// MaxBytesText is --max-bytes as given; MaxBytes is it in bytes (0:
	// no bound).
	MaxBytesText string
	MaxBytes     int64
	// Retention is the retention period of new streams.
	Retention time.Duration

	// ready, for tests: called with the address once the server listens.
	ready func(addr string)
}

func newLocalCmd(f *Factory, runF func(*LocalOptions) error) *cobra.Command {
	opts := &LocalOptions{Host: "127.0.0.1", Port: 4567, ShardLimit: 500, Quotas: true, MaxBytesText: "1GiB", Retention: 24 * time.Hour}
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
another address. It does not serve tags, encryption or stream mode
changes: those calls get UnknownOperationException.

--state-delay keeps a new stream CREATING, a resharded one UPDATING and a
deleted one DELETING that long, as the service does for some seconds
(default 0: every change is instant).

Records are kept for their stream's retention period, then trimmed as the
service trims them: TRIM_HORIZON starts after them, and a closed shard
leaves ListShards once it closed longer ago than the period. New streams
get --retention (24h, the service's; shorter, to practise with trimmed
data soon); IncreaseStreamRetentionPeriod and
DecreaseStreamRetentionPeriod change it as on the service (24 to 8760
hours). --max-bytes bounds the records kept in memory (data and partition
keys, every stream together): over it, the oldest records of all go
first, as if they had aged out, and stderr says so the first time.

--faults answers a share of the calls with errors instead, to practise how
a client takes them; a faulted call changes nothing. It is a list
separated by commas of KIND=P, each with a probability P (more than 0, at
most 1): throttle (ProvisionedThroughputExceededException on GetRecords,
GetShardIterator, PutRecord and PutRecords, LimitExceededException on the
other calls), error (500 InternalFailure, on any call) and expire
(ExpiredIteratorException on GetRecords). KIND:OPERATION=P sets one
operation's probability (throttle:GetRecords=0.5), and seed=N draws the
same faults on every run.`,
		Example: `  kinesis-shards local
  kinesis-shards local --port 4568 --shard-limit 50 --state-delay 2s
  kinesis-shards local --faults throttle=0.2,error=0.01,expire=0.05,seed=1
  kinesis-shards local --retention 1h --max-bytes 64MiB
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
	fl.StringVar(&opts.Faults, "faults", "", "answer a share of the calls with errors: throttle=P, error=P, expire=P, KIND:OPERATION=P, seed=N, separated by commas")
	fl.StringVar(&opts.MaxBytesText, "max-bytes", opts.MaxBytesText, "bound on the records kept in memory, every stream together (64MiB, 1GiB; 0: no bound): over it, the oldest are trimmed")
	fl.DurationVar(&opts.Retention, "retention", opts.Retention, "retention period of new streams (1m to 8760h): older records are trimmed")
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
	case o.Retention < time.Minute || o.Retention > 8760*time.Hour:
		return usageErrorf("--retention must be from 1m to 8760h, not %s", o.Retention)
	}
	n, err := parseByteSize(o.MaxBytesText)
	switch {
	case err != nil:
		return usageErrorf("--max-bytes: %v", err)
	case n > 0 && n < 1<<20:
		return usageErrorf("--max-bytes %s is less than 1MiB, the size of the largest record: use at least 1MiB, or 0 for no bound", o.MaxBytesText)
	}
	o.MaxBytes = n
	if o.Faults != "" {
		fs, err := fake.ParseFaults(o.Faults)
		if err != nil {
			return usageErrorf("--faults: %v", err)
		}
		o.faults = fs
	}
	return nil
}

// parseByteSize reads a size: a number of bytes, or of KiB, MiB or GiB.
func parseByteSize(s string) (int64, error) {
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	mult, ok := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("%q is not a size: give bytes, or KiB, MiB or GiB (64MiB, 1GiB)", s)
	}
	if v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is more than this machine has: use 0 for no bound", s)
	}
	return int64(v * mult), nil
}

func (o *LocalOptions) run(ctx context.Context, f *Factory) error {
	svc := fake.New()
	svc.ShardLimit, svc.StateDelay, svc.Quotas = o.ShardLimit, o.StateDelay, o.Quotas
	svc.Faults, svc.MaxBytes, svc.Retention = o.faults, o.MaxBytes, o.Retention
	svc.OnMaxBytes = func() {
		fmt.Fprintf(f.IO.ErrOut, "the records kept reached --max-bytes (%s): the oldest are trimmed from now on, as if they had aged out\n", text.Bytes(float64(o.MaxBytes)))
	}
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
	if o.faults != nil {
		fmt.Fprintf(f.IO.ErrOut, "faults: %s (a share of the calls get these errors instead of answers)\n", o.Faults)
	}
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
