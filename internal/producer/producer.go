package producer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// PutRecords limits. The request limit is 10 MiB today; we stay at half so a
// batch is not one giant throttled request.
const (
	maxBatchRecords = 500
	maxBatchBytes   = 5 << 20
	maxKeyChars     = 256
	// maxBackoff caps the doubling wait between retries.
	maxBackoff = 5 * time.Second
)

// API is what the producer needs from the client.
type API interface {
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
}

var _ API = (*kinesis.Client)(nil)

// Options are the inputs of Run.
type Options struct {
	// Key is the partition key of every record ("": see KeyField).
	Key string
	// KeyField is the dotted path of the JSON field of each line that
	// holds its partition key ("" with Key "": a random key per record).
	KeyField string
	// Retries is how many times failed entries are sent again.
	Retries int
	// Linger is how long a partial batch waits for more lines.
	Linger time.Duration
	// Backoff is the first retry delay (doubling, capped at 5 s).
	Backoff time.Duration
	// Rand draws random keys and jitter (nil: a random source).
	Rand *rand.Rand
	// Format is how the input is read: FormatLines or FormatJSON.
	Format string
	// Rate and RateBytes cap records and bytes per second (0: no cap).
	Rate      float64
	RateBytes int64
	// MaxRecordBytes is the stream's largest record (data + partition key).
	MaxRecordBytes int
	// Clock is the time Run paces itself by (nil: the real one).
	Clock Clock
	// Debugf receives a line for --debug at each retry (nil: none).
	Debugf func(format string, args ...any)
	// Warnf receives, once, the warning about records tail had unpacked
	// (nil: none).
	Warnf func(format string, args ...any)
}

// Stats is what Run did; its JSON names are documented (put -o json).
type Stats struct {
	// Stream is the stream's name; Run leaves it to the caller, who knows
	// the name the service gives.
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

	// MaybeTwice counts records whose call was sent again by the SDK after
	// an attempt that got no answer: they may be stored twice.
	MaybeTwice int `json:"-"`
}

// UnknownOutcomeError is a PutRecords call that got no answer (or a 5xx):
// the service may have written its records, once or, through the SDK's
// retries, more than once. They are not counted in the Stats.
type UnknownOutcomeError struct {
	Err error
	// Records is how many records the call carried.
	Records int
	// Lines names their input lines: "line 7" or "lines 3 to 9".
	Lines string
}

func (e *UnknownOutcomeError) Error() string { return e.Err.Error() }
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

type entry struct {
	line int
	key  string
	ehk  string // explicit hash key, "" for none
	data []byte
}

type inputLine struct {
	n    int
	data []byte
	err  error
}

// Run writes the lines of in to the stream ref names, until in ends, ctx
// ends or a record cannot be written, and returns what it did. The error
// names the input line at fault; an *UnknownOutcomeError is a call whose
// records may have been written.
func Run(ctx context.Context, api API, ref kstream.Ref, in io.Reader, o Options) (Stats, error) {
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Debugf == nil {
		o.Debugf = func(string, ...any) {}
	}
	if o.Warnf == nil {
		o.Warnf = func(string, ...any) {}
	}
	p := &putter{api: api, ref: ref, in: in, opts: &o, stats: Stats{Shards: map[string]int{}},
		limit: newLimiter(o.Rate, o.RateBytes, o.Clock)}
	start := o.Clock.Now()
	err := p.run(ctx)
	p.stats.Seconds = o.Clock.Now().Sub(start).Seconds()
	p.stats.setRates(&o)
	return p.stats, err
}

type putter struct {
	api   API
	ref   kstream.Ref
	in    io.Reader
	opts  *Options
	stats Stats
	limit *limiter
	// warnedUnpacked: the warning about records tail had unpacked was given.
	warnedUnpacked bool
}

func (p *putter) run(ctx context.Context) error {
	lines := make(chan inputLine, 1024)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go readLines(readCtx, p.in, lines)

	var (
		batch []entry
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
			if n > p.opts.MaxRecordBytes {
				if ferr := flush(); ferr != nil {
					return ferr
				}
				return fmt.Errorf("line %d: a record of %d bytes (data + partition key) is larger than the stream's limit of %d bytes", l.n, n, p.opts.MaxRecordBytes)
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

// readLines sends the input's lines (without their line ending) until EOF.
func readLines(ctx context.Context, r io.Reader, out chan<- inputLine) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
			select {
			case out <- inputLine{n: n, data: line}:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				select {
				case out <- inputLine{n: n, err: err}:
				case <-ctx.Done():
				}
			}
			return
		}
	}
}

// send writes one batch, retrying only failed entries (in their order) with
// backoff. Whole-call throttling is retried the same way; anything else
// ends the run.
func (p *putter) send(ctx context.Context, batch []entry) error {
	pending := append([]entry(nil), batch...)
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
		var failed []entry
		var lastCode, lastMsg string
		switch {
		case err != nil && awserr.Is(err, awserr.Throttled, awserr.LimitExceeded):
			failed, lastCode, lastMsg = pending, "throttled", err.Error()
		case err != nil && awserr.MayHaveTakenEffect(err):
			// No answer (or a 5xx): the service may have written the
			// batch, once or, through the SDK's retries, more than once.
			return &UnknownOutcomeError{Err: err, Records: len(pending), Lines: lineSpan(pending)}
		case err != nil:
			return err
		default:
			if n := lostAttempts(out.ResultMetadata); n > 0 {
				// An attempt that got no answer may have been written before
				// the SDK sent the call again.
				p.stats.MaybeTwice += len(pending)
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
		p.opts.Debugf("put: %d of %d entries failed (%s), retrying in %s", len(failed), len(pending), lastCode, delay)
		if err := awscall.Sleep(ctx, jitter(p.opts.Rand, delay)); err != nil {
			p.stats.Failed += len(failed)
			return err
		}
		delay = min(delay*2, maxBackoff)
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
		if r.Err != nil && awserr.MayHaveTakenEffect(r.Err) {
			var re interface{ HTTPStatusCode() int }
			if !errors.As(r.Err, &re) || re.HTTPStatusCode() == 0 {
				n++
			}
		}
	}
	return n
}

// lineSpan names the input lines of a batch: "line 7" or "lines 3 to 9".
func lineSpan(b []entry) string {
	lo, hi := b[0].line, b[0].line
	for _, e := range b {
		lo, hi = min(lo, e.line), max(hi, e.line)
	}
	if lo == hi {
		return fmt.Sprintf("line %d", lo)
	}
	return fmt.Sprintf("lines %d to %d", lo, hi)
}

// jitter spreads retries over [d/2, d). (awscall.Backoff draws from
// [d/2, d], so it is not used: the waits stay what they were.)
func jitter(r *rand.Rand, d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(r.Int64N(int64(d/2)))
}

// setRates fills the achieved rates, and the caps.
func (s *Stats) setRates(o *Options) {
	if s.Seconds > 0 {
		s.RecordsPerSecond = float64(s.Records) / s.Seconds
		s.BytesPerSecond = float64(s.Bytes) / s.Seconds
	}
	s.MaxRecordsPerSecond, s.MaxBytesPerSecond = o.Rate, o.RateBytes
}
