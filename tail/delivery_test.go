package tail

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// slowSink is a stdout that takes perRecord to write each record (a pipe
// into `less`, or into a rate-limited put). It counts what it wrote.
type slowSink struct {
	sink
	perRecord time.Duration
}

func (s *slowSink) deliver(batch []Record) error {
	time.Sleep(time.Duration(len(batch)) * s.perRecord)
	return s.sink.deliver(batch)
}

func (s *slowSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// A reader at its tip fetches a burst and writes it to a slow stdout: it is
// not idle while it holds records it has not written, so --idle-exit counts
// from the end of the writing, and the rest of the burst (written after
// the first page was fetched) is read too. Before, the idle clock ran out
// in the middle of the first page: its records were written, and the tail
// exited 0 without fetching the others.
func TestIdleExitWaitsForWhatWasFetched(t *testing.T) {
	for _, kind := range []string{"polling"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, 1)
				w.put(1, 3)
				out := &slowSink{perRecord: 50 * time.Millisecond}
				opts := fastOptions()
				opts.IdleExit = 300 * time.Millisecond
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				done := make(chan error, 1)
				var res Result
				go func() {
					var err error
					res, err = New(w.fake, NewMemoryStore(nil), opts, out.deliver).Run(ctx)
					done <- err
				}()
				for out.count() < 3 {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // at its tip, idle for a while
				w.put(1, 11)                       // the first page after the tip: 550 ms to write
				for out.count() < 4 {
					time.Sleep(time.Millisecond)
				}
				w.put(1, 40) // written while that page drains
				if err := <-done; err != nil || res.Reason != StopIdle {
					t.Fatalf("reason %v, err %v", res.Reason, err)
				}
				if n := out.count(); n != 54 {
					t.Fatalf("exited idle after writing %d of 54 records", n)
				}
				w.checkDelivered(out.records(), true)
			})
		})
	}
}

// savedStore tells, at any moment, how far the saved checkpoint of one
// shard goes: what a kill -9 then leaves on disk.
type savedStore struct {
	*MemoryStore
	shard string
	index map[string]int // sequence number -> records up to and including it
	mu    sync.Mutex
	upTo  int
	saves int
}

func (s *savedStore) Save(ctx context.Context, p map[string]Position) error {
	s.mu.Lock()
	s.upTo, s.saves = s.index[p[s.shard].SequenceNumber], s.saves+1
	s.mu.Unlock()
	return s.MemoryStore.Save(ctx, p)
}

func (s *savedStore) saved() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upTo
}

// The checkpoint follows what the writer reports written, within a page:
// behind a slow stdout, one GetRecords page of 3,000 records takes 3 s to
// write, and a kill -9 at any moment replays what was written since the
// last save, which must stay about one --checkpoint-interval of output
// (plus one write), never the whole page.
func TestCheckpointFollowsTheOutputWithinAPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, 1)
		w.put(3, 3000)
		const shard = "shardId-000000000000"
		store := &savedStore{MemoryStore: NewMemoryStore(nil), shard: shard, index: map[string]int{}}
		for i, r := range w.fake.ShardRecords("s", shard) {
			store.index[r.Seq] = i + 1
		}
		out := &slowSink{perRecord: time.Millisecond}
		worst := 0
		// A stdout writer that reports as it goes, as the record writer
		// does: every 50 records (each taking a millisecond).
		write := func(batch []Record, written func(int)) error {
			for i := 0; i < len(batch); i += 50 {
				part := batch[i:min(i+50, len(batch))]
				if err := out.deliver(part); err != nil {
					return err
				}
				// A kill -9 now replays what was written past the saved checkpoint.
				worst = max(worst, out.count()-store.saved())
				written(i + len(part))
			}
			return nil
		}
		opts := fastOptions()
		opts.CheckpointInterval = 200 * time.Millisecond
		opts.IdleExit = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		res, err := NewWriting(w.fake, store, opts, write).Run(ctx)
		if err != nil || res.Reason != StopIdle {
			t.Fatalf("reason %v, err %v", res.Reason, err)
		}
		w.checkDelivered(out.records(), true)
		// 200 ms of output at 1 ms a record, and one write of 50, with
		// room to spare: 300 records; the whole page is 3,000.
		if limit := 300; worst > limit {
			t.Fatalf("a kill -9 could replay %d records (more than %d): the checkpoint does not follow the output", worst, limit)
		}
		t.Logf("%d saves; a kill -9 replays at most %d records", store.saves, worst)
	})
}

// A subscribed reader takes its events within the page budget, as a
// polling reader takes its pages: behind a stalled stdout, the readers
// holding events they cannot write are as many as the budget allows, not
// one per shard; the others close their subscriptions until there is room,
// and nothing is lost or repeated when stdout moves again.
func TestEFOReadersKeepWithinThePageBudget(t *testing.T) {
	const shards, budget = 24, 4 << 20
	w := newWorldOf(t, shards, "efo")
	w.efoOptions.MaxEventRecords = 20
	w.put(4*shards, 40*shards)
	var (
		mu            sync.Mutex
		polled, wrote int // records taken from events, records written
		peak          int
	)
	gate := make(chan struct{})
	opts := w.with(fastOptions())
	opts.IdleExit = 500 * time.Millisecond
	opts.OnPoll = func(p PollStats) {
		mu.Lock()
		polled += p.Records
		peak = max(peak, polled-wrote)
		mu.Unlock()
	}
	out := &sink{}
	deliver := func(batch []Record) error {
		<-gate // a stalled stdout, until the gate opens
		mu.Lock()
		wrote += len(batch)
		mu.Unlock()
		return out.deliver(batch)
	}
	tl := New(w.fake, NewMemoryStore(nil), opts, deliver)
	tl.pages = newPageBudget(budget)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := tl.Run(ctx)
		done <- err
	}()
	time.Sleep(2 * time.Second) // every shard's subscription sees records meanwhile
	mu.Lock()
	held := peak
	mu.Unlock()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.checkDelivered(out.records(), true)
	// Each admitted event holds at most 20 records; the budget admits 4
	// (one more may pass while nothing is held).
	if limit := 5 * 20; held > limit {
		t.Fatalf("behind a stalled stdout the subscribed readers held %d records (more than %d): outside the page budget", held, limit)
	}
	t.Logf("held at most %d records while stalled", held)
}
