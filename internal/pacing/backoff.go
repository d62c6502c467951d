package pacing

import (
	"math/rand/v2"
	"time"
)

// Backoff is the wait before retry number attempt (1 for the first retry)
// of a call that was throttled or failed: lo doubled attempt-1 times, at
// most hi, with jitter in [d/2, d] so that readers throttled together do
// not retry together. The caller resets attempt after a success.
func Backoff(r *rand.Rand, lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + time.Duration(r.Int64N(int64(d/2)+1))
}

// After a throttle. The service refuses a shard's reads for the rest of the
// second in which they went over its quota (5 calls, or 2 MiB), so a retry
// sooner than a second later is refused again and counts against the next
// second too. ThrottleQuiet is that second; AfterThrottle doubles it under
// repeated throttles, up to maxThrottleQuiet, and never goes below it: the
// jitter is added on top, [d, 1.5d], so readers throttled together spread
// out without any of them coming back early.
const (
	ThrottleQuiet    = time.Second
	maxThrottleQuiet = 8 * time.Second
)

// AfterThrottle is the wait before the next call to a shard after its
// attempt-th throttle in a row (1 for the first): 1–1.5 s, 2–3 s, 4–6 s,
// then 8–12 s.
func AfterThrottle(r *rand.Rand, attempt int) time.Duration {
	d := ThrottleQuiet
	for i := 1; i < attempt && d < maxThrottleQuiet; i++ {
		d *= 2
	}
	return d + time.Duration(r.Int64N(int64(d/2)+1))
}
