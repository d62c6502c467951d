package awscall

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// outcome is what became of one paced attempt.
type outcome int

const (
	answered outcome = iota
	idle
	throttled
	failed
)

// TestPacerKeepsTheShardQuotas drives a pacer through random runs of
// answers (small and large), caught-up polls, throttles and failures,
// always starting the next attempt at the first moment it allows, and
// checks the quota rules on the attempts it produced:
//   - no more than 5 attempts start in any second, retries counted;
//   - the bytes answered in any second stay within 2 MiB, but for the
//     last answer of that second (one call may take up to 10 MiB: the
//     pacer then waits for the quota those bytes used);
//   - at least a second of quiet after a throttle, at least two after the
//     second in a row, and so on up to eight;
//   - a caught-up poll waits its interval.
func TestPacerKeepsTheShardQuotas(t *testing.T) {
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			p := NewPacer(rand.New(rand.NewPCG(seed, 8)), 0)
			type attempt struct {
				at    time.Time
				out   outcome
				bytes int
				run   int // throttles in a row, this one included
			}
			var log []attempt
			now := time.Unix(1_700_000_000, 0)
			const poll = 700 * time.Millisecond
			for range 400 {
				if w := p.Until(now); w > 0 {
					now = now.Add(w)
				}
				// A caller may come later than allowed, never sooner.
				now = now.Add(time.Duration(rng.IntN(3)) * 10 * time.Millisecond)
				p.Attempt(now)
				a := attempt{at: now, out: outcome(rng.IntN(4))}
				switch a.out {
				case answered:
					a.bytes = rng.IntN(3) * rng.IntN(10<<20/2) // none, or up to 5 MiB
					p.Answered(now, a.bytes)
				case idle:
					p.Idle(now, poll)
				case throttled:
					p.Throttled(now)
					a.run = p.Throttles()
				case failed:
					p.Failed(now)
				}
				log = append(log, a)
			}
			for i, a := range log {
				calls, bytes, last := 0, 0, 0
				for _, b := range log[i:] {
					if b.at.Sub(a.at) >= time.Second {
						break
					}
					calls++
					bytes += b.bytes
					last = b.bytes
				}
				bytes -= last
				if calls > CallsPerSecond {
					t.Fatalf("%d attempts within a second of %s", calls, a.at)
				}
				if bytes > ReadBytesPerSecond {
					t.Fatalf("%d bytes answered within a second of %s before its last answer", bytes, a.at)
				}
				if i+1 == len(log) {
					break
				}
				gap := log[i+1].at.Sub(a.at)
				switch a.out {
				case throttled:
					quiet := min(ThrottleQuiet<<(a.run-1), maxThrottleQuiet)
					if gap < quiet {
						t.Fatalf("throttle %d in a row at %s followed after %s, want at least %s", a.run, a.at, gap, quiet)
					}
				case idle:
					if gap < poll {
						t.Fatalf("caught-up poll at %s followed after %s, want the %s interval", a.at, gap, poll)
					}
				case answered:
					if need := time.Duration(float64(a.bytes) / ReadBytesPerSecond * float64(time.Second)); gap < need {
						t.Fatalf("answer of %d bytes at %s followed after %s, want %s", a.bytes, a.at, gap, need)
					}
				}
			}
		})
	}
}

// An answer ends the runs: the next throttle waits a second again.
func TestPacerAnswerEndsTheRuns(t *testing.T) {
	p := NewPacer(rand.New(rand.NewPCG(1, 1)), 0)
	at := time.Unix(0, 0)
	for range 3 {
		p.Throttled(at)
		p.Failed(at)
	}
	if p.Throttles() != 3 || p.Failures() != 3 {
		t.Fatalf("runs %d throttles, %d failures; want 3, 3", p.Throttles(), p.Failures())
	}
	p.Answered(at, 0)
	if p.Throttles() != 0 || p.Failures() != 0 {
		t.Fatalf("runs after an answer: %d, %d", p.Throttles(), p.Failures())
	}
	if d := p.Throttled(at); d < ThrottleQuiet || d > ThrottleQuiet*3/2 {
		t.Fatalf("first throttle after an answer waits %s", d)
	}
}

func TestOnRead(t *testing.T) {
	api := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }
	for _, tc := range []struct {
		err  error
		want Verdict
	}{
		{&types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}, Throttle},
		{&types.LimitExceededException{}, Throttle},
		{&types.ExpiredIteratorException{}, Renew},
		{&types.ResourceNotFoundException{}, Gone},
		{api("InternalFailure"), Retry},
		{fmt.Errorf("get records: %w", api("ServiceUnavailable")), Retry},
		{&types.InvalidArgumentException{}, Stop},
		{&types.AccessDeniedException{}, Stop},
		{errors.New("something else"), Stop},
	} {
		if got := OnRead(tc.err); got != tc.want {
			t.Errorf("OnRead(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
