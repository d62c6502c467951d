package tail

import (
	"context"
	"sync"
	"testing"
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

func (c *scriptedLeases) Release(context.Context) error { return nil }
func (c *scriptedLeases) SyncInterval() time.Duration   { return time.Hour }
func (c *scriptedLeases) LeaseDuration() time.Duration  { return 3 * time.Hour }

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
	tl.lease.apply(&Assignment{Positions: map[string]Position{"x": {SequenceNumber: "5"}}, Held: heldFor("x")})
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
	tl.lease.apply(&Assignment{Positions: map[string]Position{"x": {SequenceNumber: "7"}}, Held: heldFor("x")})
	if tl.positionOf("x") != (Position{SequenceNumber: "7"}) {
		t.Fatalf("position %v, want the table's", tl.positionOf("x"))
	}
}

// A reader whose lease was lost records nothing more, even with a page in
// hand, and its end is ignored.
func TestRevokedReaderRecordsNothing(t *testing.T) {
	tl := leaseTailer(&scriptedLeases{writes: map[string]Position{}})
	delivered := 0
	tl.deliver = func(b []Record) error { delivered += len(b); return nil }
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
