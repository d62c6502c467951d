package tail

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// After a throttle the service refuses the shard for the rest of the
// second: the reader's next call to it comes at least a second later, and
// later still under repeated throttles (2 s, then 4 s).
func TestThrottledReaderWaitsOutTheQuietSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, 1)
		w.put(2, 20)
		var mu sync.Mutex
		throttles := 3
		w.fake.Hook = func(op string, _ any) error {
			mu.Lock()
			defer mu.Unlock()
			if op == "GetRecords" && throttles > 0 {
				throttles--
				return &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard shardId-000000000000")}
			}
			return nil
		}
		out := &sink{}
		opts := fastOptions()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		res, err := New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
		if err != nil || res.Reason != StopIdle {
			t.Fatalf("reason %v, err %v", res.Reason, err)
		}
		w.checkDelivered(out.records(), true)
		calls := w.fake.GetRecordsTimes()["shardId-000000000000"]
		if len(calls) < 4 {
			t.Fatalf("%d GetRecords calls, want the 3 throttled and more", len(calls))
		}
		for i, least := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			if gap := calls[i+1].Sub(calls[i]); gap < least {
				t.Errorf("call %d came %v after throttle %d: want at least %v", i+2, gap, i+1, least)
			}
		}
	})
}

// A backend that never ends a closed shard (moto) holds its children back:
// --debug says so at once, and after a minute stderr says it once; the
// tail does not exit idle meanwhile (the children are unread).
func TestClosedShardThatNeverEndsIsSaid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, 1)
		w.fake.NeverEnd = true
		w.put(2, 5)
		w.fake.SplitHalf(w.stream, "shardId-000000000000")
		w.put(2, 5) // in the children
		var mu sync.Mutex
		var debug, warns []string
		opts := fastOptions()
		opts.Logf = func(format string, args ...any) {
			mu.Lock()
			debug = append(debug, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		opts.Warnf = func(format string, args ...any) {
			mu.Lock()
			warns = append(warns, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		out := &sink{}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
		if err != nil || res.Reason != StopInterrupted {
			t.Fatalf("reason %v, err %v: the tail must keep waiting for the parent's end", res.Reason, err)
		}
		if n := len(out.records()); n != 5 {
			t.Fatalf("%d records delivered, want the parent's 5 (the children wait)", n)
		}
		mu.Lock()
		defer mu.Unlock()
		var said []string
		for _, l := range warns {
			if strings.Contains(l, "waiting for shardId-000000000000 to end before reading its children") {
				said = append(said, l)
			}
		}
		if len(said) != 1 {
			t.Fatalf("warnings %q: want the wait said once", warns)
		}
		found := false
		for _, l := range debug {
			if strings.Contains(l, "--idle-exit waits for shard shardId-000000000000: closed") {
				found = true
			}
		}
		if !found {
			t.Fatalf("--debug never said what --idle-exit waits on:\n%s", strings.Join(debug, "\n"))
		}
	})
}
