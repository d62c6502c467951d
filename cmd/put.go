package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/render"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// PutRecords limits. The request limit is 10 MiB today; we stay at half so a
// batch is not one giant throttled request.
const (
	maxBatchRecords = 500
	maxBatchBytes   = 5 << 20
	maxKeyChars     = 256
)

// putAPI is what put needs from the client.
type putAPI interface {
	kstream.DescribeAPI
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
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

	clock putClock // nil: the real one
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
type putStats struct {
	Stream  string         `json:"stream"`
	Records int            `json:"records"`
	Bytes   int64          `json:"bytes"`
	Calls   int            `json:"calls"`
	Retried int            `json:"retried"`
	Failed  int            `json:"failed"`
	Skipped int            `json:"skippedEmptyLines"`
	Seconds float64        `json:"seconds"`
	Shards  map[string]int `json:"shards"`
	// The achieved rates, and the caps of --rate and --rate-bytes.
	RecordsPerSecond    float64 `json:"recordsPerSecond"`
	BytesPerSecond      float64 `json:"bytesPerSecond"`
	MaxRecordsPerSecond float64 `json:"maxRecordsPerSecond,omitempty"`
	MaxBytesPerSecond   int64   `json:"maxBytesPerSecond,omitempty"`

	// maybeTwice counts records whose call was sent again by the SDK after
	// an attempt that got no answer: they may be stored twice.
	maybeTwice int
}

type putEntry struct {
	line int
	key  string
	ehk  string // explicit hash key, "" for none
	data []byte
}

type putLine struct {
	n    int
	data []byte
	err  error
}

func runPut(ctx context.Context, f *Factory, api putAPI, ref kstream.Ref, opts *PutOptions) error {
	sum, err := kstream.Describe(ctx, api, ref)
	if err != nil {
		return err
	}
	if sum.Status == types.StreamStatusDeleting || sum.Status == types.StreamStatusCreating {
		return fmt.Errorf("stream %s is %s and cannot take records", ref, sum.Status)
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if opts.clock == nil {
		opts.clock = realClock{}
	}
	p := &putter{f: f, api: api, ref: ref, opts: opts, maxRecord: sum.MaxRecordBytes,
		stats: putStats{Stream: sum.Name, Shards: map[string]int{}}, limit: newPutLimiter(opts.Rate, opts.RateBytes, opts.clock)}
	start := opts.clock.Now()
	err = p.run(ctx)
	p.stats.Seconds = opts.clock.Now().Sub(start).Seconds()
	p.stats.setRates(opts)
	if err != nil && !errors.Is(err, context.Canceled) {
		// One line on stderr: what failed, and what was written before it
		// (the summary line or the duplicates warning would be a second;
		// -o json still gets its document on stdout).
		if p.opts.Output == "json" {
			render.JSON(p.f.IO.Out, p.stats)
		}
		s := p.stats
		done := fmt.Sprintf("%s written before it", text.Plural(s.Records, "record"))
		var lost *outcomeUnknownError
		switch {
		case errors.As(err, &lost):
			done = fmt.Sprintf("%s confirmed written before it", text.Plural(s.Records, "record"))
		case s.Records == 0:
			done = "nothing was written"
		}
		if s.maybeTwice > 0 {
			done += fmt.Sprintf(", %d of which may be stored twice (an answer was lost and the SDK sent the call again)", s.maybeTwice)
		}
		return &notedError{err: err, note: done}
	}
	p.report()
	return err
}

type putter struct {
	f         *Factory
	api       putAPI
	ref       kstream.Ref
	opts      *PutOptions
	maxRecord int
	stats     putStats
	limit     *putLimiter
	// warnedUnpacked: the warning about records tail had unpacked was given.
	warnedUnpacked bool
}

func (p *putter) run(ctx context.Context) error {
	lines := make(chan putLine, 1024)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go readLines(readCtx, p.f.IO.In, lines)

	var (
		batch []putEntry
		size  int
		keys  = map[string]struct{}{}
	)
	maxRecords, maxBytes := p.limit.batchLimits()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := p.send(ctx, batch)
		batch, size = batch[:0], 0
		clear(keys)
		return err
	}
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-linger.C:
			if err := flush(); err != nil {
				return err
			}
		case l, ok := <-lines:
			if !ok {
				return flush()
			}
			if l.err != nil {
				if err := flush(); err != nil {
					return err
				}
				return fmt.Errorf("reading stdin: %w", l.err)
			}
			if len(l.data) == 0 {
				p.stats.Skipped++
				continue
			}
			e, err := p.entryFor(l)
			if err != nil {
				if ferr := flush(); ferr != nil {
					return ferr
				}
				return err
			}
			n := len(e.data) + len(e.key)
			if n > p.maxRecord {
				if ferr := flush(); ferr != nil {
					return ferr
				}
				return fmt.Errorf("line %d: a record of %d bytes (data + partition key) is larger than the stream's limit of %d bytes", l.n, n, p.maxRecord)
			}
			_, dup := keys[e.key]
			if dup || len(batch) == maxRecords || size+n > maxBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, e)
			keys[e.key] = struct{}{}
			size += n
			linger.Reset(p.opts.Linger)
		}
	}
}

// readLines sends stdin's lines (without their line ending) until EOF.
func readLines(ctx context.Context, r io.Reader, out chan<- putLine) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
			select {
			case out <- putLine{n: n, data: line}:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				select {
				case out <- putLine{n: n, err: err}:
				case <-ctx.Done():
				}
			}
			return
		}
	}
}

func (p *putter) keyFor(l putLine) (string, error) {
	switch {
	case p.opts.Key != "":
		return p.opts.Key, nil
	case p.opts.KeyField != "":
		k, err := jsonField(l.data, p.opts.KeyField)
		if err != nil {
			return "", fmt.Errorf("line %d: %w", l.n, err)
		}
		if err := checkPartitionKey(k); err != nil {
			return "", fmt.Errorf("line %d: field %s: %w", l.n, p.opts.KeyField, err)
		}
		return k, nil
	default:
		var b [8]byte
		for i := range b {
			b[i] = byte(p.opts.Rand.Uint32())
		}
		return hex.EncodeToString(b[:]), nil
	}
}

// jsonField reads a dotted path from a JSON object; strings are used as they
// are, numbers and booleans as written.
func jsonField(line []byte, path string) (string, error) {
	var cur json.RawMessage = line
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil || obj == nil {
			return "", fmt.Errorf("not a JSON object with a field %q", path)
		}
		v, ok := obj[part]
		if !ok {
			return "", fmt.Errorf("no field %q in the JSON line", path)
		}
		cur = v
	}
	var s string
	if err := json.Unmarshal(cur, &s); err == nil {
		return s, nil
	}
	t := strings.TrimSpace(string(cur))
	if t == "" || t == "null" || t[0] == '{' || t[0] == '[' {
		return "", fmt.Errorf("field %q is %s, not a string or number", path, jsonKind(t))
	}
	return t, nil
}

func jsonKind(t string) string {
	switch {
	case t == "null":
		return "null"
	case strings.HasPrefix(t, "{"):
		return "an object"
	case strings.HasPrefix(t, "["):
		return "an array"
	}
	return "empty"
}

// checkPartitionKey applies the service's rule: 1 to 256 Unicode characters.
func checkPartitionKey(k string) error {
	n := utf8.RuneCountInString(k)
	if n < 1 || n > maxKeyChars {
		return fmt.Errorf("a partition key must have 1 to %d characters, not %d", maxKeyChars, n)
	}
	if !utf8.ValidString(k) {
		return errors.New("a partition key must be valid UTF-8")
	}
	return nil
}

// send writes one batch, retrying only failed entries (in their order) with
// backoff. Whole-call throttling is retried the same way; anything else
// ends the run.
func (p *putter) send(ctx context.Context, batch []putEntry) error {
	pending := append([]putEntry(nil), batch...)
	delay := p.opts.Backoff
	for attempt := 0; ; attempt++ {
		in := &kinesis.PutRecordsInput{StreamName: p.ref.NameInput(), StreamARN: p.ref.ARNInput(),
			Records: make([]types.PutRecordsRequestEntry, len(pending))}
		size := 0
		for i, e := range pending {
			in.Records[i] = types.PutRecordsRequestEntry{Data: e.data, PartitionKey: aws.String(e.key)}
			if e.ehk != "" {
				in.Records[i].ExplicitHashKey = aws.String(e.ehk)
			}
			size += len(e.data) + len(e.key)
		}
		if err := p.limit.wait(ctx, len(pending), size); err != nil {
			return err
		}
		p.stats.Calls++
		out, err := p.api.PutRecords(ctx, in)
		var failed []putEntry
		var lastCode, lastMsg string
		switch {
		case err != nil && isThrottle(err):
			failed, lastCode, lastMsg = pending, "throttled", err.Error()
		case err != nil && outcomeUnknown(err):
			// No answer (or a 5xx): the service may have written the
			// batch, once or, through the SDK's retries, more than once.
			return &outcomeUnknownError{err: err, note: fmt.Sprintf("the %s of that PutRecords call (%s) may have been written, possibly more than once: its answer was lost, so the summary does not count them",
				text.Plural(len(pending), "record"), lineSpan(pending))}
		case err != nil:
			return err
		default:
			if n := lostAttempts(out.ResultMetadata); n > 0 {
				// An attempt that got no answer may have been written before
				// the SDK sent the call again.
				p.stats.maybeTwice += len(pending)
			}
			if len(out.Records) != len(pending) {
				return fmt.Errorf("PutRecords answered %d entries for %d records", len(out.Records), len(pending))
			}
			for i, r := range out.Records {
				if r.ErrorCode != nil {
					failed = append(failed, pending[i])
					lastCode, lastMsg = aws.ToString(r.ErrorCode), aws.ToString(r.ErrorMessage)
					continue
				}
				p.stats.Records++
				p.stats.Bytes += int64(len(pending[i].data))
				p.stats.Shards[aws.ToString(r.ShardId)]++
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if attempt >= p.opts.Retries {
			p.stats.Failed += len(failed)
			return fmt.Errorf("%d record(s) still failed after %d retries (first at line %d): %s: %s", len(failed), p.opts.Retries, failed[0].line, lastCode, lastMsg)
		}
		p.stats.Retried += len(failed)
		p.f.Debugf("put: %d of %d entries failed (%s), retrying in %s", len(failed), len(pending), lastCode, delay)
		if err := kstream.Sleep(ctx, jitter(p.opts.Rand, delay)); err != nil {
			p.stats.Failed += len(failed)
			return err
		}
		delay = min(delay*2, 5*time.Second)
		pending = failed
	}
}

// lostAttempts counts the attempts of a call that got no answer (a dropped
// connection, a timeout) before the SDK sent it again.
func lostAttempts(md middleware.Metadata) int {
	ar, ok := retry.GetAttemptResults(md)
	if !ok {
		return 0
	}
	n := 0
	for _, r := range ar.Results {
		if r.Err != nil && outcomeUnknown(r.Err) {
			var re interface{ HTTPStatusCode() int }
			if !errors.As(r.Err, &re) || re.HTTPStatusCode() == 0 {
				n++
			}
		}
	}
	return n
}

// lineSpan names the input lines of a batch: "line 7" or "lines 3 to 9".
func lineSpan(b []putEntry) string {
	lo, hi := b[0].line, b[0].line
	for _, e := range b {
		lo, hi = min(lo, e.line), max(hi, e.line)
	}
	if lo == hi {
		return fmt.Sprintf("line %d", lo)
	}
	return fmt.Sprintf("lines %d to %d", lo, hi)
}

func isThrottle(err error) bool {
	return awserr.Is(err, awserr.Throttled, awserr.LimitExceeded)
}

// jitter spreads retries over [d/2, d).
func jitter(r *rand.Rand, d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(r.Int64N(int64(d/2)))
}

func (p *putter) report() {
	s := p.stats
	if s.maybeTwice > 0 {
		fmt.Fprintf(p.f.IO.ErrOut, "warning: %s may be stored twice: the answer to a PutRecords call was lost and the SDK sent the call again\n", text.Plural(s.maybeTwice, "record"))
	}
	if p.opts.Output == "json" {
		render.JSON(p.f.IO.Out, s)
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
	msg += s.rateNote()
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
	fmt.Fprintln(p.f.IO.ErrOut, msg)
}
