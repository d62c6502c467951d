package tail

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// scriptedLeases answers Sync with whatever the test sets, and records
// checkpoints (refusing the shards in lost).
type scriptedLeases struct {
	mu     sync.Mutex
	next   *Assignment
	lost   map[string]bool
	writes map[string]Position
}

func (c *scriptedLeases) Sync(ctx context.Context, known []ShardInfo) (*Assignment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next, nil
}

func (c *scriptedLeases) Checkpoint(ctx context.Context, shard string, p Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost[shard] {
		return ErrLeaseLost
	}
	c.writes[shard] = p
	return nil
}

func (c *scriptedLeases) Release(context.Context) error                   { return nil }
func (c *scriptedLeases) HandOff(context.Context, string, Position) error { return nil }
func (c *scriptedLeases) SyncInterval() time.Duration                     { return time.Hour }
func (c *scriptedLeases) LeaseDuration() time.Duration                    { return 3 * time.Hour }

func leaseTailer(c Leases) *Tailer {
	t := New(nil, NewMemoryStore(nil), Options{Leases: c}, nil)
	t.positions = map[string]Position{}
	t.shards["x"] = &shardState{id: "x", status: statusDone, ended: true, closed: true, listed: true}
	return t
}

// checkpointNow writes the changed positions as a round of the tail would.
func checkpointNow(t *Tailer) {
	ls := t.lease
	ls.record(ls.write(context.Background(), ls.changes()))
}

func heldFor(ids ...string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, id := range ids {
		out[id] = time.Now().Add(time.Hour)
	}
	return out
}

// A sync answered before our SHARD_END reached the table must not undo it:
// the shard would be read again.
func TestStaleSyncKeepsOurShardEnd(t *testing.T) {
	c := &scriptedLeases{writes: map[string]Position{}}
	tl := leaseTailer(c)
	tl.positions["x"] = Position{ShardEnd: true}
	checkpointNow(tl)
	tl.lease.apply(context.Background(), &Assignment{Positions: map[string]Position{"x": {SequenceNumber: "5"}}, Held: heldFor("x")})
	if s := tl.shards["x"]; s.status != statusDone || !tl.positionOf("x").ShardEnd {
		t.Fatalf("status %v, position %v: a stale sync undid SHARD_END", s.status, tl.positionOf("x"))
	}
}

// A SHARD_END the table refused (the lease went elsewhere) is forgotten:
// when the lease comes back the shard is read again from the table's
// checkpoint, so its end does get written.
func TestRefusedShardEndIsReadAgain(t *testing.T) {
	c := &scriptedLeases{writes: map[string]Position{}, lost: map[string]bool{"x": true}}
	tl := leaseTailer(c)
	tl.lease.saved = map[string]Position{"x": {SequenceNumber: "5"}}
	tl.positions["x"] = Position{ShardEnd: true}
	checkpointNow(tl)
	if s := tl.shards["x"]; s.status != statusPending || tl.positionOf("x") != (Position{SequenceNumber: "5"}) {
		t.Fatalf("status %v, position %v after a refused SHARD_END", s.status, tl.positionOf("x"))
	}
	tl.lease.apply(context.Background(), &Assignment{Positions: map[string]Position{"x": {SequenceNumber: "7"}}, Held: heldFor("x")})
	if tl.positionOf("x") != (Position{SequenceNumber: "7"}) {
		t.Fatalf("position %v, want the table's", tl.positionOf("x"))
	}
}

// A reader whose lease was lost records nothing more, even with a page in
// hand, and its end is ignored.
func TestRevokedReaderRecordsNothing(t *testing.T) {
	tl := leaseTailer(&scriptedLeases{writes: map[string]Position{}})
	delivered := 0
	tl.deliver = func(b []Record, _ func(int)) error { delivered += len(b); return nil }
	r := &reader{t: tl, id: "x"}
	r.revoked.Store(true)
	more, err := tl.deliverBatch(r, []Record{{ShardID: "x", SequenceNumber: "9"}})
	if more || err != nil || delivered != 0 || tl.positionOf("x") != (Position{}) {
		t.Fatalf("more %v err %v delivered %d position %v", more, err, delivered, tl.positionOf("x"))
	}
	if tl.markEnd(r) || tl.positionOf("x").ShardEnd {
		t.Fatal("a revoked reader recorded SHARD_END")
	}
}

// A KCL lease that says AT_TIMESTAMP carries no time: a worker that has
// none of its own reads the shard from its oldest record, not from the
// year 1.
func TestLeaseStart(t *testing.T) {
	ts := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		start StartMode
		ts    time.Time
		want  startPoint
	}{
		{StartAtTimestamp, ts, startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: ts}},
		{StartAtTimestamp, time.Time{}, startPoint{kind: types.ShardIteratorTypeTrimHorizon}},
		{StartLatest, ts, startPoint{kind: types.ShardIteratorTypeLatest}},
		{StartTrimHorizon, ts, startPoint{kind: types.ShardIteratorTypeTrimHorizon}},
	} {
		if got := leaseStart(c.start, c.ts); got != c.want {
			t.Errorf("leaseStart(%v, %v) = %v, want %v", c.start, c.ts, got, c.want)
		}
	}
}

// fakeLeases is a lease table of one worker in memory: each Sync holds,
// for a lease duration from when it was called, every shard not at
// SHARD_END whose parents are. Tests make it hang or refuse SHARD_END.
type fakeLeases struct {
	mu           sync.Mutex
	d            time.Duration
	positions    map[string]Position
	hang         chan struct{} // while set, a Sync waits for it (a hung table)
	answered     []time.Time   // when each answered Sync was called
	failEnds     int           // SHARD_END writes to fail with a transient error
	lostEnd      string        // this shard's SHARD_END is refused as lost, and the shard is given no more
	slowAfterEnd time.Duration // once a SHARD_END is in, every Sync takes this long (a slow table)
	slow         time.Duration
}

func (f *fakeLeases) Sync(ctx context.Context, known []ShardInfo) (*Assignment, error) {
	sent := time.Now()
	f.mu.Lock()
	h, slow := f.hang, f.slow
	f.mu.Unlock()
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = append(f.answered, sent)
	a := &Assignment{Positions: maps.Clone(f.positions), Held: map[string]time.Time{}, Starts: map[string]StartMode{}}
	for _, s := range known {
		if f.positions[s.ID].ShardEnd || s.ID == f.lostEnd && f.failEnds < 0 {
			continue
		}
		ready := true
		for _, p := range s.Parents {
			ready = ready && f.positions[p].ShardEnd
		}
		if ready {
			a.Held[s.ID] = sent.Add(f.d)
		}
	}
	return a, nil
}

func (f *fakeLeases) Checkpoint(ctx context.Context, shard string, p Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.ShardEnd && shard == f.lostEnd {
		f.failEnds = -1
		return ErrLeaseLost
	}
	if p.ShardEnd && f.failEnds > 0 {
		f.failEnds--
		return errors.New("InternalServerError: the table is having a bad moment")
	}
	f.positions[shard] = p
	if p.ShardEnd {
		f.slow = f.slowAfterEnd
	}
	return nil
}

func (f *fakeLeases) Release(context.Context) error                   { return nil }
func (f *fakeLeases) HandOff(context.Context, string, Position) error { return nil }
func (f *fakeLeases) SyncInterval() time.Duration                     { return f.d / 3 }
func (f *fakeLeases) LeaseDuration() time.Duration                    { return f.d }

// A table that hangs (rather than fails) stops the readers before their
// leases may be taken: nothing is delivered from then on until a renewal
// is answered, and then reading resumes where it stopped.
func TestHungLeaseTableStopsReaders(t *testing.T) { synctest.Test(t, testHungLeaseTableStopsReaders) }

func testHungLeaseTableStopsReaders(t *testing.T) {
	w := newWorld(t, 1)
	leases := &fakeLeases{d: time.Second, positions: map[string]Position{}}
	type stamped struct {
		at  time.Time
		rec Record
	}
	var mu sync.Mutex
	var got []stamped
	deliver := func(b []Record) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range b {
			r.Data = slices.Clone(r.Data)
			got = append(got, stamped{time.Now(), r})
		}
		return nil
	}
	opts := fastOptions()
	opts.IdleExit = 0
	opts.Leases = leases
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := New(w.fake, NewMemoryStore(nil), opts, deliver).Run(ctx)
		done <- err
	}()
	write := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			w.put(3, 1)
		}
	}
	write(500 * time.Millisecond)
	leases.mu.Lock()
	leases.hang = make(chan struct{})
	leases.mu.Unlock()
	write(2500 * time.Millisecond) // the table hangs for longer than a lease duration
	leases.mu.Lock()
	expiry := leases.answered[len(leases.answered)-1].Add(leases.d)
	close(leases.hang)
	leases.hang = nil
	leases.mu.Unlock()
	resumed := time.Now()
	write(300 * time.Millisecond)
	for total := w.total(); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= total {
			break
		}
		if time.Since(resumed) > 20*time.Second {
			t.Fatalf("only %d of %d records delivered after the table answered again", n, total)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var recs []Record
	for _, s := range got {
		if !s.at.Before(expiry) && s.at.Before(resumed) {
			t.Fatalf("a record delivered at %s, after the lease could be taken (%s) and before the table answered (%s)",
				s.at.Format("15:04:05.000"), expiry.Format("15:04:05.000"), resumed.Format("15:04:05.000"))
		}
		recs = append(recs, s.rec)
	}
	w.checkDelivered(recs, true)
}

// --idle-exit waits for a sync that knows about a shard's end: until one
// answers, the children's leases are neither ours nor known to be free
// (the last answer came while their parent was being read), so they are
// not "another worker's" either. With a slow table the tail used to exit
// idle in between, its children unread.
func TestIdleExitWaitsForASyncAfterAShardEnd(t *testing.T) {
	synctest.Test(t, testIdleExitWaitsForASyncAfterAShardEnd)
}

func testIdleExitWaitsForASyncAfterAShardEnd(t *testing.T) {
	root := "shardId-000000000000"
	w := newWorld(t, 1)
	w.put(2, 4)
	w.fake.SplitHalf(w.stream, root)
	w.put(2, 4)
	leases := &fakeLeases{d: 6 * time.Second, positions: map[string]Position{}, slowAfterEnd: 1500 * time.Millisecond}
	opts := fastOptions()
	opts.IdleExit = 200 * time.Millisecond
	opts.Leases = leases
	out := &sink{}
	if res := runTail(t, w.fake, NewMemoryStore(nil), opts, out); res.Reason != StopIdle {
		t.Fatalf("reason %v", res.Reason)
	}
	w.checkDelivered(out.records(), true)
}

// A lease table failing when a shard ends does not stop the tail: the
// SHARD_END is retried while the lease is ours, and the children are read
// once it is in. If the lease is lost instead, its new owner finishes the
// shard, and this tail goes on without error.
func TestShardEndSurvivesATableOutage(t *testing.T) {
	root := "shardId-000000000000"
	for _, c := range []struct {
		name     string
		failEnds int
		lost     bool
	}{{"retried", 6, false}, {"lost", 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 1)
			w.put(2, 4)
			parentRecords := w.total()
			w.fake.SplitHalf(w.stream, root)
			w.put(2, 4)
			leases := &fakeLeases{d: 3 * time.Second, positions: map[string]Position{}, failEnds: c.failEnds}
			if c.lost {
				leases.lostEnd = root
			}
			opts := fastOptions()
			opts.IdleExit = 500 * time.Millisecond
			opts.Leases = leases
			out := &sink{}
			runTail(t, w.fake, NewMemoryStore(nil), opts, out)
			leases.mu.Lock()
			defer leases.mu.Unlock()
			if c.lost {
				if n := len(out.records()); n != parentRecords || leases.positions[root].ShardEnd {
					t.Fatalf("delivered %d records (want the parent's %d), root at %v", n, parentRecords, leases.positions[root])
				}
				return
			}
			w.checkDelivered(out.records(), true)
			if !leases.positions[root].ShardEnd || leases.failEnds != 0 {
				t.Fatalf("root at %v, %d failures left", leases.positions[root], leases.failEnds)
			}
		})
	}
}

// failingSyncs is a fakeLeases whose syncs, once broken, renew what it
// holds but fail (a scan that errors): reading goes on, no new lease is
// taken.
type failingSyncs struct {
	*fakeLeases
	broken atomic.Bool
}

func (f *failingSyncs) Sync(ctx context.Context, known []ShardInfo) (*Assignment, error) {
	a, err := f.fakeLeases.Sync(ctx, known)
	if err == nil && f.broken.Load() {
		return &Assignment{Held: a.Held}, errors.New("scan lease table t: ValidationException: a row that does not parse")
	}
	return a, err
}

// A lease table whose every sync fails, while the readers go on, gets a
// warning on stderr after a while: --idle-exit waits meanwhile, and no
// new lease is taken.
func TestFailingSyncsAreWarnedAbout(t *testing.T) { synctest.Test(t, testFailingSyncsAreWarnedAbout) }

func testFailingSyncsAreWarnedAbout(t *testing.T) {
	w := newWorld(t, 1)
	w.put(1, 3)
	leases := &failingSyncs{fakeLeases: &fakeLeases{d: 600 * time.Millisecond, positions: map[string]Position{}}}
	defer func(d time.Duration) { throttleWarnAfter = d }(throttleWarnAfter)
	throttleWarnAfter = 300 * time.Millisecond
	var mu sync.Mutex
	var warnings []string
	opts := fastOptions()
	opts.IdleExit = 0
	opts.Leases = leases
	opts.Warnf = func(f string, a ...any) { mu.Lock(); warnings = append(warnings, fmt.Sprintf(f, a...)); mu.Unlock() }
	out := &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
		done <- err
	}()
	for len(out.records()) < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	leases.broken.Store(true)
	time.Sleep(4 * throttleWarnAfter)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "lease table has failed") {
		t.Fatalf("warnings %q, want one that the lease table keeps failing", warnings)
	}
}
