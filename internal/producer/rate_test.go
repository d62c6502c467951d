package producer

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// fakeClock is time that passes only when put sleeps.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return nil
}

func TestPutLimiter(t *testing.T) {
	ctx := context.Background()
	t.Run("a rate past any stream", func(t *testing.T) {
		// Its bucket is the largest there is, not an int overflown to 1.
		if r, _ := newLimiter(1e300, 0, &fakeClock{t: replayAt}).batchLimits(); r != maxBatchRecords {
			t.Fatalf("batch limit %d records at --rate 1e300", r)
		}
	})
	t.Run("records", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newLimiter(100, 0, clock)
		if r, b := l.batchLimits(); r != 10 || b != maxBatchBytes {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		// 100 calls of 10 records: the first from the full bucket, then
		// one every 0.1 s.
		for i := range 100 {
			if err := l.wait(ctx, 10, 1<<20); err != nil {
				t.Fatal(err)
			}
			if got, want := clock.Now().Sub(replayAt), time.Duration(i)*100*time.Millisecond; absDur(got-want) > time.Millisecond {
				t.Fatalf("call %d at %s, want %s", i, got, want)
			}
		}
	})
	t.Run("a record bigger than the byte bucket", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newLimiter(0, 1000, clock) // 100-byte bucket
		if r, b := l.batchLimits(); r != maxBatchRecords || b != 100 {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		if err := l.wait(ctx, 1, 100); err != nil { // the full bucket
			t.Fatal(err)
		}
		if err := l.wait(ctx, 1, 2500); err != nil {
			t.Fatal(err)
		}
		if got := clock.Now().Sub(replayAt); absDur(got-2500*time.Millisecond) > time.Millisecond {
			t.Fatalf("2,500 bytes at 1,000 B/s sent after %s, want 2.5s", got)
		}
	})
	t.Run("slow rates keep a bucket of one", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newLimiter(0.5, 5, clock)
		if r, b := l.batchLimits(); r != 1 || b != 1 {
			t.Fatalf("batch limits %d records, %d bytes", r, b)
		}
		for range 3 {
			if err := l.wait(ctx, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		if got := clock.Now().Sub(replayAt); absDur(got-4*time.Second) > time.Millisecond {
			t.Fatalf("3 records at 0.5/s took %s, want 4s", got)
		}
	})
	t.Run("no cap", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newLimiter(0, 0, clock)
		if err := l.wait(ctx, 500, 5<<20); err != nil || !clock.Now().Equal(replayAt) {
			t.Fatalf("waited: %v", err)
		}
	})
	t.Run("stopping", func(t *testing.T) {
		clock := &fakeClock{t: replayAt}
		l := newLimiter(1, 0, clock)
		if err := l.wait(ctx, 1, 0); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := l.wait(cctx, 1, 0); err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
	})
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// timedPut records the (fake) time of every call.
type timedPut struct {
	fakePut
	clock *fakeClock
	at    []time.Duration
	sizes []int
}

func (f *timedPut) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, o ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	f.at = append(f.at, f.clock.Now().Sub(replayAt))
	f.sizes = append(f.sizes, len(in.Records))
	return f.fakePut.PutRecords(ctx, in, o...)
}

// Rate caps the records sent in any second, retries included, and the
// Stats give the achieved rate. (cmd's TestPutRate checks the summary line.)
func TestPutRate(t *testing.T) {
	clock := &fakeClock{t: replayAt}
	fake := &timedPut{clock: clock, fakePut: fakePut{fail: func(call, i int, e types.PutRecordsRequestEntry) bool { return call == 3 && i < 4 }}}
	opts := testOpts()
	opts.Rate, opts.Clock = 50, clock
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "{\"k\":\"key%d\"}\n", i)
	}
	opts.KeyField = "k"
	st, err := runTest(t, fake, in.String(), opts)
	if err != nil || len(fake.written) != 200 {
		t.Fatalf("err %v, %d written", err, len(fake.written))
	}
	sent := 0
	for i, at := range fake.at {
		if fake.sizes[i] > 5 {
			t.Fatalf("call %d carried %d records, more than a tenth of a second's worth", i, fake.sizes[i])
		}
		sent += fake.sizes[i]
		// A bucket of 5, refilled at 50/s.
		if limit := 5 + 50*at.Seconds() + 1e-6; float64(sent) > limit {
			t.Fatalf("call %d at %s: %d records sent, more than %.0f", i, at, sent, limit)
		}
	}
	if sent != 204 { // 200 and the 4 retried
		t.Fatalf("%d entries sent, want 204", sent)
	}
	// 204 entries: 5 at once, then 199 at 50/s.
	if st.Records != 200 || st.Calls != 41 || st.Retried != 4 || st.Bytes != 2690 || math.Abs(st.Seconds-3.98) > 1e-9 ||
		fmt.Sprintf("%.1f", st.RecordsPerSecond) != "50.3" || int64(st.BytesPerSecond) != 675 ||
		st.MaxRecordsPerSecond != 50 || st.MaxBytesPerSecond != 0 || fmt.Sprint(st.Shards) != "map[shardId-000000000000:200]" {
		t.Fatalf("stats %+v", st)
	}
}

// Stats carry the achieved rates, and the caps when there are.
func TestPutRateStats(t *testing.T) {
	for _, capped := range []bool{false, true} {
		clock := &fakeClock{t: replayAt}
		opts := testOpts()
		opts.Clock, opts.Key = clock, "k"
		if capped {
			opts.Rate, opts.RateBytes = 2, 100
		}
		st, err := runTest(t, &fakePut{}, "aaaa\nbbbb\ncccc\n", opts)
		if err != nil {
			t.Fatal(err)
		}
		if !capped {
			// No time passed on the fake clock: no rate to give.
			if st.Seconds != 0 || st.RecordsPerSecond != 0 || st.BytesPerSecond != 0 || st.MaxRecordsPerSecond != 0 || st.MaxBytesPerSecond != 0 {
				t.Fatalf("uncapped: %+v", st)
			}
			continue
		}
		// 3 records of 5 bytes (with the key) at 2/s and 100 B/s: the
		// first at once, then 0.5 s each.
		if st.Seconds != 1 || st.RecordsPerSecond != 3 || st.BytesPerSecond != 12 || st.MaxRecordsPerSecond != 2 || st.MaxBytesPerSecond != 100 {
			t.Fatalf("capped: %+v", st)
		}
	}
}

func TestParseByteRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{"2048", 2048, ""},
		{"1.5KiB", 1536, ""},
		{"1MiB/s", 1 << 20, ""},
		{"500kB", 500000, ""},
		{" 2 GB ", 2e9, ""},
		{"0", 0, "it must be at least 1 byte per second"},
		{"", 0, `"" is not a number of bytes per second`},
		{"3parsec", 0, `unknown unit "parsec" in "3parsec": use bytes, KiB, MiB, GiB, kB, MB or GB (per second)`},
		{"1e30GB", 0, `unknown unit "e30GB" in "1e30GB": use bytes, KiB, MiB, GiB, kB, MB or GB (per second)`},
		{"9999999999GiB", 0, `"9999999999GiB" is more bytes per second than any stream takes: leave --rate-bytes out for no cap`},
	} {
		got, err := ParseByteRate(tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) || got != tt.want {
			t.Errorf("ParseByteRate(%q) = %d, %v; want %d, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}
