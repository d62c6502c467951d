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
