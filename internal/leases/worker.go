package leases

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// WorkerOptions tune a Worker.
type WorkerOptions struct {
	Table    string
	WorkerID string
	// LeaseDuration: a lease whose counter has not moved for this long is
	// expired and may be taken (default 10 s, the KCL's failover time).
	LeaseDuration time.Duration
	// CallTimeout is the deadline of every call to the table (default a
	// fifth of the lease duration): a hung table must not hold a renewal
	// past the moment our leases may be taken.
	CallTimeout time.Duration
	// Start is where leases created by this worker start when the table
	// held none of the stream's leases at its first sync (the first worker
	// of an application), for the shards it knew then; later leases (new
	// children) start at TRIM_HORIZON.
	Start tail.StartMode
	// Timestamp of a StartAtTimestamp start; it is written into the leases
	// (an attribute of ours the KCL ignores), so that every worker starts
	// them there.
	Timestamp time.Time
	Now       func() time.Time
	Logf      func(format string, args ...any)
}

// Worker is a tail.Leases backed by a lease table in the KCL schema.
// Several workers (processes, machines) share the shards of one stream:
// conditional writes take and renew leases, a lease whose counter stops
// moving for LeaseDuration is taken over, each worker aims at an equal
// share (stealing one lease per sync from the busiest worker when it has
// more than its share), and a child's lease is taken only when every parent
// lease is SHARD_END or absent. Sync, Checkpoint and Release may run at
// the same time: the lock guards memory only, never a call.
type Worker struct {
	api  DynamoAPI
	opts WorkerOptions

	mu   sync.Mutex
	rng  *rand.Rand
	held map[string]heldLease // shard -> our hold on it
	seen map[string]observation
	// handing: held leases another worker asked for (checkpointOwner is
	// us): renewed, not read, handed over by HandOff.
	handing map[string]bool
	// initial: the shards known at our first scan, when the table held
	// none of the stream's leases; their leases start where Start says,
	// in whichever sync they are created (one may fail at first). Used
	// by Sync only (never two at once).
	initial map[string]bool
	// madeAtTip: the --from-tip leases this worker made, still at LATEST;
	// it reads them from the tip, while anyone else reads them from the
	// moment they were made (positionOf). Used by Sync only.
	madeAtTip map[string]bool
}

// heldLease is a lease we hold: the counter we last wrote, and the moment
// from which another worker may take it (when the write that gave us that
// counter was sent, plus the lease duration: the write landed after it was
// sent, and others count a lease duration from when they see it).
type heldLease struct {
	counter int64
	until   time.Time
}

// observation is when a lease's counter was first seen at its value.
type observation struct {
	counter int64
	owner   string
	since   time.Time
}

// renewConcurrency bounds the table calls one sync has in flight.
const renewConcurrency = 64

var _ tail.Leases = (*Worker)(nil)

// NewWorker returns a worker; the table must exist (see CheckTable,
// CreateTable).
func NewWorker(api DynamoAPI, o WorkerOptions) (*Worker, error) {
	if o.Table == "" || o.WorkerID == "" {
		return nil, errors.New("a lease worker needs a table and a worker id")
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = o.LeaseDuration / 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	h := fnv.New64a()
	h.Write([]byte(o.WorkerID))
	return &Worker{api: api, opts: o, rng: rand.New(rand.NewPCG(h.Sum64(), uint64(o.Now().UnixNano()))),
		held: map[string]heldLease{}, seen: map[string]observation{}, handing: map[string]bool{}}, nil
}

// handOffTimeout is how long a worker that asked for a lease waits for its
// owner to hand it over before it takes it anyway.
func (w *Worker) handOffTimeout() time.Duration { return 2 * w.opts.LeaseDuration }

// SyncInterval implements tail.Leases: a third of the lease duration, so a
// lease is renewed twice before anyone may call it expired.
func (w *Worker) SyncInterval() time.Duration { return w.opts.LeaseDuration / 3 }

// LeaseDuration implements tail.Leases.
func (w *Worker) LeaseDuration() time.Duration { return w.opts.LeaseDuration }

// call runs one table call under its own deadline.
func call[T any](ctx context.Context, w *Worker, f func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
	defer cancel()
	return f(cctx)
}

// parallel runs f for each of n items, a bounded number at a time.
func parallel(n int, f func(i int)) {
	sem := make(chan struct{}, renewConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// Sync implements tail.Leases. Renewals go first, all at once (bounded):
// one sync of 2,000 leases at 5 ms a call takes well under a third of the
// lease duration. If the scan that follows fails, the assignment returned
// with the error holds what the renewals kept.
func (w *Worker) Sync(ctx context.Context, known []tail.ShardInfo) (*tail.Assignment, error) {
	w.renewAll(ctx)
	all, err := scanLeases(ctx, w.api, w.opts.Table, w.opts.CallTimeout)
	if err != nil {
		return &tail.Assignment{Held: w.heldUntil(nil)}, err
	}
	leases := map[string]*Lease{}
	for i := range all {
		if all[i].Stream == "" { // single-stream table: leaseKey is the shard id
			leases[all[i].ShardID] = &all[i]
		}
	}
	if err := w.createMissing(ctx, known, leases); err != nil {
		return &tail.Assignment{Held: w.heldUntil(nil)}, err
	}
	w.finishTrimmed(ctx, known, leases)
	now := w.opts.Now()
	w.mu.Lock()
	w.observe(leases, now)
	w.dropLost(leases)
	for id, h := range w.held {
		if l := leases[id]; l.CheckpointOwner == w.opts.WorkerID && l.Owner != w.opts.WorkerID && l.Counter == h.counter && !w.handing[id] {
			w.handing[id] = true
			w.opts.Logf("lease %s: %s asked for it; handing it over once what was written is checkpointed", id, l.Owner)
		}
	}
	w.mu.Unlock()
	w.balance(ctx, leases, now)

	a := &tail.Assignment{Positions: map[string]tail.Position{}, Starts: map[string]tail.StartMode{}}
	for id, l := range leases {
		if p, _ := w.positionOf(l); !p.IsZero() {
			a.Positions[id] = p
		}
	}
	a.Held = w.heldUntil(leases)
	for id := range a.Held {
		if p, start := w.positionOf(leases[id]); p.IsZero() {
			a.Starts[id] = start
		}
	}
	a.Free = w.free(leases, a.Held, now)
	w.mu.Lock()
	if len(w.handing) > 0 {
		a.HandOff = maps.Clone(w.handing)
	}
	w.mu.Unlock()
	return a, nil
}

// positionOf is the package's positionOf, except that a --from-tip lease
// this worker made, still at LATEST, starts at the tip for it.
func (w *Worker) positionOf(l *Lease) (tail.Position, tail.StartMode) {
	if l.Checkpoint == Latest && w.madeAtTip[l.ShardID] {
		return tail.Position{}, tail.StartLatest
	}
	return positionOf(l)
}

// free lists the leases ready to be worked on that nobody holds (no
// owner, or one whose lease expired) and we did not take.
func (w *Worker) free(leases map[string]*Lease, held map[string]time.Time, now time.Time) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for id, l := range leases {
		if _, ours := held[id]; ours || l.Finished() || !parentsFinished(l, leases) {
			continue
		}
		if l.HandingOff() && !w.expired(id, now) {
			// Its owner still reads it, until it hands it over; the
			// worker it goes to counts it as unread meanwhile, so that
			// its --idle-exit waits for it.
			if l.Owner == w.opts.WorkerID {
				out[id] = true
			}
			continue
		}
		if l.Owner == "" || l.Owner == w.opts.WorkerID || w.expired(id, now) {
			out[id] = true
		}
	}
	return out
}

// renewAll renews every held lease, a bounded number at a time. A lease
// another worker changed is dropped; one whose renewal failed stays ours
// until its time runs out.
func (w *Worker) renewAll(ctx context.Context) {
	w.mu.Lock()
	type job struct {
		id      string
		counter int64
	}
	jobs := make([]job, 0, len(w.held))
	for id, h := range w.held {
		jobs = append(jobs, job{id, h.counter})
	}
	w.mu.Unlock()
	parallel(len(jobs), func(i int) {
		j := jobs[i]
		sent := w.opts.Now()
		n, err := w.bump(ctx, j.id, j.counter)
		w.mu.Lock()
		defer w.mu.Unlock()
		h, still := w.held[j.id]
		switch {
		case !still || h.counter != j.counter:
			// Finished (SHARD_END) or released meanwhile.
		case errors.Is(err, errConflict):
			w.opts.Logf("lease %s: lost while renewing", j.id)
			delete(w.held, j.id)
		case err != nil:
			w.opts.Logf("lease %s: renewal failed: %v", j.id, err)
		default:
			w.held[j.id] = heldLease{counter: n, until: sent.Add(w.opts.LeaseDuration)}
		}
	})
}

// heldUntil lists the leases we hold, with their times, that others
// cannot take yet; with leases (a scan), finished ones are left out.
func (w *Worker) heldUntil(leases map[string]*Lease) map[string]time.Time {
	now := w.opts.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.held))
	for id, h := range w.held {
		if l := leases[id]; (leases != nil && (l == nil || l.Finished())) || !now.Before(h.until) || w.handing[id] {
			continue
		}
		out[id] = h.until
	}
	return out
}

// dropLost forgets the leases the scan shows in other hands (or finished).
func (w *Worker) dropLost(leases map[string]*Lease) {
	for id, h := range w.held {
		l := leases[id]
		if l == nil || l.Counter != h.counter || l.Owner != w.opts.WorkerID && l.CheckpointOwner != w.opts.WorkerID {
			w.opts.Logf("lease %s: lost (owner %q, counter %d, ours %d)", id, ownerOf(l), counterOf(l), h.counter)
			delete(w.held, id)
			delete(w.handing, id)
			continue
		}
		if l.Finished() {
			delete(w.held, id)
			delete(w.handing, id)
		}
	}
}

// createMissing writes leases for shards nobody has written yet. A closed
// shard whose child's lease is under way (checkpointed past its start) is
// finished: the KCL deletes a parent's lease once its children are under
// way, and recreating it would read it all again. A child's lease that
// merely exists says nothing: the parent's create may have failed in the
// sync that created both, and skipping the parent then would give its
// child out with the parent unread.
func (w *Worker) createMissing(ctx context.Context, known []tail.ShardInfo, leases map[string]*Lease) error {
	if w.initial == nil {
		w.initial = map[string]bool{}
		if len(leases) == 0 {
			for _, s := range known {
				w.initial[s.ID] = true
			}
		}
	}
	childUnderWay := map[string]bool{}
	for _, s := range known {
		if l := leases[s.ID]; l != nil && underWay(l) {
			for _, p := range s.Parents {
				childUnderWay[p] = true
			}
		}
	}
	var todo []tail.ShardInfo
	for _, s := range known {
		if leases[s.ID] == nil && !(s.Closed && childUnderWay[s.ID]) {
			todo = append(todo, s)
		}
	}
	created := make([]*Lease, len(todo))
	errs := make([]error, len(todo))
	parallel(len(todo), func(i int) { created[i], errs[i] = w.create(ctx, todo[i], w.initial[todo[i].ID]) })
	for i, l := range created {
		if l != nil {
			leases[todo[i].ID] = l
			if l.Checkpoint == Latest {
				if w.madeAtTip == nil {
					w.madeAtTip = map[string]bool{}
				}
				w.madeAtTip[l.ShardID] = true
			}
		}
	}
	return errors.Join(errs...)
}

// underWay: the lease was checkpointed past where its shard starts.
func underWay(l *Lease) bool {
	switch l.Checkpoint {
	case "", TrimHorizon, Latest, AtTimestamp:
		return false
	}
	return true
}

// finishTrimmed writes SHARD_END to the leases of shards retention
// trimmed: a lease whose shard is not in the latest listing while a listed
// shard descends from it. Such a shard cannot be read any more, and a
// lease left short of SHARD_END would block its children for ever (as a
// trimmed parent counts as read without a lease table). A shard known
// only from a parent's ChildShards, newer than the listing, is not
// trimmed: only ancestors of listed shards are.
func (w *Worker) finishTrimmed(ctx context.Context, known []tail.ShardInfo, leases map[string]*Lease) {
	listed := map[string]bool{}
	var stack []string
	for _, s := range known {
		if s.Listed {
			listed[s.ID] = true
			stack = append(stack, s.Parents...)
		}
	}
	if len(listed) == 0 {
		return
	}
	trimmed := map[string]bool{}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if listed[id] || trimmed[id] {
			continue
		}
		trimmed[id] = true
		if l := leases[id]; l != nil {
			stack = append(stack, l.Parents...)
		}
	}
	var todo []*Lease
	for id := range trimmed {
		if l := leases[id]; l != nil && !l.Finished() {
			todo = append(todo, l)
		}
	}
	parallel(len(todo), func(i int) {
		l := todo[i]
		_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(w.opts.Table),
				Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: l.Key}},
				UpdateExpression:          aws.String("SET checkpoint = :end, checkpointSubSequenceNumber = :zero REMOVE leaseOwner"),
				ConditionExpression:       aws.String("attribute_exists(leaseKey)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":end": &types.AttributeValueMemberS{Value: ShardEnd}, ":zero": &types.AttributeValueMemberN{Value: "0"}},
			})
		})
		if err != nil {
			w.opts.Logf("lease %s: trimmed, but writing SHARD_END failed (will retry): %v", l.ShardID, err)
			return
		}
		w.opts.Logf("lease %s: its shard was trimmed by retention; recorded SHARD_END", l.ShardID)
	})
	// Finished from here on, whether or not the write went through: the
	// shard cannot be read, and its children may be.
	for _, l := range todo {
		l.Checkpoint, l.Owner = ShardEnd, ""
	}
}

// balance takes free and expired leases up to an equal share of the
// leases that can be worked on now, and steals one from the busiest
// worker above its share.
func (w *Worker) balance(ctx context.Context, leases map[string]*Lease, now time.Time) {
	workable := map[string]*Lease{}
	for id, l := range leases {
		if !l.Finished() && parentsFinished(l, leases) {
			workable[id] = l
		}
	}
	w.mu.Lock()
	counts := map[string]int{w.opts.WorkerID: 0}
	var free []*Lease
	for id, l := range workable {
		_, ours := w.held[id]
		switch {
		case l.Owner == w.opts.WorkerID && ours:
			counts[w.opts.WorkerID]++
		case l.HandingOff() && !w.expired(id, now) && !(l.Owner == w.opts.WorkerID && now.UnixMilli() >= l.HandOffBy):
			// On its way to its new owner (leaseOwner): counted as
			// theirs; taken only if the old one stops renewing it, or by
			// the new one once it waited long enough.
			counts[l.Owner]++
		case l.Owner == "" || l.Owner == w.opts.WorkerID || w.expired(id, now):
			free = append(free, l)
		default:
			counts[l.Owner]++
		}
	}
	target := (len(workable) + len(counts) - 1) / len(counts)
	sort.Slice(free, func(i, j int) bool { return free[i].ShardID < free[j].ShardID })
	w.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	w.mu.Unlock()
	// Take in rounds, all of a round at once, until the share is reached.
	for len(free) > 0 && counts[w.opts.WorkerID] < target {
		n := min(target-counts[w.opts.WorkerID], len(free))
		round := free[:n]
		free = free[n:]
		ok := make([]bool, n)
		parallel(n, func(i int) { ok[i] = w.take(ctx, round[i]) })
		for _, taken := range ok {
			if taken {
				counts[w.opts.WorkerID]++
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
	if counts[w.opts.WorkerID] >= target {
		return
	}
	// Steal one lease from the busiest worker above its share.
	busiest, most := "", target
	for owner, n := range counts {
		if owner != w.opts.WorkerID && (n > most || (n == most && busiest != "" && owner < busiest)) {
			busiest, most = owner, n
		}
	}
	if busiest == "" || most <= target {
		return
	}
	var theirs []*Lease
	for _, l := range workable {
		if l.Owner == busiest && !l.HandingOff() {
			theirs = append(theirs, l)
		}
	}
	sort.Slice(theirs, func(i, j int) bool { return theirs[i].ShardID < theirs[j].ShardID })
	if len(theirs) == 0 {
		return
	}
	w.mu.Lock()
	pick := theirs[w.rng.IntN(len(theirs))]
	w.mu.Unlock()
	// Not taken outright: its owner has written records the table does
	// not know of yet, which we would print again. It hands it over.
	if w.requestHandOff(ctx, pick) {
		w.opts.Logf("asked %s for a lease (it had %d, the share is %d)", busiest, most, target)
	}
}

func ownerOf(l *Lease) string {
	if l == nil {
		return "<no lease>"
	}
	return l.Owner
}

func counterOf(l *Lease) int64 {
	if l == nil {
		return -1
	}
	return l.Counter
}

// parentsFinished is the KCL's rule: a child is worked on only when every
// parent lease is SHARD_END or absent (trimmed, or finished and removed).
func parentsFinished(l *Lease, leases map[string]*Lease) bool {
	for _, p := range l.Parents {
		if pl := leases[p]; pl != nil && !pl.Finished() {
			return false
		}
	}
	return true
}

// observe notes when each lease's counter last moved.
func (w *Worker) observe(leases map[string]*Lease, now time.Time) {
	for id, l := range leases {
		o, ok := w.seen[id]
		if !ok || o.counter != l.Counter || o.owner != l.Owner {
			w.seen[id] = observation{counter: l.Counter, owner: l.Owner, since: now}
		}
	}
}

// expired: another worker's lease whose counter did not move for a lease
// duration (measured on our clock, as the KCL does: clocks of different
// machines are never compared).
func (w *Worker) expired(id string, now time.Time) bool {
	o, ok := w.seen[id]
	return ok && now.Sub(o.since) >= w.opts.LeaseDuration
}
