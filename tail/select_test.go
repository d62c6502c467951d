package tail

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// keepData is a Select that keeps the records whose data keep approves,
// counting how often it ran.
func keepData(keep func(data string) bool) func(context.Context, []Record) ([]Record, int) {
	return func(_ context.Context, batch []Record) ([]Record, int) {
		var out []Record
		for _, r := range batch {
			if keep(string(r.Data)) {
				out = append(out, r)
			}
		}
		return out, len(batch)
	}
}

// putNumbered writes n records "r0".."r<n-1>" to the one-shard stream and
// returns their sequence numbers.
func putNumbered(w *world, n int) []string {
	var seqs []string
	for i := range n {
		_, seq := w.fake.Put("s", fmt.Sprintf("k%d", i%3), []byte(fmt.Sprintf("r%d", i)))
		seqs = append(seqs, seq)
	}
	return seqs
}

func datas(recs []Record) []string {
	var out []string
	for _, r := range recs {
		if r.Log != nil {
			out = append(out, fmt.Sprintf("%s#%d", recordLabel(&r), r.Log.Index))
			continue
		}
		out = append(out, string(r.Data))
	}
	return out
}

func evenRecord(d string) bool {
	var n int
	fmt.Sscanf(d, "r%d", &n)
	return n%2 == 0
}

// A record Select drops still counts as read: the checkpoint moves past
// it, so a run without the filter on the same store starts after it (the
// --key filter, by contrast, keeps the checkpoint at its last kept record).
func TestSelectDroppedRecordsCountAsRead(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		seqs := putNumbered(w, 10)
		store := NewMemoryStore(nil)
		opts := fastOptions()
		opts.Select = keepData(evenRecord)
		out := &sink{}
		res := w.run(store, opts, out)
		if got, want := datas(out.records()), []string{"r0", "r2", "r4", "r6", "r8"}; !slices.Equal(got, want) {
			t.Fatalf("printed %v, want %v", got, want)
		}
		if res.Records != 5 || res.Dropped != 5 {
			t.Fatalf("result %+v, want 5 records printed and 5 dropped", res)
		}
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: seqs[9]}) {
			t.Fatalf("checkpoint %v, want the last record read, dropped or not: %s", got, seqs[9])
		}
		w.fake.Put("s", "k", []byte("r10"))
		out = &sink{}
		w.run(store, fastOptions(), out)
		if got := datas(out.records()); !slices.Equal(got, []string{"r10"}) {
			t.Fatalf("the next run printed %v, want only the new record r10", got)
		}
	})
}

// --max-records counts what Select keeps, not what it reads. A run it
// stops checkpoints at the last record printed: the dropped records after
// it are read again (and dropped again) by the next run, and nothing
// unprinted is skipped.
func TestSelectMaxRecordsCountsPrinted(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		seqs := putNumbered(w, 20)
		store := NewMemoryStore(nil)
		fourth := func(d string) bool {
			var n int
			fmt.Sscanf(d, "r%d", &n)
			return n%4 == 0
		}
		var got []string
		var saved []Position
		for run := range 3 {
			opts := fastOptions()
			opts.Select = keepData(fourth)
			opts.MaxRecords = 2
			out := &sink{}
			res := w.run(store, opts, out)
			got = append(got, datas(out.records())...)
			saved = append(saved, store.Saved()["shardId-000000000000"])
			if run < 2 && (res.Reason != StopMaxRecords || res.Records != 2) {
				t.Fatalf("run %d: %+v, want 2 printed and a stop at --max-records", run, res)
			}
		}
		if want := []string{"r0", "r4", "r8", "r12", "r16"}; !slices.Equal(got, want) {
			t.Fatalf("printed %v over three runs, want %v", got, want)
		}
		want := []Position{{SequenceNumber: seqs[4]}, {SequenceNumber: seqs[12]}, {SequenceNumber: seqs[19]}}
		if !slices.Equal(saved, want) {
			t.Fatalf("checkpoints %v, want %v", saved, want)
		}
	})
}

// A Select interrupted mid-batch (the tail stopping while it evaluates)
// decides a prefix: what it decided is delivered and checkpointed, the
// rest is neither, and the next run starts at the first undecided record.
func TestSelectInterruptedCheckpointsWhatItDecided(t *testing.T) {
	w := newWorld(t, 1)
	seqs := putNumbered(w, 6)
	store := NewMemoryStore(nil)
	opts := fastOptions()
	opts.IdleExit = 0
	entered := make(chan struct{})
	var once sync.Once
	opts.Select = func(ctx context.Context, batch []Record) ([]Record, int) {
		once.Do(func() { close(entered) })
		<-ctx.Done() // a slow expression, until the tail stops
		return []Record{batch[0]}, 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &sink{}
	stopped := make(chan Result)
	go func() {
		res, err := New(w.fake, store, opts, out.deliver).Run(ctx)
		if err != nil {
			t.Error(err)
		}
		stopped <- res
	}()
	<-entered
	cancel() // Ctrl-C
	res := <-stopped
	if got := datas(out.records()); res.Reason != StopInterrupted || !slices.Equal(got, []string{"r0"}) || res.Dropped != 1 {
		t.Fatalf("printed %v, result %+v; want r0, one dropped, interrupted", got, res)
	}
	if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: seqs[1]}) {
		t.Fatalf("checkpoint %v, want the last decided record %s", got, seqs[1])
	}
	out = &sink{}
	runTail(t, w.fake, store, fastOptions(), out)
	if got, want := datas(out.records()), []string{"r2", "r3", "r4", "r5"}; !slices.Equal(got, want) {
		t.Fatalf("the next run printed %v, want %v", got, want)
	}
}

// Select sees the user records of a KPL aggregate: the checkpoint of a
// dropped user record is its sub-sequence, and --key applies before
// Select (so the checkpoint stays at the key's last record read).
func TestSelectOnAggregatesAndKey(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		users := []UserRecord{{PartitionKey: "a", Data: []byte("r0")}, {PartitionKey: "b", Data: []byte("r1")}, {PartitionKey: "a", Data: []byte("r2")}, {PartitionKey: "a", Data: []byte("r3")}}
		_, seq := w.fake.Put("s", "agg", aggregate([]string{"a", "b"}, nil, users))
		w.fake.Put("s", "b", []byte("r4"))
		store := NewMemoryStore(nil)
		opts := fastOptions()
		opts.Select = keepData(evenRecord)
		out := &sink{}
		w.run(store, opts, out)
		if got := datas(out.records()); !slices.Equal(got, []string{"r0", "r2", "r4"}) {
			t.Fatalf("printed %v", got)
		}

		store = NewMemoryStore(nil)
		opts.KeyName = "a"
		out = &sink{}
		res := w.run(store, opts, out)
		if got := datas(out.records()); !slices.Equal(got, []string{"r0", "r2"}) {
			t.Fatalf("with --key a: printed %v", got)
		}
		// r3 (key a, dropped) is the last of key a read; r4 (key b) is not
		// counted.
		if got := store.Saved()["shardId-000000000000"]; got != (Position{SequenceNumber: seq, SubSequence: 3, Aggregated: true}) || res.Dropped != 1 {
			t.Fatalf("with --key a: checkpoint %v, %d dropped; want %s/3 and 1", got, res.Dropped, seq)
		}
	})
}

// splitLines is what a --jq Out holds.
func outLines(recs []Record) []string {
	var got []string
	for _, r := range recs {
		got = append(got, strings.TrimSuffix(string(r.Out), "\n"))
	}
	return got
}

// Out set by Select reaches the DeliverFunc with its record.
func TestSelectOutReachesDelivery(t *testing.T) {
	w := newWorld(t, 1)
	putNumbered(w, 3)
	opts := fastOptions()
	opts.Select = func(_ context.Context, batch []Record) ([]Record, int) {
		out := make([]Record, len(batch))
		for i, r := range batch {
			r.Out = []byte(strings.ToUpper(string(r.Data)) + "\n")
			out[i] = r
		}
		return out, len(batch)
	}
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	if got := outLines(out.records()); !slices.Equal(got, []string{"R0", "R1", "R2"}) {
		t.Fatalf("delivered %v", got)
	}
}
