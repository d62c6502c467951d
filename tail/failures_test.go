package tail

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
)

// How the tail holds up when calls fail, consumers are slow and shards
// change under a lagging reader.

// A consumer slower than the reads slows the reading down: pages bigger
// than their reservation are taken in full once fetched, never waited for
// under the call's deadline, so no call fails and no page is fetched twice.
func TestSlowConsumerIsBackPressure(t *testing.T) {
	const shards, pages, perPage = 3, 2, 3000 // 3 MiB pages, beyond the first reservation
	s, err := wirestub.Start(wirestub.Options{Shards: shards, Pages: pages, RecordSize: 1024, RecordsPerPage: perPage})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := fastOptions()
	opts.StreamName = "bench"
	opts.CallTimeout = time.Second // far shorter than a wait for room
	opts.IdleExit = 300 * time.Millisecond
	var delivered atomic.Int64
	slow := func(b []Record) error {
		time.Sleep(1200 * time.Millisecond) // a stdout paused for longer than a call may take
		delivered.Add(int64(len(b)))
		return nil
	}
	var logs []string
	var lmu sync.Mutex
	opts.Logf = func(f string, a ...any) { lmu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); lmu.Unlock() }
	tl := New(stubClient(s), NewMemoryStore(nil), opts, slow)
	tl.pages = newPageBudget(4 << 20) // room for one page and a reservation
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := tl.Run(ctx)
	if err != nil {
		t.Fatalf("tail with a slow consumer: %v", err)
	}
	lmu.Lock()
	defer lmu.Unlock()
	waited := 0
	for _, l := range logs {
		if strings.Contains(l, "deadline exceeded") {
			waited++
		}
	}
	// Full pages served beyond one per page were fetched again (a dropped
	// keep-alive connection can do that too; a wait for room cannot).
	if res.Reason != StopIdle || delivered.Load() != shards*pages*perPage || waited > 0 {
		t.Fatalf("reason %v, delivered %d of %d, %d calls timed out waiting for room (%d full pages served for %d)\n%s",
			res.Reason, delivered.Load(), shards*pages*perPage, waited, s.Stats().BehindPages, shards*pages, strings.Join(logs, "\n"))
	}
}

// A reader waiting for page room holds no call slot, so shards with small
// pages go on being read behind backlogged ones.
func TestBudgetWaitHoldsNoCallSlot(t *testing.T) {
	w := newWorld(t, 1)
	w.put(1, 1)
	tl := New(w.fake, NewMemoryStore(nil), fastOptions(), func([]Record) error { return nil })
	tl.calls = make(callSlots, 1)
	tl.pages = newPageBudget(1 << 20)
	holder := &pageTicket{budget: tl.pages}
	if err := holder.hold(context.Background(), 1<<20); err != nil { // the budget, all taken
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &reader{t: tl, id: "shardId-000000000000", start: startPoint{kind: types.ShardIteratorTypeTrimHorizon}}
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	// The reader has its iterator and waits for room for its first page.
	waiting := func() bool {
		tl.pages.mu.Lock()
		defer tl.pages.mu.Unlock()
		return len(tl.pages.waiters) > 0
	}
	for deadline := time.Now().Add(10 * time.Second); !waiting(); {
		if time.Now().After(deadline) {
			t.Fatal("the reader never waited for room")
		}
		time.Sleep(time.Millisecond)
	}
	actx, acancel := context.WithTimeout(context.Background(), time.Second)
	defer acancel()
	if err := tl.calls.acquire(actx); err != nil {
		t.Fatalf("no call slot while a reader waits for room: %v", err)
	}
	tl.calls.release()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	holder.drop()
}

// A caught-up reader whose calls then fail is no longer at its tip:
// --idle-exit waits for an answer, and the records written meanwhile are
// delivered before the tail exits 0.
func TestIdleExitWaitsThroughFailures(t *testing.T) {
	for _, fault := range []error{
		&types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")},
		&types.InternalFailureException{Message: aws.String("Internal service failure.")},
	} {
		t.Run(fmt.Sprintf("%T", fault), func(t *testing.T) {
			w := newWorld(t, 1)
			w.put(1, 5)
			var failing atomic.Bool
			w.fake.Hook = func(op string, _ any) error {
				if op == "GetRecords" && failing.Load() {
					return fault
				}
				return nil
			}
			out := &sink{}
			var warnings []string
			var wmu sync.Mutex
			opts := fastOptions()
			opts.IdleExit = 300 * time.Millisecond
			opts.Warnf = func(f string, a ...any) { wmu.Lock(); warnings = append(warnings, fmt.Sprintf(f, a...)); wmu.Unlock() }
			defer func(d time.Duration) { throttleWarnAfter = d }(throttleWarnAfter)
			throttleWarnAfter = 200 * time.Millisecond
			type ran struct {
				res Result
				err error
			}
			done := make(chan ran, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go func() {
				res, err := New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
				done <- ran{res, err}
			}()
			for len(out.records()) < 5 {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // at its tip
			failing.Store(true)
			w.put(1, 10)
			// Every call fails, for longer than --idle-exit, and until the
			// warning came (after a throttle the next call is a second or
			// more away).
			time.Sleep(4 * opts.IdleExit)
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				wmu.Lock()
				warned := len(warnings) > 0
				wmu.Unlock()
				if warned {
					break
				}
			}
			failing.Store(false)
			r := <-done
			if r.err != nil || r.res.Reason != StopIdle {
				t.Fatalf("reason %v, err %v", r.res.Reason, r.err)
			}
			w.checkDelivered(out.records(), true)
			wmu.Lock()
			defer wmu.Unlock()
			if len(warnings) != 1 || !strings.Contains(warnings[0], "loses nothing") {
				t.Fatalf("warnings %q, want one that the shard keeps failing", warnings)
			}
		})
	}
}

// A shard open when its reader started, closed by a split and then
// trimmed before the lagging reader reached its end, ends there (as
// SHARD_END) and its children are read: later listings tell the reader it
// was closed. With sawClosed false no listing showed it closed before it
// was trimmed (the listings in between failed, or came too seldom): its
// children naming it are as good a sign.
func TestShardClosedAndTrimmedUnderALaggingReader(t *testing.T) {
	for _, sawClosed := range []bool{true, false} {
		t.Run(fmt.Sprintf("closed listed %v", sawClosed), func(t *testing.T) {
			testShardClosedAndTrimmed(t, sawClosed)
		})
	}
}

func testShardClosedAndTrimmed(t *testing.T, sawClosed bool) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		w.put(1, 3)
		parent := "shardId-000000000000"
		opts := fastOptions()
		opts.Limit = 1 // one record a call: the reader lags
		release := make(chan struct{})
		out := &sink{}
		first := true
		deliver := func(b []Record) error {
			if first {
				first = false
				<-release // the consumer stalls after the first record
			}
			return out.deliver(b)
		}
		store := NewMemoryStore(nil)
		tl := New(w.fake, store, w.with(opts), deliver)
		type ran struct {
			res Result
			err error
		}
		done := make(chan ran, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := tl.Run(ctx)
			done <- ran{res, err}
		}()
		time.Sleep(100 * time.Millisecond)
		lower, upper := w.fake.SplitHalf(w.stream, parent)
		// A listing that shows the parent closed, merged by the scheduler: the
		// one after it started.
		for n := w.fake.Calls("ListShards"); sawClosed && w.fake.Calls("ListShards") < n+2; {
			time.Sleep(10 * time.Millisecond)
		}
		w.fake.Trim(w.stream, parent)
		w.fake.Put(w.stream, "after", []byte("in a child"))
		close(release)
		r := <-done
		if r.err != nil || r.res.Reason != StopIdle {
			t.Fatalf("reason %v, err %v", r.res.Reason, r.err)
		}
		got := out.records()
		// The polling reader had read one record when the shard went;
		// a subscription may have pushed more before (they were read,
		// and are delivered): a prefix of the parent's, then the child's.
		var data []string
		for _, r := range got {
			data = append(data, string(r.Data))
		}
		want := []string{"key-0#0", "in a child"}
		if kind == "efo" && len(data) > 2 {
			want = append([]string{"key-0#0", "key-0#1", "key-0#2"}[:len(data)-1], "in a child")
		}
		if !slices.Equal(data, want) {
			t.Fatalf("delivered %q, want %q", data, want)
		}
		saved := store.Saved()
		if saved[lower].SequenceNumber == "" && saved[upper].SequenceNumber == "" {
			t.Fatalf("saved %v: the children were not read", saved)
		}
		if !saved[parent].ShardEnd {
			t.Fatalf("saved %v: the trimmed parent, named by listed children, is not at SHARD_END", saved)
		}
	})
}

// Positions of shards no listing names any more, and that no listed shard
// names as a parent, are dropped from the checkpoint.
func TestCheckpointForgetsTrimmedShards(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		root := "shardId-000000000000"
		lower, upper := w.fake.SplitHalf(w.stream, root)
		merged := w.fake.Merge(w.stream, lower, upper)
		w.put(4, 8)
		for _, id := range []string{root, lower, upper} {
			w.fake.Trim(w.stream, id)
		}
		old := "shardId-000000000099" // of a reshard long gone
		store := NewMemoryStore(map[string]Position{old: {ShardEnd: true}, root: {ShardEnd: true}})
		out := &sink{}
		w.run(store, fastOptions(), out)
		w.checkDelivered(out.records(), true)
		saved := store.Saved()
		if len(saved) != 1 || saved[merged].SequenceNumber == "" {
			t.Fatalf("saved %v, want %s only: %s is no listed shard's parent, %s of no listed shard", saved, merged, root, old)
		}
		// lower and upper were never read (trimmed): nothing to keep of them.
	})
}

// A caught-up reader whose next GetRecords goes unanswered (a stalled
// connection, well inside the call's deadline) is not known to be at its
// tip: --idle-exit waits for the answer, and the records written meanwhile
// are delivered before the tail exits 0.
func TestIdleExitWaitsForAnUnansweredCall(t *testing.T) {
	synctest.Test(t, testIdleExitWaitsForAnUnansweredCall)
}

func testIdleExitWaitsForAnUnansweredCall(t *testing.T) {
	w := newWorld(t, 1)
	w.put(1, 5)
	var stall atomic.Bool
	stalled := make(chan struct{}, 1)
	w.fake.Hook = func(op string, _ any) error {
		if op == "GetRecords" && stall.CompareAndSwap(true, false) {
			stalled <- struct{}{}
			time.Sleep(time.Second) // unanswered for far longer than --idle-exit
		}
		return nil
	}
	out := &sink{}
	opts := fastOptions()
	opts.IdleExit = 300 * time.Millisecond
	wait := startTail(t, w, opts, out)
	for len(out.records()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // at its tip
	stall.Store(true)
	<-stalled
	w.put(1, 10) // in the stalled call's answer
	if res, err := wait(); err != nil || res.Reason != StopIdle {
		t.Fatalf("reason %v, err %v", res.Reason, err)
	}
	w.checkDelivered(out.records(), true)
}

// The listing --idle-exit takes before it exits must succeed: when it
// fails, another is taken, and a reshard it would have shown (here a
// split the caught-up reader has not polled into yet) is read.
func TestIdleExitNeedsItsLastListing(t *testing.T) { synctest.Test(t, testIdleExitNeedsItsLastListing) }

func testIdleExitNeedsItsLastListing(t *testing.T) {
	w := newWorld(t, 1)
	w.put(1, 3)
	var armed atomic.Bool
	w.fake.Hook = func(op string, _ any) error {
		if op == "ListShards" && armed.CompareAndSwap(true, false) {
			w.fake.SplitHalf(w.stream, "shardId-000000000000")
			w.put(1, 4) // in a child
			return errors.New("read tcp 127.0.0.1:4567: connection reset by peer")
		}
		return nil
	}
	out := &sink{}
	opts := fastOptions()
	opts.PollInterval = 2 * time.Second // the reader does not see the end first
	opts.RelistInterval = time.Hour
	opts.IdleExit = 300 * time.Millisecond
	wait := startTail(t, w, opts, out)
	for len(out.records()) < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	armed.Store(true) // the listing before the idle exit fails
	if res, err := wait(); err != nil || res.Reason != StopIdle {
		t.Fatalf("reason %v, err %v", res.Reason, err)
	}
	w.checkDelivered(out.records(), true)
}

// startTail runs a tail of w in the background; wait returns how it
// stopped.
func startTail(t *testing.T, w *world, opts Options, out *sink) (wait func() (Result, error)) {
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	go func() {
		res, err := New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
		done <- ran{res, err}
	}()
	return func() (Result, error) {
		r := <-done
		return r.res, r.err
	}
}
