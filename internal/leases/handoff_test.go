package leases

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

func fourShards() []tail.ShardInfo {
	var out []tail.ShardInfo
	for i := range 4 {
		out = append(out, tail.ShardInfo{ID: fmt.Sprintf("shardId-%012d", i), Listed: true})
	}
	return out
}

// A worker that joins asks for a live worker's lease instead of taking it:
// the owner checkpoints what it wrote since its last checkpoint and hands
// it over, and the newcomer starts from there. Before, it took the lease
// at the table's last checkpoint, and everything the owner had written
// since was printed twice.
func TestJoiningWorkerIsHandedTheLease(t *testing.T) {
	m, table := memTable(t)
	clk := &clock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	mk := func(id string) *Worker {
		w, err := NewWorker(m, WorkerOptions{Table: table, WorkerID: id, LeaseDuration: 10 * time.Second, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ctx := context.Background()
	known := fourShards()
	a, b := mk("a"), mk("b")
	as, err := a.Sync(ctx, known)
	if err != nil || len(as.Held) != 4 {
		t.Fatalf("a holds %v: %v", held(as), err)
	}
	// a has checkpointed each shard at 100 and written up to 150 since.
	for _, s := range known {
		if err := a.Checkpoint(ctx, s.ID, tail.Position{SequenceNumber: "100"}); err != nil {
			t.Fatal(err)
		}
	}

	// b joins: nothing is free; it asks a for one lease.
	bs, err := b.Sync(ctx, known)
	if err != nil || len(bs.Held) != 0 {
		t.Fatalf("b holds %v before a handed anything over: %v", held(bs), err)
	}
	var asked string
	for _, l := range mustScan(t, m, table) {
		if l.HandingOff() {
			if asked != "" || l.CheckpointOwner != "a" || l.Owner != "b" || l.HandOffBy != clk.Now().Add(20*time.Second).UnixMilli() {
				t.Fatalf("lease %+v", l)
			}
			asked = l.ShardID
		}
	}
	if asked == "" {
		t.Fatal("b asked for no lease")
	}
	// Until a hands it over, b does not read it, and nobody may take it.
	clk.Add(3 * time.Second)
	as, _ = a.Sync(ctx, known)
	if _, still := as.Held[asked]; still || !as.HandOff[asked] || len(as.Held) != 3 || as.Free[asked] {
		t.Fatalf("a: held %v, hand-off %v, free %v", held(as), as.HandOff, as.Free)
	}
	// b waits for it (its --idle-exit too).
	if bs, _ = b.Sync(ctx, known); len(bs.Held) != 0 || !bs.Free[asked] {
		t.Fatalf("b holds %v (free %v) while a hands it over", held(bs), bs.Free)
	}
	// a's renewals go on meanwhile (the lease is not expired for anyone).
	clk.Add(8 * time.Second)
	a.Sync(ctx, known)
	// a stopped its reader at 150 and hands the lease over there.
	if err := a.HandOff(ctx, asked, tail.Position{SequenceNumber: "150"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Checkpoint(ctx, asked, tail.Position{SequenceNumber: "160"}); err == nil {
		t.Fatal("a checkpointed a lease it handed over")
	}
	bs, err = b.Sync(ctx, known)
	if err != nil || !slices.Equal(held(bs), []string{lineageShort(asked)}) {
		t.Fatalf("b holds %v after the hand-off: %v", held(bs), err)
	}
	if p := bs.Positions[asked]; p.SequenceNumber != "150" {
		t.Fatalf("b starts %s at %+v, want just after 150 (what a wrote)", asked, p)
	}
	// (b, still under its share, may ask for another one.)
	if as, _ = a.Sync(ctx, known); len(as.Held)+len(as.HandOff) != 3 || as.HandOff[asked] {
		t.Fatalf("a after: held %v, hand-off %v", held(as), as.HandOff)
	}
	if _, ok := as.Held[asked]; ok {
		t.Fatalf("a still holds %s", asked)
	}
}

// An owner that never answers (an earlier build, or one that died) does
// not keep the lease from the worker that asked: it takes it once its
// hand-off time has passed, or the owner stopped renewing.
func TestHandOffThatIsNotAnsweredIsTaken(t *testing.T) {
	m, table := memTable(t)
	clk := &clock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	mk := func(id string) *Worker {
		w, _ := NewWorker(m, WorkerOptions{Table: table, WorkerID: id, LeaseDuration: 10 * time.Second, Now: clk.Now})
		return w
	}
	ctx := context.Background()
	known := fourShards()
	a, b := mk("a"), mk("b")
	a.Sync(ctx, known)
	b.Sync(ctx, known) // asks for one
	// a keeps renewing but never hands over; b waits out the hand-off time.
	for range 8 {
		clk.Add(3 * time.Second)
		a.renewAll(ctx)
		b.Sync(ctx, known)
	}
	bs, _ := b.Sync(ctx, known)
	if len(bs.Held) != 2 {
		t.Fatalf("b holds %v after the hand-off time, want its share of 2", held(bs))
	}
	for _, l := range mustScan(t, m, table) {
		if l.HandingOff() {
			t.Fatalf("lease %s still being handed over: %+v", l.ShardID, l)
		}
	}
}

func mustScan(t *testing.T, api DynamoAPI, table string) []Lease {
	t.Helper()
	ls, err := Scan(context.Background(), api, table)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func lineageShort(id string) string { return id[len(id)-1:] }
