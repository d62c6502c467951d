package tail

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// leaseSync keeps the tail in step with a lease table. Syncs and
// checkpoint writes run in goroutines of their own and report as events,
// so the scheduler never waits on the table, whether it fails, hangs or is
// slow. What makes two workers never read one shard at once is time, not
// answers: each held lease has a moment from which another worker may take
// it (Assignment.Held), and a timer stops our reader a margin before it,
// unless a renewal answered meanwhile moved it on.
type leaseSync struct {
	t *Tailer
	c Leases
	// margin: readers stop this long before a lease may be taken, so a
	// delivery under way finishes first.
	margin time.Duration

	held map[string]time.Time // shard -> from when others may take it
	// handing: shards being handed over to a worker that asked (a
	// HandOff write in flight).
	handing map[string]bool
	starts  map[string]StartMode // where held shards without a position start
	free    map[string]bool      // ready shards no worker holds (Assignment.Free)
	// epoch counts what changes which leases are free or ours: a SHARD_END
	// of ours in the table, a shard new to the listing. answered is the
	// epoch the last answered sync began in: until it catches up, a shard
	// neither held nor free may be ours to read (current).
	epoch, answered int
	// saved is what the table holds of our positions; guarded by t.mu
	// (readers record a start there).
	saved map[string]Position

	syncing, syncDue   bool
	syncCtx            context.Context
	syncCancel         context.CancelFunc
	wg                 sync.WaitGroup // syncs and checkpoint writes in flight
	lastAnswer         time.Time      // the last sync that succeeded
	failing            bool           // the last sync failed
	failingSince       time.Time      // the first failure of this run of them
	syncWarned         bool           // that run was warned about
	warned             bool           // readers were stopped for want of renewals
	flushing, flushDue bool
	failures           int         // checkpoint rounds failed in a row
	expiry             *time.Timer // the next moment a reader must stop
	retry              *time.Timer // the next checkpoint attempt after a failure
	rand               *rand.Rand
}

type syncEvent struct {
	a     *Assignment
	err   error
	epoch int // leaseSync.epoch when the sync began
}

type checkpointEvent struct {
	results []checkpointResult
}

type checkpointResult struct {
	id  string
	p   Position
	err error
}

// checkpointConcurrency bounds the checkpoint writes in flight.
const checkpointConcurrency = 16

func newLeaseSync(t *Tailer, c Leases) *leaseSync {
	ls := &leaseSync{t: t, c: c, margin: c.LeaseDuration() / 10, held: map[string]time.Time{}, saved: map[string]Position{}, handing: map[string]bool{},
		expiry: time.NewTimer(time.Hour), retry: time.NewTimer(time.Hour), rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	ls.expiry.Stop()
	ls.retry.Stop()
	return ls
}

func (ls *leaseSync) stopTimers() {
	ls.expiry.Stop()
	ls.retry.Stop()
}

// first is the sync before anything is read; it must succeed.
func (ls *leaseSync) first(ctx context.Context) error {
	ls.syncCtx, ls.syncCancel = context.WithCancel(ls.t.readerCtx)
	sctx, cancel := context.WithTimeout(ctx, ls.c.LeaseDuration())
	defer cancel()
	epoch := ls.epoch
	a, err := ls.c.Sync(sctx, ls.t.known())
	if err != nil {
		return err
	}
	ls.lastAnswer, ls.answered = ls.t.now(), epoch
	ls.apply(ctx, a)
	return nil
}

// holds reports whether we may read the shard now.
func (ls *leaseSync) holds(id string) bool {
	until, ok := ls.held[id]
	return ok && ls.t.now().Before(until.Add(-ls.margin))
}

// pauseAt is when a reader of the shard must stop.
func (ls *leaseSync) pauseAt(id string) time.Time { return ls.held[id].Add(-ls.margin) }

// stalled: the table did not answer the last sync, or our readers were
// paused for want of renewals. Which shards are ours, and whether anyone
// reads the others, is not known until it answers.
func (ls *leaseSync) stalled() bool { return ls.failing || ls.warned }

// unread: nobody reads the shard but us, now or once we take it.
func (ls *leaseSync) unread(id string) bool { return ls.holds(id) || ls.free[id] }

// current: the last answered sync began after the latest change that
// could make a lease free or ours, so a shard neither held nor free is
// another worker's.
func (ls *leaseSync) current() bool { return ls.answered == ls.epoch }

// changed notes such a change; the next sync to begin learns what it did.
func (ls *leaseSync) changed() { ls.epoch++ }

// busy: a checkpoint of ours is not in the table yet.
func (ls *leaseSync) busy() bool {
	if ls.flushing {
		return true
	}
	ls.t.mu.Lock()
	defer ls.t.mu.Unlock()
	for id, p := range ls.t.positions {
		if ls.saved[id] != p {
			if _, ours := ls.held[id]; ours {
				return true
			}
		}
	}
	return false
}

// startSync runs a sync in the background; a tick during one runs another
// as soon as it returns.
func (ls *leaseSync) startSync(context.Context) {
	if ls.syncing {
		ls.syncDue = true
		return
	}
	ls.syncing, ls.syncDue = true, false
	known, epoch := ls.t.known(), ls.epoch
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		// Every call of a sync has its own deadline; this one bounds the
		// whole, so a sync never hangs.
		ctx, cancel := context.WithTimeout(ls.syncCtx, ls.c.LeaseDuration())
		defer cancel()
		a, err := ls.c.Sync(ctx, known)
		ls.t.send(syncEvent{a: a, err: err, epoch: epoch})
	}()
}

func (ls *leaseSync) onSync(ctx context.Context, ev syncEvent) {
	ls.syncing = false
	switch {
	case ev.err != nil:
		now := ls.t.now()
		if !ls.failing {
			ls.failing, ls.failingSince = true, now
		}
		ls.t.opts.Logf("lease sync failed (will retry): %v", ev.err)
		if d := now.Sub(ls.failingSince); !ls.syncWarned && d >= throttleWarnAfter {
			ls.syncWarned = true
			ls.t.opts.Warnf("the lease table has failed every sync for %s (%v): no lease is taken meanwhile (new shards wait) and --idle-exit waits; tail keeps trying", d.Round(time.Second), ev.err)
		}
		if ev.a != nil {
			ls.held = ev.a.Held // the renewals that were answered
		}
		ls.enforce()
	default:
		ls.lastAnswer, ls.warned, ls.failing, ls.syncWarned = ls.t.now(), false, false, false
		ls.answered = ev.epoch
		ls.apply(ctx, ev.a)
	}
	ls.t.schedule()
	if ls.syncDue {
		ls.startSync(ctx)
	}
}

// apply takes a sync's answer: positions other workers reached (for the
// parents-first rule), the shards we hold; then it stops the readers of
// shards we lost.
func (ls *leaseSync) apply(ctx context.Context, a *Assignment) {
	t := ls.t
	ls.held, ls.starts, ls.free = a.Held, a.Starts, a.Free
	if ls.held == nil {
		ls.held = map[string]time.Time{}
	}
	t.mu.Lock()
	for id, p := range a.Positions {
		if s := t.shards[id]; s != nil && s.status == statusRunning {
			continue // our reader is ahead of the table
		}
		local := t.positions[id]
		if local.ShardEnd {
			continue // our end stands (a sync begun before it was saved would undo it)
		}
		if local != ls.saved[id] {
			continue // ours is newer: its checkpoint is still to be written
		}
		t.positions[id], ls.saved[id] = p, p
	}
	t.mu.Unlock()
	ls.handOff(ctx, a.HandOff)
	ls.enforce()
}

type handOffEvent struct {
	id  string
	p   Position
	err error
}

// handOff stops the readers of shards another worker asked for and hands
// each over at the position of its last record written: the other worker
// goes on from there, so nothing is printed twice beyond a write that was
// under way when the reader stopped.
func (ls *leaseSync) handOff(ctx context.Context, ids map[string]bool) {
	t := ls.t
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if ls.handing[id] {
			continue
		}
		ls.handing[id] = true
		delete(ls.held, id)
		if s := t.shards[id]; s != nil && s.status == statusRunning {
			t.opts.Logf("shard %s: another worker asked for its lease; stopping its reader to hand it over", id)
			t.stopReader(s)
		}
		t.mu.Lock()
		p := t.positions[id]
		t.mu.Unlock()
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			hctx, cancel := context.WithTimeout(ctx, ls.c.LeaseDuration())
			defer cancel()
			t.send(handOffEvent{id: id, p: p, err: ls.c.HandOff(hctx, id, p)})
		}()
	}
}

// onHandOff takes the answer of a hand-off. One that failed is asked for
// again by the next sync (the lease is still ours to hand over).
func (ls *leaseSync) onHandOff(ev handOffEvent) {
	t := ls.t
	delete(ls.handing, ev.id)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ev.err == nil:
		ls.saved[ev.id] = ev.p
		t.opts.Logf("shard %s: handed over at %s", ev.id, ev.p)
	case errors.Is(ev.err, ErrLeaseLost):
		t.positions[ev.id] = ls.saved[ev.id]
		t.opts.Logf("shard %s: %v", ev.id, ev.err)
	default:
		t.opts.Logf("shard %s: handing over failed (the next sync asks again): %v", ev.id, ev.err)
	}
}

// enforce stops every reader whose shard we may no longer read (lost, or
// not renewed in time), puts back in line a shard we ended but whose
// SHARD_END the table never took, and sets the timer for the next reader
// that must stop.
func (ls *leaseSync) enforce() {
	t := ls.t
	now := t.now()
	var next time.Time
	for id, s := range t.shards {
		_, ours := ls.held[id]
		switch {
		case s.status == statusRunning && !ours:
			t.opts.Logf("shard %s: lease lost to another worker; stopping its reader", id)
			t.stopReader(s)
		case s.status == statusRunning && !ls.holds(id):
			if !ls.warned {
				ls.warned = true
				t.opts.Warnf("the lease table has not renewed our leases for %s: reading stops until it answers, since other workers may take them", now.Sub(ls.lastAnswer).Round(time.Second))
			}
			t.opts.Logf("shard %s: lease not renewed in time; pausing its reader", id)
			t.stopReader(s)
		case s.status == statusRunning:
			at := ls.pauseAt(id)
			s.rd.until.Store(at.UnixNano())
			if next.IsZero() || at.Before(next) {
				next = at
			}
		case s.status == statusDone && ours && !t.positionOf(id).ShardEnd:
			// We ended it once but lost the lease before SHARD_END was
			// written; it is ours again, from the table's checkpoint.
			s.status, s.ended = statusPending, false
		}
	}
	ls.expiry.Stop()
	if !next.IsZero() {
		ls.expiry.Reset(max(next.Sub(now), time.Millisecond))
	}
}

// startSaved notes a start a reader wrote to the table (Position.From).
func (ls *leaseSync) startSaved(id string, p Position) {
	ls.t.mu.Lock()
	defer ls.t.mu.Unlock()
	if ls.t.positions[id].IsZero() {
		ls.t.positions[id] = p
	}
	ls.saved[id] = p
}

// changes are the positions the table does not have yet.
func (ls *leaseSync) changes() []checkpointResult {
	t := ls.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []checkpointResult
	for _, id := range slices.Sorted(maps.Keys(t.positions)) {
		if p := t.positions[id]; p != ls.saved[id] {
			out = append(out, checkpointResult{id: id, p: p})
		}
	}
	return out
}

// flush writes the changed positions in the background.
func (ls *leaseSync) flush(ctx context.Context) {
	if ls.flushing {
		ls.flushDue = true
		return
	}
	ls.flushDue = false
	todo := ls.changes()
	if len(todo) == 0 {
		return
	}
	ls.flushing = true
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		ls.t.send(checkpointEvent{results: ls.write(ctx, todo)})
	}()
}

// write checkpoints each position, a few at a time.
func (ls *leaseSync) write(ctx context.Context, todo []checkpointResult) []checkpointResult {
	ctx, cancel := context.WithTimeout(ctx, ls.c.LeaseDuration())
	defer cancel()
	sem := make(chan struct{}, checkpointConcurrency)
	var wg sync.WaitGroup
	for i := range todo {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			todo[i].err = ls.c.Checkpoint(ctx, todo[i].id, todo[i].p)
		})
	}
	wg.Wait()
	return todo
}

// onCheckpoint takes the results of a round of checkpoint writes. A lost
// lease is not an error (its new owner goes on from the table's
// checkpoint); any other failure is retried with backoff for as long as
// it takes: a SHARD_END waits in the table's stead, and its children with
// it, but the tail never stops for a table that fails for a while.
func (ls *leaseSync) onCheckpoint(ctx context.Context, ev checkpointEvent) {
	ls.flushing = false
	failed, ended := ls.record(ev.results)
	if failed != nil {
		ls.failures++
		d := backoff(ls.rand, errorBackoffMin, errorBackoffMax, ls.failures)
		ls.t.opts.Logf("checkpointing to the lease table failed (retrying in %s): %v", d.Round(time.Millisecond), failed)
		ls.retry.Reset(d)
	} else {
		ls.failures = 0
	}
	if ended {
		ls.changed()
		ls.startSync(ctx) // create and take the children's leases now
	}
	ls.enforce()
	ls.t.schedule()
	if ls.flushDue {
		ls.flush(ctx)
	}
}

// record notes what the table took; it returns the first failure, and
// whether a SHARD_END was taken.
func (ls *leaseSync) record(results []checkpointResult) (failed error, ended bool) {
	t := ls.t
	for _, r := range results {
		switch {
		case r.err == nil:
			t.mu.Lock()
			ls.saved[r.id] = r.p
			t.mu.Unlock()
			ended = ended || r.p.ShardEnd
		case errors.Is(r.err, ErrLeaseLost):
			// What we could not record is another worker's to read again
			// (from the table's checkpoint): forget it, end included.
			t.opts.Logf("shard %s: %v", r.id, r.err)
			delete(ls.held, r.id)
			t.mu.Lock()
			t.positions[r.id] = ls.saved[r.id]
			t.mu.Unlock()
			if s := t.shards[r.id]; s != nil && s.status == statusDone && s.ended {
				s.status, s.ended = statusPending, false
			}
		default:
			if failed == nil {
				failed = r.err
			}
		}
	}
	return failed, ended
}

// finalFlush writes every position at exit, retrying a failing table for
// up to a lease duration (after that the leases are others' anyway).
func (ls *leaseSync) finalFlush(ctx context.Context) error {
	ls.syncCancel()
	ls.wg.Wait() // a round under way would race with ours
	deadline := ls.t.now().Add(ls.c.LeaseDuration())
	for attempt := 1; ; attempt++ {
		todo := ls.changes()
		if len(todo) == 0 {
			return nil
		}
		failed, _ := ls.record(ls.write(ctx, todo))
		if failed == nil {
			return nil
		}
		d := backoff(ls.rand, errorBackoffMin, errorBackoffMax, attempt)
		if ls.t.now().Add(d).After(deadline) {
			return failed
		}
		ls.t.opts.Logf("checkpointing to the lease table failed (retrying in %s): %v", d.Round(time.Millisecond), failed)
		if err := awscall.Sleep(ctx, d); err != nil {
			return failed
		}
	}
}

// release gives the leases back so other workers take them at once.
func (ls *leaseSync) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, ls.c.LeaseDuration())
	defer cancel()
	if err := ls.c.Release(ctx); err != nil {
		ls.t.opts.Logf("releasing leases: %v", err)
	}
}
