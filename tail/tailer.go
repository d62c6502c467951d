package tail

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// StartMode is where a shard without a checkpoint starts.
type StartMode int

const (
	// StartTrimHorizon reads every shard from its oldest record (default).
	StartTrimHorizon StartMode = iota
	// StartLatest (--from-tip) starts the open shards at their tip and
	// counts closed shards without a checkpoint as read.
	StartLatest
	// StartAtTimestamp (--from-timestamp) starts at an arrival time.
	StartAtTimestamp
)

// Options tune a tail. The zero value of every duration means its default.
type Options struct {
	StreamName string
	StreamARN  string // preferred for calls when set

	Start     StartMode
	Timestamp time.Time // StartAtTimestamp

	PollInterval       time.Duration // idle shard: one GetRecords per this (default 1s)
	RelistInterval     time.Duration // ListShards safety net (default 10s)
	CheckpointInterval time.Duration // save at most this often (default 5s)
	CallTimeout        time.Duration // deadline of every call (default 30s)
	Limit              int32         // GetRecords Limit; 0 = service default (10,000)

	// Key restricts reading to the shards whose range holds this hash.
	Key *lineage.HashKey
	// KeyName, when set, writes out only the records of this partition key
	// (the user records' own keys, for KPL aggregates).
	KeyName string
	// Shard restricts reading to this shard and its descendants.
	Shard string

	MaxRecords int64         // stop after this many delivered records (0 = no limit)
	IdleExit   time.Duration // stop when idle this long (0 = never)
	Decompress bool          // unpack gzip payloads

	// Coordinator, when set, shares the stream's shards with other tail
	// processes through a lease table: only the shards it gives are read,
	// and checkpoints go to it instead of the Store.
	Coordinator Coordinator

	// OnPoll, when set, is called after every successful GetRecords with
	// what it returned (from the reader's goroutine; keep it quick).
	OnPoll func(PollStats)

	// Warnf receives what the user should see even without --debug (may
	// be nil): a shard throttled for a long time.
	Warnf func(format string, args ...any)
	// Logf receives warnings and debug lines (may be nil).
	Logf func(format string, args ...any)
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time

	// minInterval is the pacer's floor between GetRecords attempts of one
	// shard; only this package's tests lower it.
	minInterval time.Duration
}

// PollStats is what one GetRecords returned, for live figures.
type PollStats struct {
	ShardID      string
	Records      int   // records in the response (before de-aggregation)
	Bytes        int   // payload and partition key bytes
	MillisBehind int64 // MillisBehindLatest
	At           time.Time
}

// Defaults.
const (
	DefaultPollInterval       = time.Second
	DefaultRelistInterval     = 10 * time.Second
	DefaultCheckpointInterval = 5 * time.Second
	DefaultCallTimeout        = 30 * time.Second
)

func (o *Options) defaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.minInterval <= 0 {
		o.minInterval = minCallInterval
	}
	if o.PollInterval < o.minInterval {
		o.PollInterval = o.minInterval
	}
	if o.RelistInterval <= 0 {
		o.RelistInterval = DefaultRelistInterval
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Warnf == nil {
		o.Warnf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// StopReason says why Run returned.
type StopReason int

const (
	StopInterrupted StopReason = iota // the context ended (Ctrl-C)
	StopMaxRecords                    // --max-records reached
	StopIdle                          // --idle-exit elapsed
	StopError                         // an error (returned alongside)
)

// Result is what Run reports.
type Result struct {
	Records int64 // delivered
	Readers int   // shard readers started
	Reason  StopReason
}

// ErrShardNotFound: the --shard is not in the stream.
var ErrShardNotFound = errors.New("shard not found")

type shardStatus int

const (
	statusPending  shardStatus = iota // waiting for its parents
	statusRunning                     // a reader is reading it
	statusDone                        // read to its end (or counted as read)
	statusExcluded                    // not selected by --key / --shard
)

// shardState is the coordinator's view of one shard.
type shardState struct {
	id        string
	parents   []string
	rng       lineage.HashRange
	haveRange bool
	closed    bool
	listed    bool // seen in a listing (so an absent parent is trimmed)
	initial   bool // in the first listing
	status    shardStatus
	atTip     bool
	ended     bool // our reader reached its end
	children  bool // some known shard names it as a parent
	// With a Coordinator: the reader's cancel and generation (a reader of
	// a shard whose lease was lost is stopped; a later one is another gen).
	cancel context.CancelFunc
	gen    int
	rd     *reader
}

// Tailer reads a stream parents-first. Create with New, run with Run.
type Tailer struct {
	api     API
	store   Store
	opts    Options
	deliver DeliverFunc

	// mu guards what readers and the coordinator share.
	mu           sync.Mutex
	positions    map[string]Position
	dirty        bool
	delivered    int64
	lastActivity time.Time
	full         bool // MaxRecords reached

	events  chan event
	stopped chan struct{} // closed when the coordinator stops; readers then stop sending
	pages   *pageBudget   // memory of the pages the readers hold
	calls   callSlots     // calls the readers have in flight

	// Coordinator-only state.
	shards        map[string]*shardState
	initialPass   bool
	held          map[string]bool      // with a Coordinator: the shards we may read
	starts        map[string]StartMode // with a Coordinator: where held shards without a position start
	saved         map[string]Position  // with a Coordinator: what was last checkpointed
	syncing       bool
	syncWG        sync.WaitGroup
	syncCtx       context.Context
	syncCancel    context.CancelFunc
	lastSync      time.Time // the last successful Coordinator sync
	discovering   bool      // a relist to find children of an ended shard is due
	idleListed    bool      // the listing before an idle exit was taken
	listing       bool      // a relist is running
	readers       sync.WaitGroup
	readerCtx     context.Context
	cancelReaders context.CancelFunc
	started       int
}

type event interface{}

type endEvent struct {
	id       string
	gen      int
	children []types.ChildShard
}
type tipEvent struct {
	id    string
	atTip bool
}
type exitEvent struct {
	id  string
	gen int
	err error
}
type syncEvent struct {
	a   *Assignment
	err error
}
type listEvent struct {
	shards []types.Shard
	err    error
}
type fullEvent struct{}

// New prepares a tail; nothing is called until Run.
func New(api API, store Store, opts Options, deliver DeliverFunc) *Tailer {
	opts.defaults()
	return &Tailer{api: api, store: store, opts: opts, deliver: deliver,
		events: make(chan event, 64), stopped: make(chan struct{}), shards: map[string]*shardState{}, saved: map[string]Position{},
		pages: newPageBudget(pageBudgetBytes), calls: make(callSlots, maxCallsInFlight)}
}

func (t *Tailer) now() time.Time { return t.opts.Now() }

// send hands an event to the coordinator unless it has stopped.
func (t *Tailer) send(ev event) {
	select {
	case t.events <- ev:
	case <-t.stopped:
	}
}

// Positions returns a copy of the delivered positions.
func (t *Tailer) Positions() map[string]Position {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.positions)
}

// Run reads until the context ends, MaxRecords or IdleExit, or an error.
// It always saves the checkpoint of what was delivered before returning.
func (t *Tailer) Run(ctx context.Context) (res Result, err error) {
	positions, err := t.store.Load(ctx)
	if err != nil {
		return Result{Reason: StopError}, err
	}
	t.positions = positions
	t.lastActivity = t.now()

	shards, err := t.listWithRetry(ctx)
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
	if c := t.opts.Coordinator; c != nil {
		a, err := c.Sync(ctx, t.known())
		if err != nil {
			return Result{Reason: StopError}, err
		}
		t.lastSync = t.now()
		t.applyAssignment(a)
	}
	t.initialPass = true
	t.schedule()
	t.initialPass = false

	reason, runErr := t.loop(ctx)

	// Stop: no new calls; readers deliver what they hold, then exit.
	close(t.stopped)
	t.cancelReaders()
	t.readers.Wait()
	if serr := t.save(context.WithoutCancel(ctx), true); serr != nil && runErr == nil {
		runErr, reason = serr, StopError
	}
	if c := t.opts.Coordinator; c != nil {
		// No sync may take leases after they are given back.
		if t.syncCancel != nil {
			t.syncCancel()
		}
		t.syncWG.Wait()
		// Give the leases back so other workers take them at once.
		if rerr := c.Release(context.WithoutCancel(ctx)); rerr != nil {
			t.opts.Logf("releasing leases: %v", rerr)
		}
	}
	t.mu.Lock()
	res = Result{Records: t.delivered, Readers: t.started, Reason: reason}
	t.mu.Unlock()
	return res, runErr
}

func (t *Tailer) streamLabel() string {
	if t.opts.StreamName != "" {
		return t.opts.StreamName
	}
	return t.opts.StreamARN
}

func (t *Tailer) loop(ctx context.Context) (StopReason, error) {
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
	var syncC <-chan time.Time
	if c := t.opts.Coordinator; c != nil {
		tick := time.NewTicker(c.SyncInterval())
		defer tick.Stop()
		syncC = tick.C
	}
	// A parent that ended without naming children makes us relist soon.
	retryList := time.NewTimer(time.Hour)
	retryList.Stop()
	defer retryList.Stop()

	for {
		select {
		case <-ctx.Done():
			return StopInterrupted, nil
		case <-relist.C:
			t.startRelist(ctx, false)
		case <-retryList.C:
			t.startRelist(ctx, true)
		case <-save.C:
			if err := t.save(ctx, false); err != nil {
				return StopError, err
			}
		case <-syncC:
			t.startSync(ctx)
		case <-idleC:
			if t.idle(ctx) {
				return StopIdle, nil
			}
		case ev := <-t.events:
			switch ev := ev.(type) {
			case endEvent:
				s := t.shards[ev.id]
				if s.gen != ev.gen {
					continue // a reader stopped when its lease was lost
				}
				s.ended, s.status, s.closed, s.atTip = true, statusDone, true, false
				// SHARD_END is on disk before any child starts.
				if err := t.save(ctx, true); err != nil {
					return StopError, err
				}
				for _, c := range ev.children {
					t.addChild(c)
				}
				if !t.hasChildren(ev.id) {
					t.opts.Logf("shard %s ended without naming children; listing shards", ev.id)
					t.startRelist(ctx, true)
				}
				if t.opts.Coordinator != nil {
					t.startSync(ctx) // create and take the children's leases now
				}
				t.schedule()
			case tipEvent:
				if s := t.shards[ev.id]; s != nil && s.status == statusRunning {
					s.atTip = ev.atTip
					if !ev.atTip {
						t.touch()
					}
				}
			case exitEvent:
				if s := t.shards[ev.id]; s != nil && s.gen != ev.gen {
					continue // a reader stopped when its lease was lost
				}
				if ev.err != nil {
					return StopError, ev.err
				}
			case syncEvent:
				t.syncing = false
				if ev.err != nil {
					// The lease table is unreachable: keep reading what we
					// hold while our leases last; once they may have expired
					// others can take them, so stop reading them.
					t.opts.Logf("lease sync failed (will retry): %v", ev.err)
					if c := t.opts.Coordinator; t.now().Sub(t.lastSync) >= c.LeaseDuration()-c.SyncInterval() {
						t.opts.Warnf("the lease table has not answered for %s: stopping every reader until it does", t.now().Sub(t.lastSync).Round(time.Second))
						t.applyAssignment(&Assignment{})
					}
					continue
				}
				t.lastSync = t.now()
				t.applyAssignment(ev.a)
				t.schedule()
			case listEvent:
				t.listing = false
				t.discovering = false
				if ev.err != nil {
					if fatalListError(ev.err) {
						return StopError, ev.err
					}
					t.opts.Logf("listing shards failed (will retry): %v", ev.err)
					retryList.Reset(t.opts.PollInterval)
					continue
				}
				if err := t.mergeListing(ev.shards, false); err != nil {
					t.opts.Logf("ignoring a listing: %v", err)
				}
				t.schedule()
				if t.endedWithoutChildren() {
					// Children not listed yet: look again soon.
					t.discovering = true
					retryList.Reset(t.opts.PollInterval)
				}
			case fullEvent:
				return StopMaxRecords, nil
			}
		}
	}
}

// fatalListError: errors that relisting cannot outlive.
func fatalListError(err error) bool {
	var nf *types.ResourceNotFoundException
	var ad *types.AccessDeniedException
	return errors.As(err, &nf) || errors.As(err, &ad)
}

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
	busy := func() bool {
		t.idleListed = false
		t.touch()
		return false
	}
	if t.discovering || t.endedWithoutChildren() {
		return busy()
	}
	for _, s := range t.shards {
		switch s.status {
		case statusPending:
			if t.opts.Coordinator != nil && !t.held[s.id] {
				continue // another worker reads it
			}
			return busy()
		case statusRunning:
			// A shard the listing shows closed has children to come: it is
			// not at its tip until its reader reaches the end.
			if !s.atTip || (s.closed && !s.ended) {
				return busy()
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

// save writes the positions when they changed (or always when force).
func (t *Tailer) save(ctx context.Context, force bool) error {
	t.mu.Lock()
	if !t.dirty && !force {
		t.mu.Unlock()
		return nil
	}
	snap := maps.Clone(t.positions)
	t.dirty = false
	t.mu.Unlock()
	if t.opts.Coordinator != nil {
		return t.checkpointLeases(ctx, snap, force)
	}
	if err := t.store.Save(ctx, snap); err != nil {
		t.mu.Lock()
		t.dirty = true
		t.mu.Unlock()
		return err
	}
	return nil
}

// listWithRetry lists the shards for the start, riding out throttling and
// a stream that is briefly busy.
func (t *Tailer) listWithRetry(ctx context.Context) ([]types.Shard, error) {
	delay := 500 * time.Millisecond
	for attempt := 0; ; attempt++ {
		shards, err := t.list(ctx)
		if err == nil {
			return shards, nil
		}
		var lee *types.LimitExceededException
		var riu *types.ResourceInUseException
		if (!errors.As(err, &lee) && !errors.As(err, &riu)) || attempt >= 5 {
			return nil, err
		}
		if err := kstream.Sleep(ctx, delay); err != nil {
			return nil, err
		}
		delay *= 2
	}
}

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
	go func() {
		shards, err := t.list(ctx)
		t.send(listEvent{shards: shards, err: err})
	}()
}

// mergeListing folds a ListShards answer into the shard states.
func (t *Tailer) mergeListing(listed []types.Shard, initial bool) error {
	g, err := lineage.Build(listed)
	if err != nil {
		return fmt.Errorf("the shard listing of %s is not a valid lineage: %w", t.streamLabel(), err)
	}
	for _, sh := range g.Shards() {
		if sh.State == lineage.StateTrimmed {
			continue
		}
		s := t.shards[sh.ID]
		if s == nil {
			s = &shardState{id: sh.ID, initial: initial}
			t.shards[sh.ID] = s
		}
		s.parents = sh.Parents
		s.rng, s.haveRange = sh.Range, true
		s.listed = true
		if sh.State == lineage.StateClosed {
			s.closed = true
		}
		for _, p := range sh.Parents {
			if ps := t.shards[p]; ps != nil {
				ps.children = true
			}
		}
		if len(sh.Children) > 0 {
			s.children = true
		}
	}
	return nil
}

// addChild records a child named by a parent's last GetRecords.
func (t *Tailer) addChild(c types.ChildShard) {
	id := aws.ToString(c.ShardId)
	if id == "" {
		return
	}
	s := t.shards[id]
	if s == nil {
		s = &shardState{id: id, parents: slices.Clone(c.ParentShards)}
		t.shards[id] = s
	}
	if !s.haveRange && c.HashKeyRange != nil {
		start, err1 := lineage.ParseHashKey(aws.ToString(c.HashKeyRange.StartingHashKey))
		end, err2 := lineage.ParseHashKey(aws.ToString(c.HashKeyRange.EndingHashKey))
		if err1 == nil && err2 == nil {
			s.rng, s.haveRange = lineage.HashRange{Start: start, End: end}, true
		}
	}
	for _, p := range c.ParentShards {
		if ps := t.shards[p]; ps != nil {
			ps.children = true
		}
	}
}

// relevant applies --key and --shard. It is false only when the shard can
// be excluded for sure.
func (t *Tailer) relevant(s *shardState) bool {
	if t.opts.Key != nil {
		return !s.haveRange || s.rng.Contains(*t.opts.Key)
	}
	if t.opts.Shard != "" {
		return t.inSubtree(s.id)
	}
	return true
}

// inSubtree reports whether the --shard shard is id or one of its
// ancestors. Each ancestor is visited once: a history of repeated splits
// and merges has exponentially many paths to its roots.
func (t *Tailer) inSubtree(id string) bool {
	seen := map[string]bool{id: true}
	stack := []string{id}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == t.opts.Shard {
			return true
		}
		s := t.shards[id]
		if s == nil {
			continue
		}
		for _, p := range s.parents {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false
}

// parentsDone is the ordering rule: every parent is at SHARD_END, counted
// as read, excluded by a filter, or gone from a listing that holds the
// child (trimmed by retention).
func (t *Tailer) parentsDone(s *shardState) bool {
	if t.opts.Shard != "" && s.id == t.opts.Shard {
		return true // the user starts here
	}
	for _, p := range s.parents {
		ps := t.shards[p]
		if ps == nil {
			if !s.listed {
				return false // known from ChildShards only: wait for a listing
			}
			continue // trimmed
		}
		switch ps.status {
		case statusDone, statusExcluded:
			continue
		}
		if t.positionOf(p).ShardEnd {
			continue
		}
		return false
	}
	return true
}

func (t *Tailer) positionOf(id string) Position {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.positions[id]
}

// schedule starts every shard that became ready, until nothing changes.
func (t *Tailer) schedule() {
	for changed := true; changed; {
		changed = false
		for _, id := range slices.Sorted(maps.Keys(t.shards)) {
			s := t.shards[id]
			if s.status != statusPending {
				continue
			}
			if t.opts.Coordinator != nil && !t.held[id] {
				continue // another worker's, or nobody's yet
			}
			if !t.relevant(s) {
				s.status, changed = statusExcluded, true
				continue
			}
			pos := t.positionOf(id)
			if pos.ShardEnd {
				s.status, changed = statusDone, true
				continue
			}
			if !t.parentsDone(s) {
				continue
			}
			if t.initialPass && t.opts.Start == StartLatest && s.closed && pos.IsZero() && t.opts.Coordinator == nil {
				// --from-tip: its old records would be skipped anyway.
				t.mu.Lock()
				t.positions[id] = Position{ShardEnd: true}
				t.dirty = true
				t.mu.Unlock()
				s.status, changed = statusDone, true
				continue
			}
			t.startReader(s, pos)
			changed = true
		}
	}
}

// leaseStart is where a leased shard nobody has read yet starts. A lease
// says AT_TIMESTAMP without the time (the KCL's schema has no field for it):
// a worker started without --from-timestamp, taking over from one started
// with it, reads from the oldest record rather than from the year 1.
func leaseStart(start StartMode, ts time.Time) startPoint {
	switch {
	case start == StartLatest:
		return startPoint{kind: types.ShardIteratorTypeLatest}
	case start == StartAtTimestamp && !ts.IsZero():
		return startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: ts}
	}
	return startPoint{kind: types.ShardIteratorTypeTrimHorizon}
}

func (t *Tailer) startReader(s *shardState, pos Position) {
	s.status, s.atTip = statusRunning, false
	t.started++
	t.touch()
	r := &reader{t: t, id: s.id, closedAtStart: s.closed, rng: s.rng, haveRange: s.haveRange}
	start, leased := t.starts[s.id]
	switch {
	case pos.SequenceNumber != "":
		r.start = startPoint{kind: types.ShardIteratorTypeAfterSequenceNumber, seq: pos.SequenceNumber}
		if pos.Aggregated {
			// Re-read the aggregate and skip what was delivered.
			r.start = startPoint{kind: types.ShardIteratorTypeAtSequenceNumber, seq: pos.SequenceNumber}
			r.skipSeq, r.skipSub = pos.SequenceNumber, pos.SubSequence
		}
	case leased:
		r.start = leaseStart(start, t.opts.Timestamp)
	case s.initial && t.initialPass && t.opts.Start == StartLatest:
		r.start = startPoint{kind: types.ShardIteratorTypeLatest}
	case s.initial && t.opts.Start == StartAtTimestamp:
		r.start = startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: t.opts.Timestamp}
	default:
		r.start = startPoint{kind: types.ShardIteratorTypeTrimHorizon}
	}
	t.opts.Logf("shard %s: reading from %s", s.id, r.start)
	ctx, cancel := context.WithCancel(t.readerCtx)
	s.gen++
	s.cancel, s.rd = cancel, r
	r.gen = s.gen
	gen := s.gen
	t.readers.Add(1)
	go func() {
		defer t.readers.Done()
		defer cancel()
		err := r.run(ctx)
		t.send(exitEvent{id: s.id, gen: gen, err: err})
	}()
}

// deliverBatch writes a batch out and records its position. Deliveries are
// serialised; after MaxRecords nothing more is delivered.
func (t *Tailer) deliverBatch(r *reader, batch []Record) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.full || r.revoked.Load() {
		return false, nil
	}
	id := r.id
	if t.opts.KeyName != "" {
		// --key: the shards hold other keys too; only this key's records
		// are written out (the checkpoint then stays at its last one).
		kept := batch[:0]
		for _, r := range batch {
			if r.PartitionKey == t.opts.KeyName {
				kept = append(kept, r)
			}
		}
		batch = kept
	}
	if t.opts.MaxRecords > 0 && t.delivered+int64(len(batch)) >= t.opts.MaxRecords {
		batch = batch[:t.opts.MaxRecords-t.delivered]
		t.full = true
	}
	if len(batch) > 0 {
		if err := t.deliver(batch); err != nil {
			return false, err
		}
		t.delivered += int64(len(batch))
		pos := batch[len(batch)-1].position()
		// A copy: a page's strings share blocks, which the map would keep.
		pos.SequenceNumber = strings.Clone(pos.SequenceNumber)
		t.positions[id] = pos
		t.dirty = true
		t.lastActivity = t.now()
	}
	if t.full {
		go t.send(fullEvent{})
		return false, nil
	}
	return true, nil
}

// markEnd records SHARD_END for a shard whose every record was delivered.
func (t *Tailer) markEnd(r *reader) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.full || r.revoked.Load() {
		return false
	}
	t.positions[r.id] = Position{ShardEnd: true}
	t.dirty = true
	t.lastActivity = t.now()
	return true
}

// known lists the shards for a Coordinator.
func (t *Tailer) known() []ShardInfo {
	out := make([]ShardInfo, 0, len(t.shards))
	for _, id := range slices.Sorted(maps.Keys(t.shards)) {
		s := t.shards[id]
		out = append(out, ShardInfo{ID: id, Parents: s.parents, Closed: s.closed || s.ended, Range: s.rng, HaveRange: s.haveRange})
	}
	return out
}

// startSync runs a Coordinator sync in the background.
func (t *Tailer) startSync(ctx context.Context) {
	if t.syncing {
		return
	}
	t.syncing = true
	known := t.known()
	if t.syncCtx == nil {
		// One context for every sync, cancelled before the leases are
		// released at exit.
		t.syncCtx, t.syncCancel = context.WithCancel(ctx)
	}
	ctx = t.syncCtx
	t.syncWG.Add(1)
	go func() {
		defer t.syncWG.Done()
		a, err := t.opts.Coordinator.Sync(ctx, known)
		t.send(syncEvent{a: a, err: err})
	}()
}

// applyAssignment takes a Coordinator's answer: positions other workers
// reached (for the parents-first rule), the shards we hold, and stops the
// readers of shards we lost.
func (t *Tailer) applyAssignment(a *Assignment) {
	t.held, t.starts = a.Held, a.Starts
	t.mu.Lock()
	for id, p := range a.Positions {
		if s := t.shards[id]; s != nil && s.status == statusRunning {
			continue // our reader is ahead of the table
		}
		local := t.positions[id]
		if local.ShardEnd {
			continue // our end stands (a sync begun before it was saved would undo it)
		}
		if local != t.saved[id] {
			continue // ours is newer: its checkpoint is still to be written
		}
		t.positions[id], t.saved[id] = p, p
	}
	t.mu.Unlock()
	for id, s := range t.shards {
		switch {
		case s.status == statusRunning && !t.held[id]:
			t.opts.Logf("shard %s: lease lost to another worker; stopping its reader", id)
			if s.rd != nil {
				s.rd.revoked.Store(true) // records nothing more, even mid-page
			}
			if s.cancel != nil {
				s.cancel()
			}
			s.gen++ // its exit is not an error of ours
			s.status, s.atTip = statusPending, false
		case s.status == statusDone && t.held[id] && !t.positionOf(id).ShardEnd:
			// We ended it once but lost the lease before SHARD_END was
			// written; it is ours again, from the table's checkpoint.
			s.status, s.ended = statusPending, false
		}
	}
}

// checkpointLeases writes changed positions of held shards to the
// Coordinator. A lost lease is not an error (another worker goes on from
// the table's checkpoint); other failures are retried at the next save,
// except when forced (SHARD_END, exit), where they are retried a few
// times and then returned.
func (t *Tailer) checkpointLeases(ctx context.Context, snap map[string]Position, force bool) error {
	var firstErr error
	for _, id := range slices.Sorted(maps.Keys(snap)) {
		p := snap[id]
		if t.saved[id] == p {
			continue
		}
		var err error
		for attempt := 0; ; attempt++ {
			err = t.opts.Coordinator.Checkpoint(ctx, id, p)
			if err == nil || errors.Is(err, ErrLeaseLost) || !force || attempt >= 3 || ctx.Err() != nil {
				break
			}
			kstream.Sleep(ctx, time.Duration(250<<attempt)*time.Millisecond)
		}
		switch {
		case err == nil:
			t.saved[id] = p
		case errors.Is(err, ErrLeaseLost):
			// What we could not record is another worker's to read again
			// (from the table's checkpoint): forget it, end included.
			t.opts.Logf("shard %s: %v", id, err)
			t.mu.Lock()
			t.positions[id] = t.saved[id]
			t.mu.Unlock()
			if s := t.shards[id]; s != nil && s.status == statusDone && s.ended {
				s.status, s.ended = statusPending, false
			}
		default:
			t.mu.Lock()
			t.dirty = true
			t.mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil && !force {
		t.opts.Logf("checkpointing to the lease table failed (will retry): %v", firstErr)
		return nil
	}
	return firstErr
}
