package awscall

import (
	"math/rand/v2"
	"time"
)

// A shard's read quotas, shared by every reader of the shard: 5 calls a
// second (GetRecords and GetShardIterator each), every attempt counted,
// retries included, and 2 MiB a second of records.
const (
	CallsPerSecond     = 5
	ReadBytesPerSecond = 2 << 20
	// MinCallInterval is a Pacer's floor between attempts: 4.5 a second,
	// a margin under the quota for clock jitter.
	MinCallInterval = 220 * time.Millisecond
)

// After a throttle. The service refuses a shard's reads for the rest of the
// second in which they went over its quota, so a retry sooner than a
// second later is refused again and counts against the next second too.
// ThrottleQuiet is that second; AfterThrottle doubles it under repeated
// throttles, up to maxThrottleQuiet, and never goes below it: the jitter
// is added on top, [d, 1.5d], so readers throttled together spread out
// without any of them coming back early.
const (
	ThrottleQuiet    = time.Second
	maxThrottleQuiet = 8 * time.Second
)

// AfterThrottle is the wait before the next call to a shard after its
// attempt-th throttle in a row (1 for the first): 1–1.5 s, 2–3 s, 4–6 s,
// then 8–12 s.
func AfterThrottle(r *rand.Rand, attempt int) time.Duration {
	d := doubled(ThrottleQuiet, maxThrottleQuiet, attempt)
	return d + time.Duration(r.Int64N(int64(d/2)+1))
}

// Backoff is the wait before retry number attempt (1 for the first retry)
// of a call that failed: lo doubled attempt-1 times, at most hi, with
// jitter in [d/2, d]. The DataRead row uses it; so do the lease table's
// background loops, with their own bounds.
func Backoff(r *rand.Rand, lo, hi time.Duration, attempt int) time.Duration {
	return Rule{First: lo, Max: hi, Jitter: true}.Wait(r, attempt)
}

// Pacer paces one reader's calls of one operation to one shard: it says
// when the next attempt may start. Every reader that polls a shard keeps
// one for GetRecords (and one for GetShardIterator, whose quota is its
// own), and reports each attempt and its outcome:
//
//   - attempts start at least MinInterval apart, whatever their outcome
//     (at most 5 a second, retries counted);
//   - after an answer of n bytes the next waits until the shard's 2 MiB a
//     second has refilled for them;
//   - after a throttle, at least a second of quiet, longer under repeated
//     throttles (AfterThrottle);
//   - after a passing failure, the DataRead backoff (and never less than
//     MinInterval).
//
// A Pacer is not safe for concurrent use: it belongs to one reader.
type Pacer struct {
	// MinInterval is the floor between attempts (MinCallInterval when 0;
	// tests shorten it).
	MinInterval time.Duration
	rng         *rand.Rand
	next        time.Time
	throttles   int
	failures    int
}

// NewPacer returns a pacer whose first attempt may start at once.
func NewPacer(rng *rand.Rand, minInterval time.Duration) *Pacer {
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Pacer{MinInterval: minInterval, rng: rng}
}

func (p *Pacer) floor() time.Duration {
	if p.MinInterval > 0 {
		return p.MinInterval
	}
	return MinCallInterval
}

// Next is when the next attempt may start.
func (p *Pacer) Next() time.Time { return p.next }

// Until is how long from now until the next attempt may start (≤ 0: now).
func (p *Pacer) Until(now time.Time) time.Duration { return p.next.Sub(now) }

// Attempt records that an attempt starts at t: the next no sooner than the
// floor after it, whatever this one's outcome.
func (p *Pacer) Attempt(t time.Time) { p.next = t.Add(p.floor()) }

// Answered records an answer to the attempt started at t that carried n
// bytes of records: the runs of failures end, and the next attempt waits
// for the read quota those bytes used.
func (p *Pacer) Answered(t time.Time, n int) {
	p.throttles, p.failures = 0, 0
	p.after(t, max(p.floor(), time.Duration(float64(n)/ReadBytesPerSecond*float64(time.Second))))
}

// Idle records a caught-up answer to the attempt started at t: the next
// attempt in interval (a poll), never sooner than the floor.
func (p *Pacer) Idle(t time.Time, interval time.Duration) {
	p.throttles, p.failures = 0, 0
	p.after(t, max(p.floor(), interval))
}

// Throttled records a throttle of the attempt started at t and returns the
// wait before the next.
func (p *Pacer) Throttled(t time.Time) time.Duration {
	p.throttles++
	d := max(p.floor(), AfterThrottle(p.rng, p.throttles))
	p.next = t.Add(d)
	return d
}

// Failed records a passing failure of the attempt started at t and returns
// the wait before the next.
func (p *Pacer) Failed(t time.Time) time.Duration {
	p.failures++
	d := max(p.floor(), Rules[DataRead].Wait(p.rng, p.failures))
	p.next = t.Add(d)
	return d
}

// Throttles and Failures are the current runs (reset by an answer).
func (p *Pacer) Throttles() int { return p.throttles }
func (p *Pacer) Failures() int  { return p.failures }

// after moves the next attempt to t+d unless it is already later.
func (p *Pacer) after(t time.Time, d time.Duration) {
	if n := t.Add(d); n.After(p.next) {
		p.next = n
	}
}
