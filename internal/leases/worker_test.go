package leases

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// The worker against an in-memory table (no emulator), alone and under a
// tail reading the in-memory Kinesis fake.

func memTable(t testing.TB) (*leasestest.MemTable, string) {
	m := leasestest.NewMemTable()
	if err := CreateTable(context.Background(), m, "leases"); err != nil {
		t.Fatal(err)
	}
	return m, "leases"
}

type sink struct {
	mu   sync.Mutex
	recs []tail.Record
}

func (s *sink) deliver(b []tail.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range b {
		r.Data = slices.Clone(r.Data)
		s.recs = append(s.recs, r)
	}
	return nil
}

func (s *sink) payloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.recs {
		out = append(out, string(r.Data))
	}
	return out
}

// tailWith runs a tail of stream "s" as worker id until it is idle.
func tailWith(t *testing.T, f *fake.Fake, api DynamoAPI, table, id string, start tail.StartMode) []string {
	t.Helper()
	w, err := NewWorker(api, WorkerOptions{Table: table, WorkerID: id, LeaseDuration: 2 * time.Second, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	opts := tail.Options{StreamName: "s", Start: start, PollInterval: 20 * time.Millisecond, RelistInterval: 200 * time.Millisecond,
		CheckpointInterval: 50 * time.Millisecond, IdleExit: 400 * time.Millisecond, Leases: w}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tail.New(f, tail.NewMemoryStore(nil), opts, out.deliver).Run(ctx)
	if err != nil || res.Reason != tail.StopIdle {
		t.Fatalf("tail %s: reason %v, err %v", id, res.Reason, err)
	}
	return out.payloads()
}

func put(f *fake.Fake, key string, n int) []string {
	var out []string
	for i := range n {
		p := fmt.Sprintf("%s#%d", key, i)
		f.Put("s", key, []byte(p))
		out = append(out, p)
	}
	return out
}

func checkpointOf(m *leasestest.MemTable, table, shard string) string {
	if v, ok := m.Item(table, shard)["checkpoint"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// A lease left short of SHARD_END by workers that were down longer than
// retention, whose shard is gone from the listing while its children are
// listed, counts as trimmed: its children are read, and it gets SHARD_END.
func TestTrimmedParentLeaseDoesNotBlockItsChildren(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	root := "shardId-000000000000"
	lower, upper := f.SplitHalf("s", root)
	want := put(f, "k", 5)
	f.Trim("s", root)
	m, table := memTable(t)
	m.Put(table, leasestest.KCLRow(root, "49590000000000000000000000000000000000000000000000000001", "", 7))
	m.Put(table, leasestest.KCLRow(lower, TrimHorizon, "", 0, root))
	m.Put(table, leasestest.KCLRow(upper, TrimHorizon, "", 0, root))
	got := tailWith(t, f, m, table, "a", tail.StartTrimHorizon)
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v: the children waited on a trimmed parent's lease", got, want)
	}
	if cp := checkpointOf(m, table, root); cp != ShardEnd {
		t.Fatalf("the trimmed parent's lease is at %q, want SHARD_END", cp)
	}
}

// A --from-tip worker records where it started (less a margin for clock
// skew), so the next worker (not started with --from-tip) reads what was
// written after it stopped instead of starting at its own tip.
func TestFromTipSuccessorMissesNothing(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	f.Now = func() time.Time { return time.Now().Add(-time.Minute) }
	put(f, "old", 3) // well before the first worker: skipped by --from-tip
	f.Now = nil
	m, table := memTable(t)
	if got := tailWith(t, f, m, table, "a", tail.StartLatest); len(got) != 0 {
		t.Fatalf("--from-tip delivered %v", got)
	}
	if cp := checkpointOf(m, table, "shardId-000000000000"); cp != AtTimestamp {
		t.Fatalf("after a --from-tip worker the lease is at %q, want AT_TIMESTAMP (with its time)", cp)
	}
	want := put(f, "new", 20)
	if got := tailWith(t, f, m, table, "b", tail.StartTrimHorizon); !slices.Equal(got, want) {
		t.Fatalf("the successor delivered %v, want %v", got, want)
	}
}

// A --from-tip worker that created the leases and stopped before any of
// its readers recorded where it started (the table failing, a crash)
// leaves the time the leases were made in them, so a successor reads
// from there, not from its own tip, and misses nothing written since.
func TestFromTipLeasesCarryTheirStart(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	shard := "shardId-000000000000"
	f.Now = func() time.Time { return time.Now().Add(-time.Minute) }
	put(f, "old", 3) // well before the first worker: skipped
	f.Now = nil
	m, table := memTable(t)
	a, err := NewWorker(m, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 2 * time.Second, Start: tail.StartLatest})
	if err != nil {
		t.Fatal(err)
	}
	asg, err := a.Sync(context.Background(), []tail.ShardInfo{{ID: shard, Listed: true}})
	if err != nil {
		t.Fatal(err)
	}
	if asg.Starts[shard] != tail.StartLatest {
		t.Fatalf("the worker that made the lease starts it %v, want at the tip", asg.Starts[shard])
	}
	// a stops here, its start not recorded, and lets its leases go (as
	// tail does when it ends on an error). Then records arrive.
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := put(f, "new", 20)
	if got := tailWith(t, f, m, table, "b", tail.StartTrimHorizon); !slices.Equal(got, want) {
		t.Fatalf("the successor delivered %v, want %v", got, want)
	}
}

// Checkpoint waits for no sync: a sync stuck on a hung table holds no lock
// a checkpoint needs, and every call of the sync has its own deadline, so
// the sync itself returns.
func TestCheckpointDoesNotWaitForAHungSync(t *testing.T) {
	m, table := memTable(t)
	w, _ := NewWorker(m, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 2 * time.Second})
	known := []tail.ShardInfo{{ID: "shardId-000000000000", Listed: true}}
	if a, err := w.Sync(context.Background(), known); err != nil || len(a.Held) != 1 {
		t.Fatalf("first sync: %v, %v", a, err)
	}
	m.Hook = func(ctx context.Context, op string) error {
		if op == "Scan" {
			<-ctx.Done() // the table never answers
			return ctx.Err()
		}
		return nil
	}
	synced := make(chan error, 1)
	go func() {
		_, err := w.Sync(context.Background(), known) // no deadline of its own
		synced <- err
	}()
	time.Sleep(50 * time.Millisecond) // the sync is in its scan
	checked := make(chan error, 1)
	go func() {
		checked <- w.Checkpoint(context.Background(), "shardId-000000000000", tail.Position{SequenceNumber: "5"})
	}()
	var order []string
	for range 2 {
		select {
		case err := <-checked:
			if err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			order = append(order, "checkpoint")
		case err := <-synced:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("hung sync: %v, want its call's deadline", err)
			}
			order = append(order, "sync")
		case <-time.After(20 * time.Second):
			t.Fatalf("after %v: the hung sync holds everything", order)
		}
	}
	if !slices.Equal(order, []string{"checkpoint", "sync"}) {
		t.Fatalf("returned in the order %v: the checkpoint waited for the sync", order)
	}
}

// Renewals run together, and the time a lease is held until counts from
// when its renewal was sent.
func TestRenewalsRunTogether(t *testing.T) {
	m, table := memTable(t)
	m.Latency = 5 * time.Millisecond
	const n = 200
	known := make([]tail.ShardInfo, n)
	for i := range known {
		known[i] = tail.ShardInfo{ID: fmt.Sprintf("shardId-%012d", i), Listed: true}
	}
	w, _ := NewWorker(m, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 10 * time.Second})
	if a, err := w.Sync(context.Background(), known); err != nil || len(a.Held) != n {
		t.Fatalf("first sync: %d held, %v", len(a.Held), err)
	}
	m.ResetMaxInFlight()
	before := time.Now()
	a, err := w.Sync(context.Background(), known)
	after := time.Now()
	if err != nil || len(a.Held) != n {
		t.Fatalf("second sync: %d held, %v", len(a.Held), err)
	}
	if got := m.MaxInFlight(); got < renewConcurrency {
		t.Fatalf("at most %d calls in flight, want %d renewals at once", got, renewConcurrency)
	}
	for id, until := range a.Held {
		if until.Before(before.Add(10*time.Second)) || until.After(after.Add(10*time.Second)) {
			t.Fatalf("%s held until %s, outside this sync's renewals (%s to %s, plus the lease duration)", id, until, before, after)
		}
	}
}

// BenchmarkSyncHeldLeases is one steady-state sync of a worker holding
// 2,000 leases, at 5 ms a call (an in-memory table): renewals, the scan
// and the balancing. It must stay well under a third of the lease
// duration (3.3 s of the default 10 s).
func BenchmarkSyncHeldLeases(b *testing.B) {
	m, table := memTable(b)
	const n = 2000
	known := make([]tail.ShardInfo, n)
	for i := range known {
		known[i] = tail.ShardInfo{ID: fmt.Sprintf("shardId-%012d", i), Listed: true}
	}
	w, _ := NewWorker(m, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 10 * time.Second})
	if a, err := w.Sync(context.Background(), known); err != nil || len(a.Held) != n {
		b.Fatalf("first sync: %v", err)
	}
	m.Latency = 5 * time.Millisecond
	for b.Loop() {
		if a, err := w.Sync(context.Background(), known); err != nil || len(a.Held) != n {
			b.Fatalf("sync: %d held, %v", len(a.Held), err)
		}
	}
}

// A checkpoint inside a CloudWatch Logs batch keeps the event's index in
// checkpointLogEventIndex (an attribute of ours, beside the KCL's
// checkpoint and sub-sequence number), written in the same UpdateItem and
// removed by every checkpoint that is not inside a batch. On the
// in-memory table and on dynalite (which checks the expressions as
// DynamoDB does).
func TestCheckpointInsideBatch(t *testing.T) {
	backends := map[string]func(t *testing.T) (DynamoAPI, string){
		"memtable": func(t *testing.T) (DynamoAPI, string) { m, table := memTable(t); return m, table },
		"dynalite": func(t *testing.T) (DynamoAPI, string) { c := requireDynamo(t); return c, newTable(t, c) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			api, table := open(t)
			ctx := context.Background()
			w, err := NewWorker(api, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			known := shardsOf(testGraph(t))
			if _, err := w.Sync(ctx, known); err != nil {
				t.Fatal(err)
			}
			const shard = "shardId-000000000000"
			for _, c := range []struct {
				p, want tail.Position
				attr    string // checkpointLogEventIndex as stored; "" = absent
			}{
				{tail.Position{SequenceNumber: "5", InBatch: true, LogEventIndex: 3}, tail.Position{SequenceNumber: "5", Aggregated: true, InBatch: true, LogEventIndex: 3}, "3"},
				{tail.Position{SequenceNumber: "6"}, tail.Position{SequenceNumber: "6", Aggregated: true}, ""},
				{tail.Position{SequenceNumber: "7", Aggregated: true, SubSequence: 2, InBatch: true, LogEventIndex: 0}, tail.Position{SequenceNumber: "7", Aggregated: true, SubSequence: 2, InBatch: true}, "0"},
				{tail.Position{SequenceNumber: "7", Aggregated: true, SubSequence: 2}, tail.Position{SequenceNumber: "7", Aggregated: true, SubSequence: 2}, ""},
				{tail.Position{SequenceNumber: "8", InBatch: true, LogEventIndex: 1}, tail.Position{SequenceNumber: "8", Aggregated: true, InBatch: true, LogEventIndex: 1}, "1"},
				{tail.Position{ShardEnd: true}, tail.Position{ShardEnd: true}, ""},
			} {
				if err := w.Checkpoint(ctx, shard, c.p); err != nil {
					t.Fatalf("checkpoint %v: %v", c.p, err)
				}
				ls, err := Scan(ctx, api, table)
				if err != nil {
					t.Fatal(err)
				}
				var got tail.Position
				for _, l := range ls {
					if l.ShardID == shard {
						got, _ = positionOf(&l)
					}
				}
				if got != c.want {
					t.Fatalf("checkpoint %v reads back as %v, want %v", c.p, got, c.want)
				}
				if mt, ok := api.(*leasestest.MemTable); ok {
					v, has := mt.Item(table, shard)["checkpointLogEventIndex"].(*types.AttributeValueMemberN)
					if has != (c.attr != "") || (has && v.Value != c.attr) {
						t.Fatalf("checkpoint %v: checkpointLogEventIndex %v, want %q", c.p, v, c.attr)
					}
				}
			}
		})
	}
}

// A tail sharing a stream through the table stops inside a CloudWatch Logs
// batch (--max-records); the worker that takes the lease next resumes at
// the next log event.
func TestLeaseResumeInsideBatch(t *testing.T) {
	f := fake.New()
	f.AddStream("s", 1)
	batch := func(msgs ...string) []byte {
		var b strings.Builder
		zw := gzip.NewWriter(&b)
		fmt.Fprintf(zw, `{"messageType":"DATA_MESSAGE","owner":"1","logGroup":"g","logStream":"l","subscriptionFilters":["f"],"logEvents":[`)
		for i, m := range msgs {
			if i > 0 {
				zw.Write([]byte(","))
			}
			fmt.Fprintf(zw, `{"id":"%d","timestamp":%d,"message":%q}`, i, 1796032800000+i, m)
		}
		zw.Write([]byte("]}"))
		zw.Close()
		return []byte(b.String())
	}
	f.Put("s", "k", batch("e0", "e1", "e2", "e3", "e4"))
	f.Put("s", "k", []byte("after"))
	m, table := memTable(t)
	run := func(id string, max int64) []string {
		w, err := NewWorker(m, WorkerOptions{Table: table, WorkerID: id, LeaseDuration: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		opts := tail.Options{StreamName: "s", PollInterval: 20 * time.Millisecond, RelistInterval: 200 * time.Millisecond,
			CheckpointInterval: 50 * time.Millisecond, IdleExit: 400 * time.Millisecond, Leases: w, CWLogs: true, MaxRecords: max}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = tail.New(f, tail.NewMemoryStore(nil), opts, func(b []tail.Record) error {
			for _, r := range b {
				if r.Log != nil {
					got = append(got, r.Log.Message)
				} else {
					got = append(got, string(r.Data))
				}
			}
			return nil
		}).Run(ctx)
		if err != nil {
			t.Fatalf("tail %s: %v", id, err)
		}
		return got
	}
	if got := run("a", 3); !slices.Equal(got, []string{"e0", "e1", "e2"}) {
		t.Fatalf("worker a printed %v", got)
	}
	if v, ok := m.Item(table, "shardId-000000000000")["checkpointLogEventIndex"].(*types.AttributeValueMemberN); !ok || v.Value != "2" {
		t.Fatalf("checkpointLogEventIndex after a stop at event 3: %v", m.Item(table, "shardId-000000000000"))
	}
	if got := run("b", 0); !slices.Equal(got, []string{"e3", "e4", "after"}) {
		t.Fatalf("worker b printed %v, want the rest of the batch and the next record", got)
	}
}
