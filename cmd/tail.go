package cmd

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// tailAPI is what tail needs from the client (with --efo, the consumer
// calls and SubscribeToShard too).
type tailAPI interface {
	tail.API
	kstream.CreateAPI
	kstream.ConsumerAPI
	tail.EFOAPI
}

var _ tailAPI = (*kinesis.Client)(nil)

// TailOptions are the inputs of `tail`.
type TailOptions struct {
	base
	Checkpoint    string
	NoCheckpoint  bool
	FromTip       bool
	FromTimestamp string
	Format        string
	Decompress    bool
	tailRecordFlags
	Key                string
	Shard              string
	MaxRecords         int64
	IdleExit           time.Duration
	PollInterval       time.Duration
	RelistInterval     time.Duration
	CheckpointInterval time.Duration
	CreateIfMissing    int
	LeaseTable         string
	WorkerID           string
	CreateLeaseTable   bool
	LeaseDuration      time.Duration
	// Leases is the lease table's client (cmd wires DynamoDB).
	Leases leases.DynamoAPI
	// EFO reads through an enhanced fan-out consumer: Consumer, or one
	// named for the user and host (tail_efo.go).
	EFO      bool
	Consumer string

	// Resolved by validation.
	format    render.RecordFormat
	start     tail.StartMode
	timestamp time.Time
	keyHash   *lineage.HashKey

	// From the environment, for validation: -o, the terminal, the clock.
	output    string
	stdoutTTY bool
	now       time.Time
}

func newTailCmd(f *Factory, runF func(*TailOptions) error) *cobra.Command {
	opts := &TailOptions{}
	c := &cobra.Command{
		Use:   "tail STREAM",
		Short: "Read a whole stream, parents before children, with a checkpoint",
		Long: `Read every shard of a stream and write each record to stdout, keeping every
partition key's records in order across splits and merges: a shard is read
only once each of its parents has been read to its end (SHARD_END in the
checkpoint) or trimmed by retention. Children are found from the parent's
last GetRecords and by listing the shards again every --relist-interval.

Start: a shard with a checkpoint resumes just after it; otherwise from its
oldest record (TRIM_HORIZON). --from-tip starts open shards at their tip and
counts closed shards without a checkpoint as read; --from-timestamp starts
at an arrival time. A shard that opens while tail runs is read from its
oldest record.

Checkpoint: --checkpoint FILE, by default one file per account, region and
stream under $XDG_STATE_HOME/kinesis-shards (~/.local/state/kinesis-shards),
shown by --debug. It records per shard the last record written out, or
SHARD_END, is written atomically at most every --checkpoint-interval, at
every SHARD_END and at exit, is private (0600), locked against a second
tail, and refused for another stream. It follows the output write by
write (64 KiB at most), so after a crash at most the last
--checkpoint-interval of output is written again, however slowly stdout
drains; none is lost. It belongs to the options that change what is
printed: --key or --shard, --filter, --jq, --cwlogs and --decompress. A run
with other options is refused on the same file, naming the option that
differs, and gets a default file of its own.

Output (--format, or -o): json lines (the default when stdout is not a
terminal), raw payloads, or text (readable, coloured; the default on a
terminal). KPL aggregates are split into user records; --decompress unpacks
gzip payloads. --cwlogs unpacks CloudWatch Logs subscription batches and
prints one line per log event (CONTROL_MESSAGE batches are skipped); the
checkpoint can stop inside a batch, and resume starts at the next event.

jq: --filter EXPR prints only the records for which EXPR is true; --jq EXPR
prints what EXPR makes of each record, one JSON value per line (a string as
it is with --format raw). Both see the record's -o json object (with
--cwlogs, the log event's) plus .payload, the payload parsed when it is
JSON. A record the filter drops still counts as read: the checkpoint moves
past it, and --max-records counts only what is printed. A record an
expression fails on is skipped, with one warning per distinct error.

Sharing: --lease-table TABLE shares the shards of the stream with every other
tail using the same table, through leases in the Kinesis Client Library's
DynamoDB schema, which also hold the checkpoints: each worker takes an equal
share, a worker silent for --lease-duration loses its leases to the others,
and a child's lease is taken only when every parent lease is SHARD_END.

Pacing: at most 5 GetRecords calls per second per shard, retries included;
a caught-up shard is polled every --poll-interval; after a throttle the shard
is left alone for at least a second (longer under repeated throttles). Ctrl-C stops reading,
writes out what was read, saves the checkpoint and exits 130.

Enhanced fan-out: --efo reads every shard through a consumer of its own
(SubscribeToShard) instead: 2 MiB per second per shard pushed to it, none of
the shard's 5 GetRecords calls taken from the stream's other readers, and
records printed as they arrive rather than at the next poll. The order, the
checkpoint file (shared with polling runs) and every other flag work the
same. The consumer is named for your user and host (and the run's --key,
--shard, --filter, --jq, --cwlogs or --decompress), registered (or reused) at the start and
deregistered at exit; --consumer NAME uses or creates that
one and keeps it. A registered consumer is billed per consumer-shard hour
and per GB read. Not with --lease-table.`,
		Example: `  kinesis-shards tail orders
  kinesis-shards tail orders --from-tip --format raw
  kinesis-shards tail orders --key customer-42 --from-timestamp 15m
  kinesis-shards tail orders --idle-exit 5s --no-checkpoint | jq -r .data
  kinesis-shards tail logs --decompress --checkpoint ./logs.checkpoint
  kinesis-shards tail orders --filter '.payload.level == "error"' --from-timestamp 15m
  kinesis-shards tail orders --jq '{key: .partitionKey, order: .payload.orderId}'
  kinesis-shards tail app-logs --cwlogs --filter '.message | test("ERROR")'
  kinesis-shards tail orders --efo --from-tip
  kinesis-shards tail orders --efo --consumer ops-tail --key customer-42`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "checkpoint file (default: one per stream under the state directory)")
	fl.BoolVar(&opts.NoCheckpoint, "no-checkpoint", false, "keep no checkpoint")
	fl.BoolVar(&opts.FromTip, "from-tip", false, "start open shards at their tip; closed shards without a checkpoint count as read")
	fl.StringVar(&opts.FromTimestamp, "from-timestamp", "", "start at this arrival time (RFC 3339, Unix seconds, or a duration ago: 15m)")
	fl.StringVar(&opts.Format, "format", "", recordFormatUsage())
	fl.BoolVar(&opts.Decompress, "decompress", false, "unpack gzip payloads")
	opts.tailRecordFlags.register(fl)
	fl.StringVar(&opts.Key, "key", "", "read only the shards this partition key can be on, and print only its records")
	fl.StringVar(&opts.Shard, "shard", "", "read only this shard and its descendants (id or number)")
	fl.Int64Var(&opts.MaxRecords, "max-records", 0, "stop after this many records (0: no limit)")
	fl.DurationVar(&opts.IdleExit, "idle-exit", 0, "exit 0 once every reader is at its tip and nothing arrived for this long")
	fl.DurationVar(&opts.PollInterval, "poll-interval", tail.DefaultPollInterval, "how often a caught-up shard is polled (≥ 200ms)")
	fl.DurationVar(&opts.RelistInterval, "relist-interval", tail.DefaultRelistInterval, "how often the shards are listed again to find children")
	fl.DurationVar(&opts.CheckpointInterval, "checkpoint-interval", tail.DefaultCheckpointInterval, "how often the checkpoint is saved")
	fl.IntVar(&opts.CreateIfMissing, "create-if-missing", 0, "create a missing stream with this many shards and wait for it")
	fl.StringVar(&opts.LeaseTable, "lease-table", "", "share the shards with other tails through this DynamoDB lease `TABLE` (KCL schema); it keeps the checkpoints")
	fl.StringVar(&opts.WorkerID, "worker-id", "", "this worker's id in the lease table (default: host:pid:random)")
	fl.BoolVar(&opts.CreateLeaseTable, "create-lease-table", false, "create the lease table (on-demand capacity) if it is missing, without asking")
	fl.DurationVar(&opts.LeaseDuration, "lease-duration", 10*time.Second, "a worker silent this long loses its leases to the others (the KCL's failover time)")
	addTailEFOFlags(fl, opts)
	return c
}

func (o *TailOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.output, o.stdoutTTY, o.now = f.Global.Output, f.IO.StdoutTTY, f.Now()
	if o.LeaseTable != "" && o.WorkerID == "" {
		o.WorkerID = defaultWorkerID() // the host's name: the environment, read here
	}
	return nil
}

// validate checks every flag before anything is sent.
func (o *TailOptions) validate() error {
	// -o is --format's synonym on tail.
	format := o.Format
	if g := o.output; g != "" {
		if format != "" && format != g {
			return usageErrorf("-o %s and --format %s disagree", g, format)
		}
		format = g
	}
	if format == "" {
		format = "json"
		if o.stdoutTTY {
			format = "text"
		}
	}
	rf, err := recordFormat(format)
	if err != nil {
		return err
	}
	o.format = rf
	if o.given["checkpoint"] && o.Checkpoint == "" {
		return usageErrorf("--checkpoint needs a file name (or pass --no-checkpoint)")
	}
	if o.NoCheckpoint && o.Checkpoint != "" {
		return usageErrorf("--checkpoint and --no-checkpoint do not go together")
	}
	fromTS := o.given["from-timestamp"]
	if o.FromTip && fromTS {
		return usageErrorf("--from-tip and --from-timestamp do not go together")
	}
	switch {
	case o.FromTip:
		o.start = tail.StartLatest
	case fromTS:
		ts, err := parseTimestamp(o.FromTimestamp, o.now)
		if err != nil {
			return usageErrorf("--from-timestamp: %v", err)
		}
		o.start, o.timestamp = tail.StartAtTimestamp, ts
	}
	if o.given["key"] {
		if err := checkPartitionKey(o.Key); err != nil {
			return usageErrorf("--key: %v", err)
		}
		h := lineage.PartitionKeyHash(o.Key)
		o.keyHash = &h
	}
	if o.given["shard"] {
		id, err := lineage.ParseShardID(o.Shard)
		if err != nil {
			return usageError(err)
		}
		o.Shard = id
	}
	if o.keyHash != nil && o.Shard != "" {
		return usageErrorf("--key and --shard do not go together")
	}
	if o.LeaseTable != "" || o.given["lease-table"] {
		switch {
		case o.Checkpoint != "" || o.NoCheckpoint:
			return usageErrorf("--lease-table keeps the checkpoints: it does not go with --checkpoint or --no-checkpoint")
		case o.keyHash != nil || o.Shard != "":
			return usageErrorf("--lease-table shares the whole stream: it does not go with --key or --shard")
		case o.LeaseDuration < time.Second:
			return usageErrorf("--lease-duration must be at least 1s")
		}
		if err := checkTableName("--lease-table", o.LeaseTable); err != nil {
			return err
		}
	} else if o.WorkerID != "" || o.CreateLeaseTable || o.given["lease-duration"] {
		return usageErrorf("--worker-id, --lease-duration and --create-lease-table go with --lease-table")
	}
	switch {
	case o.MaxRecords < 0:
		return usageErrorf("--max-records must not be negative")
	case o.IdleExit < 0:
		return usageErrorf("--idle-exit must not be negative")
	case o.PollInterval < 200*time.Millisecond:
		return usageErrorf("--poll-interval must be at least 200ms: a shard serves 5 GetRecords calls per second to all its readers")
	case o.RelistInterval < time.Second:
		return usageErrorf("--relist-interval must be at least 1s")
	case o.CheckpointInterval <= 0:
		return usageErrorf("--checkpoint-interval must be positive")
	case o.given["create-if-missing"] && (o.CreateIfMissing < 1 || o.CreateIfMissing > 10000):
		return usageErrorf("--create-if-missing needs a shard count from 1 to 10000, not %d", o.CreateIfMissing)
	}
	if err := o.validateRecords(); err != nil {
		return err
	}
	if err := o.validateEFO(); err != nil {
		return err
	}
	return o.validateBase()
}

func (o *TailOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisWithLeases(ctx, o.Ref, o.LeaseTable, &o.Leases)
	if err != nil {
		return err
	}
	return runTail(ctx, f, client, o.Ref, o)
}

func runTail(ctx context.Context, f *Factory, api tailAPI, ref kstream.Ref, o *TailOptions) error {
	sum, err := tailStream(ctx, f, api, ref, o)
	if err != nil {
		return err
	}
	var leaseWorker tail.Leases
	if o.LeaseTable != "" {
		w, err := openLeaseWorker(ctx, f, sum, o)
		if err != nil {
			return err
		}
		leaseWorker = w
		f.Debugf("lease table %s, worker %s", o.LeaseTable, o.WorkerID)
	}
	store, path, err := openTailStore(f, sum, o)
	if err != nil {
		return err
	}
	defer store.Close()
	if path != "" {
		f.Debugf("checkpoint file %s", path)
	}

	out := render.NewRecordWriter(f.IO.Out, o.format, render.NewTheme(f.IO.ColorOut()))
	topts := o.tailOptions(f, ref, sum, leaseWorker)
	var skipped func() int64
	topts.Select, skipped = o.recordSelect(f)
	var cons *efoConsumer
	if o.EFO {
		// Last, once everything that can refuse the run has: from here on
		// the consumer is billed, and it is deregistered however tail ends.
		c, err := openTailConsumer(ctx, f, api, sum, o)
		if err != nil {
			return err
		}
		defer c.close()
		topts.EFO, cons = c.tailEFO(api, efo.NewPacer(0)), c
	}
	res, err := tail.NewWriting(api, store, topts, out.WriteReporting).Run(ctx)
	if err != nil && topts.EFO != nil {
		err = efoRunError(err, cons)
	}
	if err != nil {
		if isBrokenPipe(err) {
			// `tail | head`: the reader went away; the checkpoint holds what
			// was written.
			return nil
		}
		return err
	}
	if f.IO.StderrTTY || f.Global.Debug {
		fmt.Fprintln(f.IO.ErrOut, o.tailSummary(res, skipped(), path))
	}
	if res.Reason == tail.StopInterrupted {
		return o.interrupted(path)
	}
	return nil
}

// tailStream describes the stream, creating it first with
// --create-if-missing, and refuses one that is being deleted.
func tailStream(ctx context.Context, f *Factory, api tailAPI, ref kstream.Ref, o *TailOptions) (*kstream.Summary, error) {
	var sum *kstream.Summary
	if o.CreateIfMissing > 0 {
		_, s, err := ensureStream(ctx, f, api, ref, kstream.Spec{Shards: o.CreateIfMissing}, time.Minute, 0, 0)
		if err != nil {
			return nil, err
		}
		sum = s
	} else {
		s, err := kstream.Describe(ctx, api, ref)
		if err != nil {
			return nil, err
		}
		sum = s
	}
	if sum.Status == types.StreamStatusDeleting {
		return nil, fmt.Errorf("stream %s is being deleted", ref)
	}
	if o.keyHash != nil && sum.OnDemand() {
		fmt.Fprintf(f.IO.ErrOut, "note: %s is an on-demand stream; if its record distribution is AUTO, partition keys do not choose shards and --key reads nothing useful\n", ref)
	}
	return sum, nil
}

// tailOptions are the tail package's options for the flags.
func (o *TailOptions) tailOptions(f *Factory, ref kstream.Ref, sum *kstream.Summary, leaseWorker tail.Leases) tail.Options {
	topts := tail.Options{
		StreamName:         sum.Name,
		Start:              o.start,
		Timestamp:          o.timestamp,
		PollInterval:       o.PollInterval,
		RelistInterval:     o.RelistInterval,
		CheckpointInterval: o.CheckpointInterval,
		Key:                o.keyHash,
		KeyName:            o.Key,
		Shard:              o.Shard,
		MaxRecords:         o.MaxRecords,
		IdleExit:           o.IdleExit,
		Decompress:         o.Decompress,
		CWLogs:             o.CWLogs,
		Now:                f.Now,
		Leases:             leaseWorker,
	}
	if ref.ARN != "" {
		topts.StreamARN = ref.ARN
	}
	if f.Global.Debug {
		topts.Logf = f.Debugf
	}
	topts.Warnf = func(format string, args ...any) {
		fmt.Fprintf(f.IO.ErrOut, "warning: "+format+"\n", args...)
	}
	return topts
}

// interrupted is the exit of a tail stopped by Ctrl-C: 130, and what was
// saved.
func (o *TailOptions) interrupted(path string) error {
	saved := "checkpoint saved"
	switch {
	case o.LeaseTable != "":
		saved = "checkpoints saved in lease table " + o.LeaseTable
	case path == "":
		saved = "nothing saved (--no-checkpoint)"
	}
	return &exitError{code: exitInterrupted, err: errors.New("interrupted; " + saved)}
}

// openTailStore opens the checkpoint store the flags ask for.
func openTailStore(f *Factory, sum *kstream.Summary, o *TailOptions) (tail.Store, string, error) {
	if o.NoCheckpoint || o.LeaseTable != "" {
		return tail.NewMemoryStore(nil), "", nil
	}
	path := o.Checkpoint
	if path == "" {
		p, err := defaultCheckpointPath(sum, o)
		if err != nil {
			return nil, "", err
		}
		path = p
		warnOptionsCheckpoint(f, o, path)
	}
	id := tail.StreamIdentity{Name: sum.Name, ARN: sum.ARN, Created: sum.Created}
	filter := tail.Filter{Shard: o.Shard}
	if o.keyHash != nil {
		filter = tail.Filter{Key: o.Key}
	}
	if o.filter != nil {
		filter.Select = o.Filter
	}
	if o.jq != nil {
		filter.Transform = o.JQ
	}
	// With --cwlogs, --decompress changes nothing (batches are unpacked
	// anyway), so it is not part of what the run prints.
	filter.CWLogs, filter.Decompress = o.CWLogs, o.Decompress && !o.CWLogs
	store, err := tail.OpenFilteredFile(path, id, filter, func(w string) { fmt.Fprintln(f.IO.ErrOut, "warning: "+w) })
	if err != nil {
		return nil, "", err
	}
	return store, path, nil
}

// defaultCheckpointPath is one file per account, region and stream (and
// per filter, whose checkpoints cover other records; filterSuffix):
// $XDG_STATE_HOME/kinesis-shards/checkpoints/<account>/<region>/<stream>[.<filter>].json
func defaultCheckpointPath(sum *kstream.Summary, o *TailOptions) (string, error) {
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	account, region := "unknown-account", "unknown-region"
	if ref, err := kstream.ParseRef(sum.ARN); err == nil && ref.ARN != "" {
		account, region = ref.Account, ref.Region
	}
	return filepath.Join(dir, "kinesis-shards", "checkpoints", account, region, sum.Name+o.filterSuffix()+".json"), nil
}

// filterSuffix names what a run prints of the stream, for the names of its
// default checkpoint file and consumer: "" for everything, else
// ".key-<hash>" or ".shard-<n>", then ".jq-<hash>" for --filter or --jq,
// then ".cwlogs" and ".decompress" (what an expression sees and what one
// printed line is: tail.Filter). Runs that print different things must
// not share either.
func (o *TailOptions) filterSuffix() string {
	var name string
	switch {
	case o.keyHash != nil:
		h := sha256.Sum256([]byte(o.Key))
		name = ".key-" + hex.EncodeToString(h[:6])
	case o.Shard != "":
		name = ".shard-" + lineage.ShortID(o.Shard)
	}
	name += o.selectSuffix()
	if o.CWLogs {
		name += ".cwlogs"
	}
	if o.Decompress && !o.CWLogs {
		name += ".decompress"
	}
	return name
}

// warnOptionsCheckpoint says why a --cwlogs or --decompress run with no
// checkpoint of its own yet starts afresh although the file of the same
// run without those options exists: builds before they were part of a
// checkpoint's identity kept one file for both.
func warnOptionsCheckpoint(f *Factory, o *TailOptions, path string) {
	if !o.CWLogs && !o.Decompress {
		return
	}
	if _, err := os.Stat(path); err == nil {
		return
	}
	plain := *o
	plain.CWLogs, plain.Decompress = false, false
	old := strings.TrimSuffix(path, o.filterSuffix()+".json") + plain.filterSuffix() + ".json"
	if _, err := os.Stat(old); err != nil {
		return
	}
	fmt.Fprintf(f.IO.ErrOut, "warning: no checkpoint of this run's options yet (%s); %s is that of runs without --cwlogs and --decompress (which earlier versions also used for them) and is not read: this run starts afresh\n", path, old)
}

// stateDir is $XDG_STATE_HOME, else ~/.local/state (%LocalAppData% on
// Windows).
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LocalAppData"); d != "" {
			return d, nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no home directory for the default checkpoint file: pass --checkpoint FILE or --no-checkpoint")
	}
	return filepath.Join(home, ".local", "state"), nil
}

// isBrokenPipe reports whether err is a write to a stdout whose reader
// went away (`| head`): an EPIPE, or on Windows a closed pipe, from
// stdoutWriter; not the same errno on a connection to AWS.
func isBrokenPipe(err error) bool {
	var se *stdoutError
	if !errors.As(err, &se) {
		return false
	}
	return errors.Is(se.err, syscall.EPIPE) || strings.Contains(se.err.Error(), "broken pipe") || strings.Contains(se.err.Error(), "pipe is being closed")
}

var leaseTableRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// checkTableName refuses a DynamoDB table name the service would refuse,
// before anything is sent.
func checkTableName(flag, name string) error {
	if !leaseTableRE.MatchString(name) {
		return usageErrorf("%s %q is not a DynamoDB table name (3 to 255 characters of a-z, A-Z, 0-9, _ . -)", flag, name)
	}
	return nil
}

// defaultWorkerID is host:pid:random, unique per process.
func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// openLeaseWorker checks (or creates, after asking) the lease table, ties
// it to the stream (or checks it is this stream's) and returns this
// process's lease worker.
func openLeaseWorker(ctx context.Context, f *Factory, sum *kstream.Summary, o *TailOptions) (*leases.Worker, error) {
	err := leases.CheckTable(ctx, o.Leases, o.LeaseTable)
	if errors.Is(err, leases.ErrNoTable) {
		switch {
		case o.CreateLeaseTable:
		case f.IO.CanPrompt():
			if err := f.confirm(fmt.Sprintf("DynamoDB table %s does not exist. Create it (on-demand capacity, billed per request)?", o.LeaseTable)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("lease table %s does not exist: pass --create-lease-table to create it (on-demand capacity)", o.LeaseTable)
		}
		p := f.startProgress("creating lease table " + o.LeaseTable)
		err = leases.CreateTable(ctx, o.Leases, o.LeaseTable)
		if err != nil {
			p.Stop("")
			return nil, err
		}
		p.Stop("created lease table " + o.LeaseTable)
	} else if err != nil {
		return nil, err
	}
	if err := leases.ClaimTable(ctx, o.Leases, o.LeaseTable, tail.StreamIdentity{Name: sum.Name, ARN: sum.ARN, Created: sum.Created}); err != nil {
		return nil, err
	}
	wo := leases.WorkerOptions{Table: o.LeaseTable, WorkerID: o.WorkerID, Start: o.start, Timestamp: o.timestamp, LeaseDuration: o.LeaseDuration}
	if f.Global.Debug {
		wo.Logf = f.Debugf
	}
	return leases.NewWorker(o.Leases, wo)
}
