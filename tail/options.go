package tail

import (
	"context"
	"errors"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// StartMode is where a shard without a checkpoint starts.
type StartMode int

const (
	// StartTrimHorizon reads every shard from its oldest record (default).
	StartTrimHorizon StartMode = iota
	// StartLatest (--from-tip) starts the open shards at their tip and
	// counts closed shards without a checkpoint as read.
	StartLatest
	// StartAtTimestamp (--from-timestamp) starts at an arrival time.
	StartAtTimestamp
)

// Options tune a tail. The zero value of every duration means its default.
type Options struct {
	StreamName string
	StreamARN  string // preferred for calls when set

	Start     StartMode
	Timestamp time.Time // StartAtTimestamp

	PollInterval       time.Duration // idle shard: one GetRecords per this (default 1s)
	RelistInterval     time.Duration // ListShards safety net (default 10s)
	CheckpointInterval time.Duration // save at most this often (default 5s)
	CallTimeout        time.Duration // deadline of every call (default 30s)
	Limit              int32         // GetRecords Limit; 0 = service default (10,000)

	// Key restricts reading to the shards whose range holds this hash.
	Key *lineage.HashKey
	// KeyName, when set, writes out only the records of this partition key
	// (the user records' own keys, for KPL aggregates).
	KeyName string
	// Shard restricts reading to this shard and its descendants.
	Shard string

	MaxRecords int64         // stop after this many delivered records (0 = no limit)
	IdleExit   time.Duration // stop when idle this long (0 = never)
	Decompress bool          // unpack gzip payloads

	// CWLogs delivers each log event of a CloudWatch Logs subscription
	// batch as a Record of its own (Record.Log), skips CONTROL_MESSAGE
	// batches, and passes other records through as Decompress does.
	CWLogs bool
	// Select, when set, picks and shapes what is written out (--filter,
	// --jq). It gets every batch before the delivery lock (so shards
	// evaluate in parallel; calls may come from several goroutines), after
	// KeyName, and returns the records to write out, in order, in an array
	// of its own (Out may be set). MaxRecords counts what it returns. The
	// records of batch[:decided] it dropped still count as read: the
	// checkpoint moves past them. decided < len(batch) only when ctx ended
	// mid-batch; the undecided rest is neither written nor checkpointed.
	Select func(ctx context.Context, batch []Record) (out []Record, decided int)

	// Leases, when set, share the stream's shards with other tail
	// processes through a lease table: only the shards they give are read,
	// and checkpoints go to them instead of the Store.
	Leases Leases

	// EFO, when set, reads every shard through this enhanced fan-out
	// consumer instead of GetRecords (efo.go). Not with Leases.
	EFO *EFO

	// OnPoll, when set, is called after every successful GetRecords with
	// what it returned (from the reader's goroutine; keep it quick).
	OnPoll func(PollStats)

	// Warnf receives what the user should see even without --debug (may
	// be nil): a shard throttled for a long time.
	Warnf func(format string, args ...any)
	// Logf receives warnings and debug lines (may be nil).
	Logf func(format string, args ...any)
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time

	// minInterval is the pacer's floor between GetRecords attempts of one
	// shard; only this package's tests lower it.
	minInterval time.Duration
	// efoTune adjusts each efo.Reader's options (this package's tests
	// shorten its backoffs).
	efoTune func(*efo.Options)
}

// PollStats is what one GetRecords returned, for live figures.
type PollStats struct {
	ShardID      string
	Records      int   // records in the response (before de-aggregation)
	Bytes        int   // payload and partition key bytes
	MillisBehind int64 // MillisBehindLatest
	At           time.Time
}

// Defaults.
const (
	DefaultPollInterval       = time.Second
	DefaultRelistInterval     = 10 * time.Second
	DefaultCheckpointInterval = 5 * time.Second
	DefaultCallTimeout        = 30 * time.Second
)

func (o *Options) defaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.minInterval <= 0 {
		o.minInterval = awscall.MinCallInterval
	}
	if o.PollInterval < o.minInterval {
		o.PollInterval = o.minInterval
	}
	if o.RelistInterval <= 0 {
		o.RelistInterval = DefaultRelistInterval
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Warnf == nil {
		o.Warnf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// StopReason says why Run returned.
type StopReason int

const (
	StopInterrupted StopReason = iota // the context ended (Ctrl-C)
	StopMaxRecords                    // --max-records reached
	StopIdle                          // --idle-exit elapsed
	StopError                         // an error (returned alongside)
)

// Result is what Run reports.
type Result struct {
	Records int64 // delivered
	Dropped int64 // read but dropped by Options.Select
	Readers int   // shard readers started
	Reason  StopReason
}

// ErrShardNotFound: the --shard is not in the stream.
var ErrShardNotFound = errors.New("shard not found")

// ErrEFOWithLeases: a lease table's workers would share one consumer that
// none of them may deregister, which a tail does not manage.
var ErrEFOWithLeases = errors.New("enhanced fan-out does not go with a lease table")
