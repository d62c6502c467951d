package leases

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
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
	// Start is where leases created by this worker start when the table
	// holds none of the stream's leases yet (the first worker of an
	// application); later leases (new children) start at TRIM_HORIZON.
	Start tail.StartMode
	Now   func() time.Time
	Logf  func(format string, args ...any)
}

// Worker is a tail.Coordinator backed by a lease table in the KCL schema.
// Several workers (processes, machines) share the shards of one stream:
// conditional writes take and renew leases, a lease whose counter stops
// moving for LeaseDuration is taken over, each worker aims at an equal
// share (stealing one lease per sync from the busiest worker when it has
// more than its share), and a child's lease is taken only when every parent
// lease is SHARD_END or absent.
type Worker struct {
	api  DynamoAPI
	opts WorkerOptions
	rng  *rand.Rand

	mu      sync.Mutex
	held    map[string]int64     // shard -> counter we last wrote
	renewed map[string]time.Time // shard -> when we last took or renewed it
	seen    map[string]observation
}

// observation is when a lease's counter was first seen at its value.
type observation struct {
	counter int64
	owner   string
	since   time.Time
}

var _ tail.Coordinator = (*Worker)(nil)

// NewWorker returns a worker; the table must exist (see CheckTable,
// CreateTable).
func NewWorker(api DynamoAPI, o WorkerOptions) (*Worker, error) {
	if o.Table == "" || o.WorkerID == "" {
		return nil, errors.New("a lease worker needs a table and a worker id")
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 10 * time.Second
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
		held: map[string]int64{}, renewed: map[string]time.Time{}, seen: map[string]observation{}}, nil
}

// SyncInterval implements tail.Coordinator: a third of the lease duration,
// so a lease is renewed twice before anyone may call it expired.
func (w *Worker) SyncInterval() time.Duration { return w.opts.LeaseDuration / 3 }

// LeaseDuration implements tail.Coordinator.
func (w *Worker) LeaseDuration() time.Duration { return w.opts.LeaseDuration }

// Sync implements tail.Coordinator.
func (w *Worker) Sync(ctx context.Context, known []tail.ShardInfo) (*tail.Assignment, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	all, err := Scan(ctx, w.api, w.opts.Table)
	if err != nil {
		return nil, err
	}
	leases := map[string]*Lease{}
	for i := range all {
		if all[i].Stream == "" { // single-stream table: leaseKey is the shard id
			leases[all[i].ShardID] = &all[i]
		}
	}
	// Leases for shards nobody has written yet. A closed shard whose child
	// already has a lease is finished: the KCL deletes a parent's lease once
	// its children are under way, and recreating it would read it all again.
	first := len(leases) == 0
	hasLeasedChild := map[string]bool{}
	for _, s := range known {
		if leases[s.ID] != nil {
			for _, p := range s.Parents {
				hasLeasedChild[p] = true
			}
		}
	}
	for _, s := range known {
		if leases[s.ID] != nil || (s.Closed && hasLeasedChild[s.ID]) {
			continue
		}
		l, err := w.create(ctx, s, first)
		if err != nil {
			return nil, err
		}
		if l != nil {
			leases[s.ID] = l
		}
	}
	now := w.opts.Now()
	w.observe(leases, now)

	// Renew what we hold; drop what we lost.
	for id, counter := range w.held {
		l := leases[id]
		if l == nil || l.Owner != w.opts.WorkerID || l.Counter != counter {
			w.opts.Logf("lease %s: lost (owner %q, counter %d, ours %d)", id, ownerOf(l), counterOf(l), counter)
			delete(w.held, id)
			continue
		}
		if l.Finished() {
			delete(w.held, id)
			continue
		}
		n, err := w.bump(ctx, l, "renew")
		if err != nil {
			if errors.Is(err, errConflict) {
				w.opts.Logf("lease %s: lost while renewing", id)
				delete(w.held, id)
				continue
			}
			// Keep renewing the others; this one stays ours only while
			// its last renewal is recent enough (below).
			w.opts.Logf("lease %s: renewal failed: %v", id, err)
			continue
		}
		l.Counter = n
		w.held[id] = n
		w.renewed[id] = now
	}

	// Balance: an equal share of the leases that can be worked on now.
	workable := map[string]*Lease{}
	for id, l := range leases {
		if !l.Finished() && parentsFinished(l, leases) {
			workable[id] = l
		}
	}
	counts := map[string]int{w.opts.WorkerID: 0}
	var free []*Lease
	for id, l := range workable {
		switch {
		case l.Owner == w.opts.WorkerID && w.held[id] != 0:
			counts[w.opts.WorkerID]++
		case l.Owner == "" || l.Owner == w.opts.WorkerID || w.expired(id, now):
			free = append(free, l)
		default:
			counts[l.Owner]++
		}
	}
	target := (len(workable) + len(counts) - 1) / len(counts)
	sort.Slice(free, func(i, j int) bool { return free[i].ShardID < free[j].ShardID })
	w.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, l := range free {
		if counts[w.opts.WorkerID] >= target {
			break
		}
		if w.take(ctx, l) {
			counts[w.opts.WorkerID]++
		}
	}
	if counts[w.opts.WorkerID] < target {
		// Steal one lease from the busiest worker above its share.
		busiest, most := "", target
		for owner, n := range counts {
			if owner != w.opts.WorkerID && (n > most || (n == most && busiest != "" && owner < busiest)) {
				busiest, most = owner, n
			}
		}
		if busiest != "" && most > target {
			var theirs []*Lease
			for _, l := range workable {
				if l.Owner == busiest {
					theirs = append(theirs, l)
				}
			}
			sort.Slice(theirs, func(i, j int) bool { return theirs[i].ShardID < theirs[j].ShardID })
			if len(theirs) > 0 && w.take(ctx, theirs[w.rng.IntN(len(theirs))]) {
				w.opts.Logf("stole a lease from %s (it had %d, the share is %d)", busiest, most, target)
			}
		}
	}

	a := &tail.Assignment{Positions: map[string]tail.Position{}, Held: map[string]bool{}, Starts: map[string]tail.StartMode{}}
	for id, l := range leases {
		p, start := positionOf(l)
		if !p.IsZero() {
			a.Positions[id] = p
		}
		// A lease not renewed for most of its duration may be taken by
		// now: stop reading it before anyone else starts.
		if _, ok := w.held[id]; ok && !l.Finished() && now.Sub(w.renewed[id]) < w.opts.LeaseDuration-w.SyncInterval() {
			a.Held[id] = true
			if p.IsZero() {
				a.Starts[id] = start
			}
		}
	}
	return a, nil
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

// positionOf reads a lease's checkpoint.
func positionOf(l *Lease) (tail.Position, tail.StartMode) {
	switch l.Checkpoint {
	case ShardEnd:
		return tail.Position{ShardEnd: true}, 0
	case "", TrimHorizon:
		return tail.Position{}, tail.StartTrimHorizon
	case Latest:
		return tail.Position{}, tail.StartLatest
	case AtTimestamp:
		return tail.Position{}, tail.StartAtTimestamp
	}
	// A sequence number. checkpointSubSequenceNumber 0 cannot tell a plain
	// record from the first user record of an aggregate: resuming at the
	// record and skipping sub-sequence ≤ 0 is right for both.
	return tail.Position{SequenceNumber: l.Checkpoint, SubSequence: l.SubSequence, Aggregated: true}, 0
}

var errConflict = errors.New("conditional check failed")

func conflict(err error) bool {
	var cc *types.ConditionalCheckFailedException
	return errors.As(err, &cc)
}

// create writes the lease of a shard nobody has written yet.
func (w *Worker) create(ctx context.Context, s tail.ShardInfo, first bool) (*Lease, error) {
	cp := TrimHorizon
	if first {
		switch w.opts.Start {
		case tail.StartLatest:
			cp = Latest
			if s.Closed {
				cp = ShardEnd // --from-tip: a closed shard counts as read
			}
		case tail.StartAtTimestamp:
			cp = AtTimestamp
		}
	}
	l := &Lease{Key: s.ID, ShardID: s.ID, Checkpoint: cp, Parents: s.Parents}
	item := map[string]types.AttributeValue{
		attrKey:        &types.AttributeValueMemberS{Value: s.ID},
		attrCheckpoint: &types.AttributeValueMemberS{Value: cp},
		attrSubSeq:     &types.AttributeValueMemberN{Value: "0"},
		attrCounter:    &types.AttributeValueMemberN{Value: "0"},
		attrSwitches:   &types.AttributeValueMemberN{Value: "0"},
	}
	if len(s.Parents) > 0 {
		item[attrParents] = &types.AttributeValueMemberSS{Value: s.Parents}
	}
	if s.HaveRange {
		l.StartHash, l.EndHash = s.Range.Start.String(), s.Range.End.String()
		item[attrStartHash] = &types.AttributeValueMemberS{Value: l.StartHash}
		item[attrEndHash] = &types.AttributeValueMemberS{Value: l.EndHash}
	}
	_, err := w.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(w.opts.Table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(leaseKey)"),
	})
	if conflict(err) {
		return nil, nil // another worker created it; the next scan has it
	}
	if err != nil {
		return nil, fmt.Errorf("create lease %s: %w", s.ID, err)
	}
	return l, nil
}

// bump increments the counter of a lease we hold (a renewal).
func (w *Worker) bump(ctx context.Context, l *Lease, why string) (int64, error) {
	out, err := w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(w.opts.Table),
		Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: l.Key}},
		UpdateExpression:    aws.String("SET leaseCounter = leaseCounter + :one"),
		ConditionExpression: aws.String("leaseOwner = :me AND leaseCounter = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
			":c":   &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Counter, 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if conflict(err) {
		return 0, errConflict
	}
	if err != nil {
		return 0, fmt.Errorf("%s lease %s: %w", why, l.ShardID, err)
	}
	return num(out.Attributes, attrCounter)
}

// take makes us the owner of a lease, if nobody changed it since the scan.
func (w *Worker) take(ctx context.Context, l *Lease) bool {
	cond := "leaseCounter = :c AND attribute_not_exists(leaseOwner)"
	vals := map[string]types.AttributeValue{
		":one": &types.AttributeValueMemberN{Value: "1"},
		":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
		":c":   &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Counter, 10)},
	}
	if l.Owner != "" {
		cond = "leaseCounter = :c AND leaseOwner = :old"
		vals[":old"] = &types.AttributeValueMemberS{Value: l.Owner}
	}
	out, err := w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.opts.Table),
		Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: l.Key}},
		UpdateExpression:          aws.String("SET leaseOwner = :me, leaseCounter = leaseCounter + :one, ownerSwitchesSinceCheckpoint = if_not_exists(ownerSwitchesSinceCheckpoint, :zero) + :one"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: withZero(vals),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		if !conflict(err) {
			w.opts.Logf("lease %s: take failed: %v", l.ShardID, err)
		}
		return false
	}
	n, err := num(out.Attributes, attrCounter)
	if err != nil {
		return false
	}
	prev := l.Owner
	l.Owner, l.Counter = w.opts.WorkerID, n
	if cp, err := str(out.Attributes, attrCheckpoint); err == nil {
		l.Checkpoint = cp
	}
	if sub, err := num(out.Attributes, attrSubSeq); err == nil {
		l.SubSequence = sub
	}
	w.held[l.ShardID] = n
	w.renewed[l.ShardID] = w.opts.Now()
	if prev != "" {
		w.opts.Logf("lease %s: taken over from %s at %s", l.ShardID, prev, l.Checkpoint)
	} else {
		w.opts.Logf("lease %s: taken at %s", l.ShardID, l.Checkpoint)
	}
	return true
}

func withZero(v map[string]types.AttributeValue) map[string]types.AttributeValue {
	v[":zero"] = &types.AttributeValueMemberN{Value: "0"}
	return v
}

// Checkpoint implements tail.Coordinator: a conditional write on ownership.
func (w *Worker) Checkpoint(ctx context.Context, shard string, p tail.Position) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.held[shard]; !ok {
		return fmt.Errorf("checkpoint %s: %w", shard, tail.ErrLeaseLost)
	}
	cp, sub := p.SequenceNumber, p.SubSequence
	if p.ShardEnd {
		cp, sub = ShardEnd, 0
	}
	if cp == "" {
		return nil
	}
	update := "SET checkpoint = :cp, checkpointSubSequenceNumber = :sub, ownerSwitchesSinceCheckpoint = :zero"
	if p.ShardEnd {
		update += " REMOVE leaseOwner" // finished: nobody holds it any more
	}
	_, err := w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(w.opts.Table),
		Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
		UpdateExpression:    aws.String(update),
		ConditionExpression: aws.String("leaseOwner = :me"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cp":   &types.AttributeValueMemberS{Value: cp},
			":sub":  &types.AttributeValueMemberN{Value: strconv.FormatInt(sub, 10)},
			":zero": &types.AttributeValueMemberN{Value: "0"},
			":me":   &types.AttributeValueMemberS{Value: w.opts.WorkerID},
		},
	})
	if conflict(err) {
		delete(w.held, shard)
		return fmt.Errorf("checkpoint %s: %w", shard, tail.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", shard, err)
	}
	if p.ShardEnd {
		delete(w.held, shard) // nothing more to renew
	}
	return nil
}

// Release implements tail.Coordinator: every held lease loses its owner,
// so other workers take it at once instead of after a lease duration.
func (w *Worker) Release(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var firstErr error
	for shard := range w.held {
		_, err := w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           aws.String(w.opts.Table),
			Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression:    aws.String("REMOVE leaseOwner SET leaseCounter = leaseCounter + :one"),
			ConditionExpression: aws.String("leaseOwner = :me"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": &types.AttributeValueMemberN{Value: "1"},
				":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
			},
		})
		if err != nil && !conflict(err) && firstErr == nil {
			firstErr = fmt.Errorf("release lease %s: %w", shard, err)
		}
		delete(w.held, shard)
	}
	return firstErr
}
