package awscall

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		attempt int
		lo, hi  time.Duration // the range the wait must fall in
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{3, 2 * time.Second, 4 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{5, 5 * time.Second, 10 * time.Second}, // capped at hi
		{50, 5 * time.Second, 10 * time.Second},
	}
	for _, tc := range tests {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := Backoff(r, time.Second, 10*time.Second, tc.attempt)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("attempt %d: %v outside [%v, %v]", tc.attempt, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Fatalf("attempt %d: only %d distinct waits in 200: no jitter", tc.attempt, len(seen))
		}
	}
}

// A throttled shard is refused for the rest of its second: no wait after a
// throttle may be shorter than a second, and repeated throttles wait longer.
func TestAfterThrottle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{1, time.Second, 1500 * time.Millisecond},
		{2, 2 * time.Second, 3 * time.Second},
		{3, 4 * time.Second, 6 * time.Second},
		{4, 8 * time.Second, 12 * time.Second},
		{40, 8 * time.Second, 12 * time.Second},
	}
	for _, tc := range tests {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := AfterThrottle(r, tc.attempt)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("attempt %d: %v outside [%v, %v]", tc.attempt, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Fatalf("attempt %d: only %d distinct waits in 200: no jitter", tc.attempt, len(seen))
		}
	}
}
