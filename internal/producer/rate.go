package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// Clock is the time the limiter paces Run by; tests give a fake one.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time                                   { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error { return awscall.Sleep(ctx, d) }

// limiter caps what Run sends: records per second (Options.Rate) and bytes
// per second (Options.RateBytes; data + partition key, as the stream's
// write quota counts them). Each is a token bucket (golang.org/x/time/rate)
// that holds a tenth of a second's worth, and no call carries more than
// that, so over any second the stream gets at most 1.1 times the cap and
// calls stay small and steady. Every entry sent counts, retries too: each
// one reaches the stream again. A record bigger than the byte bucket waits
// until its bytes have come in, then goes alone.
type limiter struct {
	records, bytes *rate.Limiter // nil: no cap
	clock          Clock
}

func newLimiter(recordsPerSecond float64, bytesPerSecond int64, clock Clock) *limiter {
	l := &limiter{clock: clock}
	if recordsPerSecond > 0 {
		l.records = rate.NewLimiter(rate.Limit(recordsPerSecond), max(1, int(min(recordsPerSecond/10, math.MaxInt32))))
	}
	if bytesPerSecond > 0 {
		l.bytes = rate.NewLimiter(rate.Limit(bytesPerSecond), int(max(1, min(bytesPerSecond/10, math.MaxInt32))))
	}
	return l
}

// batchLimits is the most records and bytes one call may carry.
func (l *limiter) batchLimits() (records, bytes int) {
	records, bytes = maxBatchRecords, maxBatchBytes
	if l.records != nil {
		records = min(records, l.records.Burst())
	}
	if l.bytes != nil {
		bytes = min(bytes, l.bytes.Burst())
	}
	return records, bytes
}

// wait blocks until a call of n records and size bytes may be sent.
func (l *limiter) wait(ctx context.Context, n, size int) error {
	if err := l.take(ctx, l.records, n); err != nil {
		return err
	}
	return l.take(ctx, l.bytes, size)
}

// take takes n tokens, a burst at a time when n is more than one burst.
func (l *limiter) take(ctx context.Context, lim *rate.Limiter, n int) error {
	if lim == nil {
		return nil
	}
	for n > 0 {
		k := min(n, lim.Burst())
		now := l.clock.Now()
		r := lim.ReserveN(now, k)
		if !r.OK() {
			return fmt.Errorf("rate limiter refused %d tokens", k) // k ≤ burst: cannot happen
		}
		if d := r.DelayFrom(now); d > 0 {
			if err := l.clock.Sleep(ctx, d); err != nil {
				r.CancelAt(l.clock.Now())
				return err
			}
		}
		n -= k
	}
	return nil
}

// ParseByteRate reads --rate-bytes: a number of bytes per second, with an
// optional unit (B, KiB, MiB, GiB, or kB, MB, GB) and an optional "/s".
func ParseByteRate(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
	v, err := strconv.ParseFloat(num, 64)
	switch {
	case !ok:
		return 0, fmt.Errorf("unknown unit %q in %q: use bytes, KiB, MiB, GiB, kB, MB or GB (per second)", unit, s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a number of bytes per second", s)
	}
	b := v * mult
	switch {
	case b < 1:
		return 0, errors.New("it must be at least 1 byte per second")
	case b > math.MaxInt64/2:
		return 0, fmt.Errorf("%q is more bytes per second than any stream takes: leave --rate-bytes out for no cap", s)
	}
	return int64(b), nil
}
