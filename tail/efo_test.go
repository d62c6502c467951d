package tail

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

// readKinds are the two kinds of shard reader a run can use; the tests of
// what both must keep (the order, the checkpoints, the options) run once
// with each.
var readKinds = []string{"polling", "efo"}

// forEachKind runs a test once with each kind of reader.
func forEachKind(t *testing.T, test func(t *testing.T, kind string)) {
	for _, kind := range readKinds {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

// newWorldOf is a world read by this kind of reader.
func newWorldOf(t *testing.T, shards int, kind string) *world {
	w := newWorld(t, shards)
	w.kind = kind
	return w
}

// with makes opts read the world's way: with "efo", through a FakeServer
// over the same fake, started at the first use with the same pace and page
// size as the polling reader's (an event every minInterval holding at
// most Limit records).
func (w *world) with(opts Options) Options {
	if w.kind != "efo" {
		w.polled = true
		return opts
	}
	if w.efo == nil {
		fo := w.efoOptions
		if fo.Tick == 0 {
			fo.Tick = opts.minInterval
		}
		if fo.MaxEventRecords == 0 {
			fo.MaxEventRecords = int(opts.Limit)
		}
		w.efo = fanout.NewFakeServer(w.t, w.fake, fo)
		// Read only by subscribing: a run that polled would pass the
		// test without testing the subscribed reader.
		w.t.Cleanup(func() {
			if n := w.fake.Calls("GetRecords") + w.fake.Calls("GetShardIterator"); (n > 0 && !w.polled) || len(w.efo.Calls()) == 0 {
				w.t.Errorf("an efo run made %d polling calls and %d subscriptions", n, len(w.efo.Calls()))
			}
		})
	}
	opts.EFO = &EFO{API: w.efo.Client(), ConsumerARN: w.efo.ConsumerARN(w.stream, "tail-test"), Pacer: efo.NewPacer(time.Millisecond)}
	opts.efoTune = fastEFO
	return opts
}

// fastEFO shortens the subscribed reader's waits for tests.
func fastEFO(o *efo.Options) {
	o.InUseBackoff, o.RetryBackoff = 5*time.Millisecond, 2*time.Millisecond
	o.CallTimeout, o.IdleTimeout = 500*time.Millisecond, 2*time.Second
	o.InUseTimeout = time.Second
}

// run is runTail over the world's fake, read the world's way.
func (w *world) run(store Store, opts Options, out *sink) Result {
	w.t.Helper()
	return runTail(w.t, w.fake, store, w.with(opts), out)
}

// efoCalls are the starting positions of the subscriptions of a shard.
func (w *world) efoCalls(shard string) []string {
	var out []string
	for _, c := range w.efo.Calls() {
		if c.ShardID == shard {
			out = append(out, c.Position())
		}
	}
	return out
}

// Every way a subscription can fail or end, on every shard of a split,
// loses and repeats nothing, and keeps the order.
func TestEFOFaultsLoseNothing(t *testing.T) {
	w := newWorldOf(t, 2, "efo")
	// One record an event, enough for every fault to strike mid-shard.
	w.efoOptions.MaxEventRecords = 1
	w.put(20, 120)
	lo, hi := w.fake.SplitHalf("s", "shardId-000000000000")
	w.put(20, 120)
	opts := w.with(fastOptions())
	faults := []fanout.Fault{
		{CallError: "LimitExceededException"}, // first: its backoff grows with the failures in a row
		{AfterEvents: 2, Drop: true},
		{AfterEvents: 1, StreamError: "InternalFailureException"},
		{Status: 500},
		{CallError: "ResourceInUseException"},
		{AfterEvents: 1, StreamError: "ResourceInUseException"},
		{AfterEvents: 2, End: true}, // the five-minute end
		{AfterEvents: 1, End: true},
		{Repeat: 2, AfterEvents: 3, End: true}, // a service that repeats itself
		{Drop: true},
		{Hang: true},
		{Status: 503},
	}
	for _, id := range []string{"shardId-000000000000", "shardId-000000000001", lo, hi} {
		w.efo.Fail(id, faults...)
	}
	opts.IdleExit = time.Second // a hung call waits out its deadline
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	w.checkDelivered(out.records(), true)
	checkParentsFirst(t, w.fake, "s", out.records())
	for _, id := range []string{"shardId-000000000000", "shardId-000000000001", lo, hi} {
		if n := len(w.efoCalls(id)); n <= len(faults) {
			t.Fatalf("shard %s: %d subscriptions for %d faults: not every fault struck", id, n, len(faults))
		}
	}
}

// A shard that closes while it is subscribed ends: with the last event
// naming the children (AWS), or, where that event never comes
// (kinesis-mock), once a listing shows the shard closed and a caught-up
// empty event comes in a subscription made after that listing: the reader
// subscribes again (after the last record) to get one.
func TestEFOShardClosedUnderASubscription(t *testing.T) {
	for _, never := range []bool{false, true} {
		t.Run(map[bool]string{false: "last event", true: "never ends"}[never], func(t *testing.T) {
			w := newWorldOf(t, 1, "efo")
			w.efoOptions.NeverEnd = never
			w.put(4, 8)
			parent := "shardId-000000000000"
			opts := w.with(fastOptions())
			opts.IdleExit = 500 * time.Millisecond
			out := &sink{}
			done := make(chan Result, 1)
			go func() { done <- runTail(t, w.fake, NewMemoryStore(nil), opts, out) }()
			for len(out.records()) < 8 {
				time.Sleep(5 * time.Millisecond)
			}
			last := out.records()[7].SequenceNumber
			time.Sleep(50 * time.Millisecond) // caught up, subscribed
			lo, hi := w.fake.SplitHalf("s", parent)
			w.put(4, 8)
			res := <-done
			w.checkDelivered(out.records(), true)
			checkParentsFirst(t, w.fake, "s", out.records())
			want := []string{"TRIM_HORIZON"}
			if never {
				want = append(want, "AFTER_SEQUENCE_NUMBER "+last)
			}
			if got := w.efoCalls(parent); !slices.Equal(got, want) || res.Readers != 3 {
				t.Fatalf("subscriptions of the parent %q, want %q; %d readers", got, want, res.Readers)
			}
			if len(w.efoCalls(lo)) != 1 || len(w.efoCalls(hi)) != 1 {
				t.Fatalf("children subscribed %q and %q, once each", w.efoCalls(lo), w.efoCalls(hi))
			}
		})
	}
}

// A consumer refused for longer than the reader waits (another tail reads
// the shard with it) stops the tail with an *efo.InUseError, and records
// no end.
func TestEFOInUsePersists(t *testing.T) {
	w := newWorldOf(t, 1, "efo")
	w.put(2, 4)
	w.fake.SplitHalf("s", "shardId-000000000000")
	opts := w.with(fastOptions())
	var refusals []fanout.Fault
	for range 1000 {
		refusals = append(refusals, fanout.Fault{CallError: "ResourceInUseException"})
	}
	w.efo.Fail("shardId-000000000000", refusals...)
	store := NewMemoryStore(nil)
	_, err := New(w.fake, store, opts, (&sink{}).deliver).Run(t.Context())
	var iu *efo.InUseError
	if !errors.As(err, &iu) || !errors.Is(err, efo.ErrInUse) || iu.Consumer != "tail-test" || iu.ShardID != "shardId-000000000000" {
		t.Fatalf("err = %v", err)
	}
	if store.Saved()["shardId-000000000000"].ShardEnd {
		t.Fatal("SHARD_END recorded for a shard never read")
	}
}

// "Not found" from a subscription: the consumer gone is an error (never
// the end of the closed shards it would skip), an open shard gone is an
// error, a closed shard gone was trimmed (TestShardClosedAndTrimmed...).
func TestEFONotFound(t *testing.T) {
	for _, tt := range []struct {
		name  string
		split bool
		setup func(w *world, consumer string)
		want  string
	}{
		{"consumer deregistered", true, func(w *world, c string) { w.efo.Deregister(c) },
			"consumer deregistered: consumer tail-test is gone"},
		{"open shard", false, func(w *world, _ string) {
			w.efo.Fail("shardId-000000000000", fanout.Fault{CallError: "ResourceNotFoundException"})
		}, "was not found although it was open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldOf(t, 1, "efo")
			w.put(2, 4)
			if tt.split {
				w.fake.SplitHalf("s", "shardId-000000000000")
			}
			opts := w.with(fastOptions())
			tt.setup(w, opts.EFO.ConsumerARN)
			store := NewMemoryStore(nil)
			out := &sink{}
			_, err := New(w.fake, store, opts, out.deliver).Run(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if len(out.records()) != 0 || store.Saved()["shardId-000000000000"].ShardEnd {
				t.Fatalf("delivered %d, saved %v", len(out.records()), store.Saved())
			}
		})
	}
}

// A subscription "after" the last record of a closed shard can be
// refused; the reader subscribes at that record, skips it, and reaches
// the end.
func TestEFOResumeAfterLastRecordOfClosedShard(t *testing.T) {
	w := newWorldOf(t, 1, "efo")
	w.put(3, 6)
	recs := w.fake.ShardRecords("s", "shardId-000000000000")
	last := recs[len(recs)-1].Seq
	w.fake.SplitHalf("s", "shardId-000000000000")
	w.put(3, 6)
	opts := w.with(fastOptions())
	w.efo.Fail("shardId-000000000000", fanout.Fault{CallError: "InvalidArgumentException"})
	store := NewMemoryStore(map[string]Position{"shardId-000000000000": {SequenceNumber: last}})
	out := &sink{}
	runTail(t, w.fake, store, opts, out)
	for _, r := range out.records() {
		if r.ShardID == "shardId-000000000000" {
			t.Fatalf("record %s of the finished parent delivered again", r.SequenceNumber)
		}
	}
	want := []string{"AFTER_SEQUENCE_NUMBER " + last, "AT_SEQUENCE_NUMBER " + last}
	if got := w.efoCalls("shardId-000000000000"); !slices.Equal(got, want) || len(out.records()) != 6 || !store.Saved()["shardId-000000000000"].ShardEnd {
		t.Fatalf("subscriptions %q (want %q), delivered %d, saved %v", got, want, len(out.records()), store.Saved())
	}
}

// A caught-up subscribed reader whose subscriptions then fail is no longer
// at its tip: --idle-exit waits for an event, the records written
// meanwhile are delivered before the tail exits 0, and a long run of
// failures is warned about once.
func TestEFOIdleExitWaitsThroughFailures(t *testing.T) {
	defer func(d time.Duration) { throttleWarnAfter = d }(throttleWarnAfter)
	throttleWarnAfter = 200 * time.Millisecond
	w := newWorldOf(t, 1, "efo")
	w.efoOptions.Lifetime = 30 * time.Millisecond // subscriptions end often: the next ones fail
	w.put(1, 5)
	opts := w.with(fastOptions())
	opts.IdleExit = 300 * time.Millisecond
	var (
		wmu      sync.Mutex
		warnings []string
	)
	opts.Warnf = func(f string, a ...any) { wmu.Lock(); warnings = append(warnings, fmt.Sprintf(f, a...)); wmu.Unlock() }
	out := &sink{}
	done := make(chan Result, 1)
	go func() { done <- runTail(t, w.fake, NewMemoryStore(nil), opts, out) }()
	for len(out.records()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // at its tip
	// Failures in a row back off 2 ms, 4 ms, ... : ten of them take about
	// two seconds, far longer than --idle-exit.
	n := len(w.efo.Calls())
	var faults []fanout.Fault
	for range 10 {
		faults = append(faults, fanout.Fault{Status: 500})
	}
	w.efo.Fail("shardId-000000000000", faults...)
	for len(w.efo.Calls()) == n {
		time.Sleep(time.Millisecond) // the first failing call
	}
	w.put(1, 10)
	res := <-done
	if res.Reason != StopIdle {
		t.Fatalf("reason %v", res.Reason)
	}
	w.checkDelivered(out.records(), true)
	wmu.Lock()
	defer wmu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "SubscribeToShard has failed for") || !strings.Contains(warnings[0], "loses nothing") {
		t.Fatalf("warnings %q, want one that the shard keeps failing", warnings)
	}
}

// A tail does not read through enhanced fan-out with a lease table.
func TestEFOWithLeasesRefused(t *testing.T) {
	w := newWorldOf(t, 1, "efo")
	opts := fastOptions()
	opts.EFO = &EFO{ConsumerARN: "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1"}
	opts.Leases = &scriptedLeases{writes: map[string]Position{}}
	if _, err := New(w.fake, NewMemoryStore(nil), opts, (&sink{}).deliver).Run(t.Context()); !errors.Is(err, ErrEFOWithLeases) {
		t.Fatalf("err = %v", err)
	}
}

// A subscription that stalls (no event, the connection open) leaves the
// reader off its tip once it has been silent for eventsWithin: a longer
// --idle-exit waits for the reader to subscribe again, and the records
// written meanwhile are delivered before the tail exits 0.
func TestEFOIdleExitWaitsThroughAStall(t *testing.T) {
	w := newWorldOf(t, 1, "efo")
	w.efoOptions.Lifetime = 50 * time.Millisecond // subscriptions end often: the next one stalls
	w.put(1, 5)
	opts := w.with(fastOptions())
	opts.IdleExit = eventsWithin + time.Second
	opts.efoTune = func(o *efo.Options) {
		fastEFO(o)
		o.IdleTimeout = eventsWithin + 3*time.Second // the stall outlasts --idle-exit
	}
	out := &sink{}
	done := make(chan Result, 1)
	go func() { done <- runTail(t, w.fake, NewMemoryStore(nil), opts, out) }()
	for len(out.records()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	n := len(w.efo.Calls())
	w.efo.Fail("shardId-000000000000", fanout.Fault{AfterEvents: 1, Stall: true})
	for len(w.efo.Calls()) <= n {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // past its one event
	w.put(1, 3)
	if res := <-done; res.Reason != StopIdle {
		t.Fatalf("reason %v", res.Reason)
	}
	w.checkDelivered(out.records(), true)
}
