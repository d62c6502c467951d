package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/producer"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// putAPI is what put needs from the client.
type putAPI interface {
	kstream.DescribeAPI
	producer.API
}

var _ putAPI = (*kinesis.Client)(nil)

// PutOptions are the inputs of `put`.
type PutOptions struct {
	base
	Key      string
	KeyField string
	Retries  int
	Output   string
	// Linger is how long a partial batch waits for more lines.
	Linger time.Duration
	// Backoff is the first retry delay (doubling, capped at 5 s).
	Backoff time.Duration
	Rand    *rand.Rand
	// Format is how stdin is read: lines, or json (tail -o json lines).
	Format string
	// Rate and RateBytes cap records and bytes per second (0: no cap).
	Rate          float64
	RateBytesText string
	RateBytes     int64

	clock producer.Clock // nil: the real one
}

func newPutCmd(f *Factory, runF func(*PutOptions) error) *cobra.Command {
	opts := &PutOptions{Retries: 8, Linger: 50 * time.Millisecond, Backoff: 100 * time.Millisecond}
	c := &cobra.Command{
		Use:   "put STREAM",
		Short: "Write stdin lines as records",
		Long: `Write each line of stdin as one record (without its line ending; empty lines
are skipped), batched with PutRecords. The partition key is --key, or the
--key-field of each JSON line (a dotted path such as user.id), or random.

Only the failed entries of a partial failure are retried, with backoff. A
batch never holds two records of the same key, so a retry can never put a
key's records out of order; the price is one record per call when every
line has the same key. A summary (records, bytes, retries, failures) goes
to stderr, or to stdout as JSON with -o json.

--format json reads the lines of tail --format json and writes each record
again: its payload (base64-decoded when tail encoded it), its own
partitionKey and explicitHashKey, each key's records in their order. A line
that is not such a record stops the run with its line number.

--rate and --rate-bytes cap the records and bytes (data + partition key)
sent per second, so a replay does not throttle the stream it writes to.`,
		Example: `  seq 1 1000 | kinesis-shards put orders
  echo '{"user":"alice","n":1}' | kinesis-shards put orders --key-field user
  tail -f app.log | kinesis-shards put logs --key "$(hostname)"
  kinesis-shards tail orders -o json --idle-exit 5s --no-checkpoint | kinesis-shards put orders-copy --format json --rate 500`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	c.Flags().StringVar(&opts.Key, "key", "", "partition key of every record")
	c.Flags().StringVar(&opts.KeyField, "key-field", "", "take the partition key from this field of each JSON line (dotted path)")
	c.Flags().IntVar(&opts.Retries, "retries", opts.Retries, "retries of failed entries before giving up")
	c.Flags().StringVar(&opts.Format, "format", enumNames("format", "put")[0], "stdin format: "+enumUsage("format", "put"))
	c.Flags().Float64Var(&opts.Rate, "rate", 0, "send at most this many records per second (retries included; default: no cap)")
	c.Flags().StringVar(&opts.RateBytesText, "rate-bytes", "", "send at most this many bytes per second, data + partition key (1MiB, 500kB; default: no cap)")
	return c
}

func (o *PutOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output = f.Global.Output
	return nil
}

func (o *PutOptions) validate() (err error) {
	if o.Key != "" && o.KeyField != "" {
		return usageErrorf("--key and --key-field do not go together")
	}
	if o.given["key"] {
		if err := checkPartitionKey(o.Key); err != nil {
			return usageErrorf("--key: %v", err)
		}
	}
	if o.given["key-field"] && o.KeyField == "" {
		return usageErrorf("--key-field needs a field name")
	}
	if o.Retries < 0 {
		return usageErrorf("--retries must not be negative")
	}
	if err := validatePutInput(o, func(flag string) bool { return o.given[flag] }); err != nil {
		return err
	}
	if o.Output, err = outputFormat("put", o.Output); err != nil {
		return err
	}
	return o.validateBase()
}

func (o *PutOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runPut(ctx, f, client, o.Ref, o)
}

// putStats is the summary; its JSON names are documented.
type putStats = producer.Stats

func runPut(ctx context.Context, f *Factory, api putAPI, ref kstream.Ref, opts *PutOptions) error {
	sum, err := kstream.Describe(ctx, api, ref)
	if err != nil {
		return err
	}
	if sum.Status == types.StreamStatusDeleting || sum.Status == types.StreamStatusCreating {
		return fmt.Errorf("stream %s is %s and cannot take records", ref, sum.Status)
	}
	s, err := producer.Run(ctx, api, ref, f.IO.In, producer.Options{
		Key: opts.Key, KeyField: opts.KeyField, Retries: opts.Retries, Linger: opts.Linger, Backoff: opts.Backoff,
		Rand: opts.Rand, Format: opts.Format, Rate: opts.Rate, RateBytes: opts.RateBytes,
		MaxRecordBytes: sum.MaxRecordBytes, Clock: opts.clock, Debugf: f.Debugf,
		Warnf: func(format string, args ...any) {
			fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", fmt.Sprintf(format, args...))
		},
	})
	s.Stream = sum.Name
	var unknown *producer.UnknownOutcomeError
	if errors.As(err, &unknown) {
		err = &outcomeUnknownError{err: unknown.Err, note: fmt.Sprintf("the %s of that PutRecords call (%s) may have been written, possibly more than once: its answer was lost, so the summary does not count them",
			text.Plural(unknown.Records, "record"), unknown.Lines)}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		// One line on stderr: what failed, and what was written before it
		// (the summary line or the duplicates warning would be a second;
		// -o json still gets its document on stdout).
		if opts.Output == "json" {
			render.JSON(f.IO.Out, s)
		}
		done := fmt.Sprintf("%s written before it", text.Plural(s.Records, "record"))
		var lost *outcomeUnknownError
		switch {
		case errors.As(err, &lost):
			done = fmt.Sprintf("%s confirmed written before it", text.Plural(s.Records, "record"))
		case s.Records == 0:
			done = "nothing was written"
		}
		if s.MaybeTwice > 0 {
			done += fmt.Sprintf(", %d of which may be stored twice (an answer was lost and the SDK sent the call again)", s.MaybeTwice)
		}
		return &notedError{err: err, note: done}
	}
	reportPut(f, opts, s)
	return err
}

// reportPut writes the summary: a line on stderr, or -o json's document.
func reportPut(f *Factory, opts *PutOptions, s putStats) {
	if s.MaybeTwice > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s may be stored twice: the answer to a PutRecords call was lost and the SDK sent the call again\n", text.Plural(s.MaybeTwice, "record"))
	}
	if opts.Output == "json" {
		render.JSON(f.IO.Out, s)
		return
	}
	msg := fmt.Sprintf("put %d records (%s) to %s in %s with %d calls", s.Records, text.Bytes(float64(s.Bytes)), s.Stream, formatDuration(time.Duration(s.Seconds*float64(time.Second))), s.Calls)
	if s.Retried > 0 {
		msg += fmt.Sprintf(", %d retried", s.Retried)
	}
	if s.Failed > 0 {
		msg += fmt.Sprintf(", %d FAILED", s.Failed)
	}
	if s.Skipped > 0 {
		msg += fmt.Sprintf(", %d empty lines skipped", s.Skipped)
	}
	msg += rateNote(s)
	if len(s.Shards) > 0 {
		ids := make([]string, 0, len(s.Shards))
		for id := range s.Shards {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%s:%d", strings.TrimPrefix(id, "shardId-"), s.Shards[id])
		}
		msg += " [" + strings.Join(parts, " ") + "]"
	}
	fmt.Fprintln(f.IO.ErrOut, msg)
}

// checkPartitionKey applies the service's rule to a --key of put, tail or
// tree.
func checkPartitionKey(k string) error { return producer.CheckPartitionKey(k) }
