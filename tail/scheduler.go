package tail

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Tailer reads a stream parents-first. Create with New, run with Run.
//
// One goroutine, the scheduler (Run's event loop), owns the shard states
// and decides what is read; each shard has a reader goroutine; listings,
// lease syncs and lease checkpoints run in goroutines of their own and
// report back as events, so the scheduler never waits on the network.
type Tailer struct {
	api     API
	store   Store
	opts    Options
	deliver WriteFunc

	// deliverMu serialises deliveries; it is held while DeliverFunc
	// writes, so a slow stdout holds up the other readers' deliveries but
	// never the scheduler (which takes mu only).
	deliverMu sync.Mutex
	// mu guards what readers and the scheduler share; never held across
	// a call or a delivery.
	mu           sync.Mutex
	positions    map[string]Position
	dirty        bool
	delivered    int64
	dropped      int64 // read and dropped by Options.Select
	lastActivity time.Time
	full         bool // MaxRecords reached

	events  chan event
	stopped chan struct{} // closed when the scheduler stops; readers then stop sending
	pages   *pageBudget   // memory of the pages the readers hold
	calls   callSlots     // calls the readers have in flight

	// The scheduler's own state.
	shards      map[string]*shardState
	initialPass bool
	discovering bool // a relist to find children of an ended shard is due
	idleListed  bool // the listing before an idle exit was taken
	// What --idle-exit last waited on, and when --debug said it.
	idleWhy       string
	idleWhyAt     time.Time
	listing       bool // a relist is running
	retryList     *time.Timer
	readers       sync.WaitGroup
	readerCtx     context.Context
	cancelReaders context.CancelFunc
	listings      sync.WaitGroup // relists in flight
	started       int
	lease         *leaseSync // nil without Options.Leases
	pacer         *efo.Pacer // SubscribeToShard calls, with Options.EFO
}

type event interface{}

type endEvent struct {
	id       string
	gen      int
	children []types.ChildShard
}
type tipEvent struct {
	id      string
	gen     int
	atTip   bool
	failing bool // the last call failed: not at its tip, nor behind
}
type exitEvent struct {
	id  string
	gen int
	err error
}
type listEvent struct {
	shards []types.Shard
	err    error
}
type fullEvent struct{}

// errLeaseExpired: a reader stopped because its lease may have expired
// for others; it is started again once a renewal is answered.
var errLeaseExpired = errors.New("lease may have expired")

// New prepares a tail; nothing is called until Run. Its position moves
// once deliver has written a whole batch.
func New(api API, store Store, opts Options, deliver DeliverFunc) *Tailer {
	return NewWriting(api, store, opts, func(batch []Record, written func(int)) error {
		if err := deliver(batch); err != nil {
			return err
		}
		written(len(batch))
		return nil
	})
}

// NewWriting prepares a tail whose position follows what write reports
// written, record by record (see WriteFunc).
func NewWriting(api API, store Store, opts Options, deliver WriteFunc) *Tailer {
	opts.defaults()
	t := &Tailer{api: api, store: store, opts: opts, deliver: deliver,
		events: make(chan event, 64), stopped: make(chan struct{}), shards: map[string]*shardState{},
		pages: newPageBudget(pageBudgetBytes), calls: make(callSlots, maxCallsInFlight)}
	if opts.Leases != nil {
		t.lease = newLeaseSync(t, opts.Leases)
	}
	if opts.EFO != nil {
		t.pacer = opts.EFO.Pacer
		if t.pacer == nil {
			t.pacer = efo.NewPacer(0)
		}
	}
	return t
}

func (t *Tailer) now() time.Time { return t.opts.Now() }

// send hands an event to the scheduler unless it has stopped.
func (t *Tailer) send(ev event) {
	select {
	case t.events <- ev:
	case <-t.stopped:
	}
}

// Run reads until the context ends, MaxRecords or IdleExit, or an error.
// It always saves the checkpoint of what was delivered before returning.
func (t *Tailer) Run(ctx context.Context) (res Result, err error) {
	if t.opts.EFO != nil && t.opts.Leases != nil {
		return Result{Reason: StopError}, ErrEFOWithLeases
	}
	positions, err := t.store.Load(ctx)
	if err != nil {
		return Result{Reason: StopError}, err
	}
	t.positions = positions
	t.lastActivity = t.now()

	shards, err := t.list(ctx)
	if err != nil {
		return Result{Reason: StopError}, err
	}
	t.readerCtx, t.cancelReaders = context.WithCancel(context.WithoutCancel(ctx))
	defer t.cancelReaders()

	if err := t.mergeListing(shards, true); err != nil {
		return Result{Reason: StopError}, err
	}
	if t.opts.Shard != "" && t.shards[t.opts.Shard] == nil {
		return Result{Reason: StopError}, fmt.Errorf("%w: %s is not a shard of stream %s", ErrShardNotFound, t.opts.Shard, t.streamLabel())
	}
	if t.lease != nil {
		if err := t.lease.first(ctx); err != nil {
			return Result{Reason: StopError}, err
		}
	}
	t.initialPass = true
	t.schedule()
	t.initialPass = false

	reason, runErr := t.loop(t.readerCtx, ctx)

	// Stop: no new calls; readers deliver what they hold, then exit.
	close(t.stopped)
	t.cancelReaders()
	t.readers.Wait()
	t.listings.Wait()
	if serr := t.finalSave(context.WithoutCancel(ctx)); serr != nil && runErr == nil {
		runErr, reason = serr, StopError
	}
	if t.lease != nil {
		t.lease.release(context.WithoutCancel(ctx))
	}
	t.mu.Lock()
	res = Result{Records: t.delivered, Dropped: t.dropped, Readers: t.started, Reason: reason}
	t.mu.Unlock()
	return res, runErr
}

func (t *Tailer) streamLabel() string {
	if t.opts.StreamName != "" {
		return t.opts.StreamName
	}
	return t.opts.StreamARN
}

// loop is the scheduler: timers and events, one at a time. The calls it
// starts use work, which ends when the tail stops; stop is the caller's
// context (Ctrl-C).
func (t *Tailer) loop(work, stop context.Context) (StopReason, error) {
	ctx := work
	relist := time.NewTicker(t.opts.RelistInterval)
	defer relist.Stop()
	save := time.NewTicker(t.opts.CheckpointInterval)
	defer save.Stop()
	var idleC <-chan time.Time
	if t.opts.IdleExit > 0 {
		tick := time.NewTicker(min(max(t.opts.IdleExit/10, 10*time.Millisecond), 250*time.Millisecond))
		defer tick.Stop()
		idleC = tick.C
	}
	// A parent that ended without naming children makes us relist soon.
	t.retryList = time.NewTimer(time.Hour)
	t.retryList.Stop()
	defer t.retryList.Stop()
	var syncC, expiryC, flushC <-chan time.Time
	if t.lease != nil {
		tick := time.NewTicker(t.lease.c.SyncInterval())
		defer tick.Stop()
		defer t.lease.stopTimers()
		syncC, expiryC, flushC = tick.C, t.lease.expiry.C, t.lease.retry.C
	}

	for {
		var err error
		select {
		case <-stop.Done():
			return StopInterrupted, nil
		case <-relist.C:
			t.startRelist(ctx, false)
		case <-t.retryList.C:
			t.startRelist(ctx, true)
		case <-save.C:
			err = t.save(ctx)
		case <-syncC:
			t.lease.startSync(ctx)
		case <-expiryC:
			t.lease.enforce()
		case <-flushC:
			t.lease.flush(ctx)
		case <-idleC:
			if t.idle(ctx) {
				return StopIdle, nil
			}
		case ev := <-t.events:
			if _, ok := ev.(fullEvent); ok {
				return StopMaxRecords, nil
			}
			err = t.handle(ctx, ev)
		}
		if err != nil {
			return StopError, err
		}
	}
}

// handle dispatches an event to its method.
func (t *Tailer) handle(ctx context.Context, ev event) error {
	switch ev := ev.(type) {
	case endEvent:
		return t.onEnd(ctx, ev)
	case tipEvent:
		t.onTip(ev)
	case exitEvent:
		return t.onExit(ev)
	case listEvent:
		return t.onList(ev)
	case syncEvent:
		t.lease.onSync(ctx, ev)
	case checkpointEvent:
		t.lease.onCheckpoint(ctx, ev)
	case handOffEvent:
		t.lease.onHandOff(ev)
		t.schedule()
	}
	return nil
}

// onEnd: a reader delivered its shard to the end. SHARD_END is saved
// before any child starts: in the file before the children are scheduled,
// and in a lease table before any worker may take a child's lease.
func (t *Tailer) onEnd(ctx context.Context, ev endEvent) error {
	s := t.shards[ev.id]
	if s.gen != ev.gen {
		return nil // a reader stopped when its lease was lost
	}
	s.ended, s.status, s.closed, s.atTip = true, statusDone, true, false
	if t.lease != nil {
		t.lease.flush(ctx)
	} else if err := t.save(ctx); err != nil {
		return err
	}
	for _, c := range ev.children {
		t.addChild(c)
	}
	if !t.hasChildren(ev.id) {
		t.opts.Logf("shard %s ended without naming children; listing shards", ev.id)
		t.startRelist(ctx, true)
	}
	t.schedule()
	return nil
}

func (t *Tailer) onTip(ev tipEvent) {
	if s := t.shards[ev.id]; s != nil && s.status == statusRunning && s.gen == ev.gen {
		s.atTip, s.failing = ev.atTip, ev.failing
		if !ev.atTip && !ev.failing {
			t.touch() // behind: records are coming
		}
	}
}

// onExit: a reader returned. An error of a current reader stops the tail;
// one that stopped because its lease may have expired waits to be started
// again.
func (t *Tailer) onExit(ev exitEvent) error {
	s := t.shards[ev.id]
	if s != nil && s.gen != ev.gen {
		return nil // a reader stopped when its lease was lost
	}
	if errors.Is(ev.err, errLeaseExpired) {
		if s != nil && s.status == statusRunning {
			t.stopReader(s)
		}
		return nil
	}
	return ev.err
}

func (t *Tailer) onList(ev listEvent) error {
	t.listing = false
	t.discovering = false
	if ev.err != nil {
		if fatalListError(ev.err) {
			return ev.err
		}
		t.opts.Logf("listing shards failed (will retry): %v", ev.err)
		t.retryList.Reset(t.opts.PollInterval)
		t.idleListed = false // --idle-exit needs a listing that answered
		return nil
	}
	if err := t.mergeListing(ev.shards, false); err != nil {
		t.opts.Logf("ignoring a listing: %v", err)
	}
	t.schedule()
	if t.endedWithoutChildren() {
		// Children not listed yet: look again soon.
		t.discovering = true
		t.retryList.Reset(t.opts.PollInterval)
	}
	return nil
}

// fatalListError: errors that relisting cannot outlive.
func fatalListError(err error) bool {
	return awserr.Is(err, awserr.NotFound, awserr.AccessDenied)
}

// idleWait says with --debug what --idle-exit waits on: when it changes,
// and every idleWhyEvery while it stays the same.
func (t *Tailer) idleWait(why string) {
	now := t.now()
	if why == t.idleWhy && now.Sub(t.idleWhyAt) < idleWhyEvery {
		return
	}
	t.idleWhy, t.idleWhyAt = why, now
	t.opts.Logf("--idle-exit waits for %s", why)
}

const idleWhyEvery = 10 * time.Second

// touch restarts the idle clock.
func (t *Tailer) touch() {
	t.mu.Lock()
	t.lastActivity = t.now()
	t.mu.Unlock()
}

// idle reports whether --idle-exit has elapsed: every reader is at its tip,
// no shard waits to be discovered or started, and nothing was delivered for
// IdleExit.
func (t *Tailer) idle(ctx context.Context) bool {
	busy := func(format string, args ...any) bool {
		t.idleListed = false
		t.touch()
		t.idleWait(fmt.Sprintf(format, args...))
		return false
	}
	if t.discovering || t.endedWithoutChildren() {
		return busy("the children of a shard that ended, not listed yet")
	}
	if t.lease != nil && t.lease.stalled() {
		// Not known to be idle until the table answers; the clock goes
		// on (a table that fails is no record).
		return false
	}
	if t.lease != nil && t.lease.busy() {
		return busy("a checkpoint to write to the lease table")
	}
	for _, s := range t.shards {
		switch s.status {
		case statusPending:
			if t.lease != nil && !t.lease.unread(s.id) {
				if t.lease.current() {
					continue // another worker reads it
				}
				return busy("the next lease sync, to know whose shard %s is", s.id)
			}
			return busy("shard %s, to be read once its parents are", s.id)
		case statusRunning:
			if s.rd.holding.Load() {
				// Fetched records not written yet (a slow stdout): the
				// idle clock starts once they are.
				return busy("shard %s: records fetched and not written out yet", s.id)
			}
			if s.failing || s.rd.unanswered(t.now(), t.opts.PollInterval) {
				// Not known to be at its tip until a call succeeds (or
				// while one goes unanswered for longer than a poll); the
				// clock goes on (failures are not records).
				return false
			}
			// A shard the listing shows closed has children to come: it is
			// not at its tip until its reader reaches the end.
			switch {
			case s.closed && !s.ended:
				return busy("shard %s: closed, and its reader has not reached its end (its children wait for it)", s.id)
			case !s.atTip:
				return busy("shard %s: its reader is behind the tip", s.id)
			}
		}
	}
	t.mu.Lock()
	quiet := t.now().Sub(t.lastActivity) >= t.opts.IdleExit
	t.mu.Unlock()
	if !quiet {
		return false
	}
	switch {
	case !t.idleListed:
		// Before exiting, one more listing: a reshard since the last one
		// would have children still to read (they make it busy again).
		t.idleListed = true
		t.startRelist(ctx, false)
		return false
	case t.listing:
		return false // that listing is on its way
	}
	return true
}

func (t *Tailer) hasChildren(id string) bool {
	if s := t.shards[id]; s != nil && s.children {
		return true
	}
	return false
}

func (t *Tailer) endedWithoutChildren() bool {
	for _, s := range t.shards {
		if s.ended && !s.children {
			return true
		}
	}
	return false
}

// save writes what changed: to the file, or (with a lease table) in the
// background to the table.
func (t *Tailer) save(ctx context.Context) error {
	if t.lease != nil {
		t.lease.flush(ctx)
		return nil
	}
	t.mu.Lock()
	if !t.dirty {
		t.mu.Unlock()
		return nil
	}
	snap := maps.Clone(t.positions)
	t.dirty = false
	t.mu.Unlock()
	if err := t.store.Save(ctx, snap); err != nil {
		t.mu.Lock()
		t.dirty = true
		t.mu.Unlock()
		return err
	}
	return nil
}

// finalSave writes every position at exit.
func (t *Tailer) finalSave(ctx context.Context) error {
	if t.lease != nil {
		return t.lease.finalFlush(ctx)
	}
	t.mu.Lock()
	t.dirty = true
	t.mu.Unlock()
	return t.save(ctx)
}

// list lists the shards; each page rides out a crowded control plane or
// a stream briefly busy under the read-only call rule (awscall.Do).
func (t *Tailer) list(ctx context.Context) ([]types.Shard, error) {
	cctx, cancel := context.WithTimeout(ctx, t.opts.CallTimeout)
	defer cancel()
	return lineage.ListShards(cctx, t.api, lineage.ListOptions{StreamName: t.opts.StreamName, StreamARN: t.opts.StreamARN})
}

// startRelist lists the shards in the background; discovery says it looks
// for the children of an ended shard (which holds off --idle-exit).
func (t *Tailer) startRelist(ctx context.Context, discovery bool) {
	if discovery {
		t.discovering = true
	}
	if t.listing {
		return
	}
	t.listing = true
	t.listings.Add(1)
	go func() {
		defer t.listings.Done()
		shards, err := t.list(ctx)
		t.send(listEvent{shards: shards, err: err})
	}()
}
