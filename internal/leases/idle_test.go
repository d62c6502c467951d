package leases

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// A single worker with --idle-exit does not exit 0 while a shard nobody
// holds waits to be taken: here the children of a split, whose takes fail
// for a while (a 500 from the table), are taken at a later sync and read
// before the tail exits.
func TestIdleExitWaitsForAFreeLease(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	root := "shardId-000000000000"
	want := put(f, "a", 4)
	lower, upper := f.SplitHalf("s", root)
	want = append(want, put(f, "b", 4)...)
	m, table := memTable(t)
	ft := &faultyTable{MemTable: m}
	var failingUntil time.Time
	ft.fail = func(op, key, update string) bool {
		// The children's takes fail for longer than --idle-exit.
		if op == "UpdateItem" && (key == lower || key == upper) && strings.HasPrefix(update, "SET leaseOwner") {
			if failingUntil.IsZero() {
				failingUntil = time.Now().Add(1500 * time.Millisecond)
			}
			return time.Now().Before(failingUntil)
		}
		return false
	}
	got := tailWith(t, f, ft, table, "a", tail.StartTrimHorizon)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("delivered %v, want %v: --idle-exit exited 0 with the children unread", got, want)
	}
}

// A worker whose lease table stops answering has its readers paused (its
// leases may be taken by others); --idle-exit does not count that as
// idle: when the table answers again the worker reads what was written
// meanwhile, then exits 0.
func TestIdleExitWaitsForAHungTable(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	want := put(f, "a", 3)
	m, table := memTable(t)
	var hung sync.Mutex
	hanging := false
	m.Hook = func(ctx context.Context, op string) error {
		hung.Lock()
		h := hanging
		hung.Unlock()
		if h {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	w, err := NewWorker(m, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	opts := tail.Options{StreamName: "s", PollInterval: 20 * time.Millisecond, RelistInterval: 200 * time.Millisecond,
		CheckpointInterval: 50 * time.Millisecond, IdleExit: 1500 * time.Millisecond, Leases: w}
	paused := make(chan struct{})
	var once sync.Once
	opts.Logf = func(f string, a ...any) {
		if strings.Contains(f, "pausing its reader") {
			once.Do(func() { close(paused) })
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type ran struct {
		res tail.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := tail.New(f, tail.NewMemoryStore(nil), opts, out.deliver).Run(ctx)
		done <- ran{res, err}
	}()
	for len(out.payloads()) < len(want) {
		time.Sleep(5 * time.Millisecond)
	}
	out.mu.Lock()
	last := out.recs[len(out.recs)-1].SequenceNumber
	out.mu.Unlock()
	for checkpointOf(m, table, "shardId-000000000000") != last {
		time.Sleep(5 * time.Millisecond) // nothing of ours left to write
	}
	hung.Lock()
	hanging = true
	hung.Unlock()
	select {
	case <-paused:
	case r := <-done:
		t.Fatalf("the tail stopped (%v, %v) before its lease ran out", r.res.Reason, r.err)
	}
	want = append(want, put(f, "b", 3)...) // while the table hangs: unread by anyone
	time.Sleep(2 * opts.IdleExit)
	hung.Lock()
	hanging = false
	hung.Unlock()
	r := <-done
	if r.err != nil || r.res.Reason != tail.StopIdle {
		t.Fatalf("reason %v, err %v", r.res.Reason, r.err)
	}
	if got := out.payloads(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("delivered %v, want %v: --idle-exit exited 0 while the table hung", got, want)
	}
}
