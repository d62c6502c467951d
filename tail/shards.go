package tail

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// The shard bookkeeping: what the listings say, which shard may be read,
// and what each reader delivered. Everything here but deliverBatch and
// markEnd (called by readers) runs on the scheduler's goroutine.

type shardStatus int

const (
	statusPending  shardStatus = iota // waiting for its parents (or its lease)
	statusRunning                     // a reader is reading it
	statusDone                        // read to its end (or counted as read)
	statusExcluded                    // not selected by --key / --shard
)

// shardState is the scheduler's view of one shard.
type shardState struct {
	id        string
	parents   []string
	rng       lineage.HashRange
	haveRange bool
	closed    bool
	listed    bool // seen in a listing (so an absent parent is trimmed)
	inListing bool // in the latest listing
	initial   bool // in the first listing
	status    shardStatus
	atTip     bool
	failing   bool // its reader's last call failed
	ended     bool // our reader reached its end
	children  bool // some known shard names it as a parent
	// The reader's cancel and generation: a reader that is stopped (its
	// lease lost or expired) may still report; a later one is another gen.
	cancel context.CancelFunc
	gen    int
	rd     *reader
}

// mergeListing folds a ListShards answer into the shard states.
func (t *Tailer) mergeListing(listed []types.Shard, initial bool) error {
	g, err := lineage.Build(listed)
	if err != nil {
		return fmt.Errorf("the shard listing of %s is not a valid lineage: %w", t.streamLabel(), err)
	}
	for _, s := range t.shards {
		s.inListing = false
	}
	for _, sh := range g.Shards() {
		if sh.State == lineage.StateTrimmed {
			continue
		}
		s := t.shards[sh.ID]
		if s == nil {
			s = &shardState{id: sh.ID, initial: initial}
			t.shards[sh.ID] = s
			if t.lease != nil {
				t.lease.changed() // its lease is made at the next sync
			}
		}
		s.parents = sh.Parents
		s.rng, s.haveRange = sh.Range, true
		s.listed, s.inListing = true, true
		if sh.State == lineage.StateClosed && !s.closed {
			s.closed = true
			if s.rd != nil {
				// A shard closed since its reader started: trimmed before
				// the reader reaches its end, it ends there.
				s.rd.closed.Store(true)
			}
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
	if t.lease == nil {
		t.prune()
	}
	return nil
}

// prune drops the positions of shards retention trimmed, once no listed
// shard names them as a parent, so a stream resharded often does not
// rewrite an ever larger checkpoint file. A shard known only from a
// parent's ChildShards (newer than the listing) or still being read is
// kept.
func (t *Tailer) prune() {
	parentOfListed := map[string]bool{}
	for _, s := range t.shards {
		if s.inListing {
			for _, p := range s.parents {
				parentOfListed[p] = true
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.positions {
		s := t.shards[id]
		switch {
		case parentOfListed[id]:
		case s != nil && (s.inListing || !s.listed || s.status == statusRunning):
		default:
			delete(t.positions, id)
			t.dirty = true
		}
	}
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
		if t.lease != nil {
			t.lease.changed()
		}
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
			if t.lease != nil && !t.lease.holds(id) {
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
			if t.initialPass && t.opts.Start == StartLatest && s.closed && pos.IsZero() && t.lease == nil {
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

// leaseStart is where a leased shard nobody has read yet starts. A KCL
// lease says AT_TIMESTAMP without the time (its schema has no field for
// it; ours carry it, see Position.From): a worker started without
// --from-timestamp, taking over such a lease, reads from the oldest record
// rather than from the year 1.
func leaseStart(start StartMode, ts time.Time) startPoint {
	switch {
	case start == StartLatest:
		return startPoint{kind: types.ShardIteratorTypeLatest}
	case start == StartAtTimestamp && !ts.IsZero():
		return startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: ts}
	}
	return startPoint{kind: types.ShardIteratorTypeTrimHorizon}
}

// startPointOf is where a reader of s starts, given its position, and
// what it skips there.
func (t *Tailer) startPointOf(s *shardState, pos Position) (startPoint, resumeSkip) {
	switch {
	case pos.SequenceNumber != "" && (pos.Aggregated || pos.InBatch):
		// Re-read the record and skip what was delivered of it.
		return startPoint{kind: types.ShardIteratorTypeAtSequenceNumber, seq: pos.SequenceNumber},
			resumeSkip{seq: pos.SequenceNumber, sub: pos.SubSequence, inBatch: pos.InBatch, event: pos.LogEventIndex}
	case pos.SequenceNumber != "":
		return startPoint{kind: types.ShardIteratorTypeAfterSequenceNumber, seq: pos.SequenceNumber}, resumeSkip{}
	case !pos.From.IsZero():
		return startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: pos.From}, resumeSkip{}
	}
	if t.lease != nil {
		if start, ok := t.lease.starts[s.id]; ok {
			return leaseStart(start, t.opts.Timestamp), resumeSkip{}
		}
	}
	switch {
	case s.initial && t.initialPass && t.opts.Start == StartLatest:
		return startPoint{kind: types.ShardIteratorTypeLatest}, resumeSkip{}
	case s.initial && t.opts.Start == StartAtTimestamp:
		return startPoint{kind: types.ShardIteratorTypeAtTimestamp, ts: t.opts.Timestamp}, resumeSkip{}
	}
	return startPoint{kind: types.ShardIteratorTypeTrimHorizon}, resumeSkip{}
}

func (t *Tailer) startReader(s *shardState, pos Position) {
	s.status, s.atTip, s.failing = statusRunning, false, false
	t.started++
	t.touch()
	r := &reader{t: t, id: s.id, rng: s.rng, haveRange: s.haveRange}
	r.closed.Store(s.closed)
	r.start, r.skip = t.startPointOf(s, pos)
	if t.lease != nil {
		r.until.Store(t.lease.pauseAt(s.id).UnixNano())
		// A shard first read from its tip: its start goes to the table
		// before anything is read, so a successor does not start at its
		// own tip and skip what arrived in between.
		r.recordStart = r.start.kind == types.ShardIteratorTypeLatest
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
		err := r.read(ctx)
		t.send(exitEvent{id: s.id, gen: gen, err: err})
	}()
}

// stopReader stops a running shard's reader; the shard waits to be
// started again (from what was delivered) once it is held.
func (t *Tailer) stopReader(s *shardState) {
	if s.rd != nil {
		s.rd.revoked.Store(true) // records nothing more, even mid-page
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.gen++ // its exit is not an error of ours
	s.status, s.atTip, s.failing, s.rd = statusPending, false, false, nil
}

// deliverBatch writes a batch out and records its position. Deliveries are
// serialised; after MaxRecords nothing more is delivered, nor after the
// reader's lease may have expired. It returns false when the reader is to
// stop.
//
// The position follows what the writer reports written (WriteFunc), record
// by record, a KPL user record and a log event included: behind a slow
// stdout it trails the output by one write, never by a whole page.
func (t *Tailer) deliverBatch(r *reader, batch []Record) (bool, error) {
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
	out, decided := batch, len(batch)
	if t.opts.Select != nil && len(batch) > 0 {
		// Before the lock: the shards' readers evaluate in parallel, and
		// only the count and the writing are serialised.
		out, decided = t.opts.Select(t.readerCtx, batch)
	}
	t.deliverMu.Lock()
	defer t.deliverMu.Unlock()
	t.mu.Lock()
	full, delivered := t.full, t.delivered
	t.mu.Unlock()
	if full || r.revoked.Load() {
		return false, nil
	}
	if r.expired() {
		return false, errLeaseExpired
	}
	if t.opts.MaxRecords > 0 && delivered+int64(len(out)) >= t.opts.MaxRecords {
		out = out[:t.opts.MaxRecords-delivered]
		full = true
	}
	// read: the items of batch counted as read so far; wrote: the items of
	// out written. The records Select dropped count as read up to the
	// last one written, and after it once the whole batch is written; when
	// MaxRecords cut the batch, nothing after the last one written counts,
	// so that nothing unprinted is skipped by the next run.
	read, wrote := 0, 0
	written := func(n int) {
		if n <= wrote || n > len(out) || r.revoked.Load() {
			return // a lease lost mid-batch: nothing more is recorded
		}
		upTo := indexFrom(batch[:decided], read, &out[n-1]) + 1
		if n == len(out) && !full {
			upTo = decided
		}
		t.recordRead(r, batch, read, upTo, n-wrote)
		read, wrote = upTo, n
	}
	if len(out) > 0 {
		if err := t.deliver(out, written); err != nil {
			return false, err
		}
		written(len(out))
	}
	if !full && read < decided && !r.revoked.Load() {
		t.recordRead(r, batch, read, decided, 0) // all dropped by Select
	}
	if full {
		t.mu.Lock()
		t.full = true
		t.mu.Unlock()
		go t.send(fullEvent{})
		return false, nil
	}
	// Undecided records: the tail is stopping (Select's context ended).
	return decided == len(batch), nil
}

// recordRead moves the reader's position past batch[from:to], of which
// written were written out (the rest Select dropped).
func (t *Tailer) recordRead(r *reader, batch []Record, from, to, written int) {
	if to <= from {
		return
	}
	pos := batch[to-1].position()
	// A copy: a page's strings share blocks, which the map would keep.
	pos.SequenceNumber = strings.Clone(pos.SequenceNumber)
	t.mu.Lock()
	t.delivered += int64(written)
	t.dropped += int64(to - from - written)
	t.positions[r.id] = pos
	t.dirty = true
	t.lastActivity = t.now()
	t.mu.Unlock()
}

// indexFrom finds the item rec is (the same record, user record and log
// event) in batch, from index from on: what Select returns is a
// subsequence of the batch, in order, so successive searches together go
// over the batch once.
func indexFrom(batch []Record, from int, rec *Record) int {
	for i := from; i < len(batch); i++ {
		b := &batch[i]
		if b.SequenceNumber == rec.SequenceNumber && b.SubSequence == rec.SubSequence && (b.Log == nil) == (rec.Log == nil) &&
			(b.Log == nil || b.Log.Index == rec.Log.Index) {
			return i
		}
	}
	return from - 1 // not reached (out holds items of batch): nothing more counts as read
}

// markEnd records SHARD_END for a shard whose every record was delivered.
// A reader whose lease may have expired still records it: nothing more is
// delivered, and the table takes it only while the lease is ours.
func (t *Tailer) markEnd(r *reader) bool {
	t.deliverMu.Lock()
	defer t.deliverMu.Unlock()
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

// known lists the shards for the lease table.
func (t *Tailer) known() []ShardInfo {
	out := make([]ShardInfo, 0, len(t.shards))
	for _, id := range slices.Sorted(maps.Keys(t.shards)) {
		s := t.shards[id]
		out = append(out, ShardInfo{ID: id, Parents: s.parents, Closed: s.closed || s.ended, Range: s.rng, HaveRange: s.haveRange, Listed: s.inListing})
	}
	return out
}
