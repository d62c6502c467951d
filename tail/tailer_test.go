package tail

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// world is a fake stream plus what was written to it, per key in order.
type world struct {
	t       *testing.T
	fake    *fake.Fake
	stream  string
	written map[string][]string // key -> payloads in write order
	n       int
	// kind of reader (readKinds); with "efo", efo serves SubscribeToShard
	// over fake, started with efoOptions (see with).
	kind       string
	polled     bool // a run of this world polled
	efo        *fanout.FakeServer
	efoOptions fanout.FakeOptions
}

func newWorld(t *testing.T, shards int) *world {
	f := fake.New()
	f.AddStream("s", shards)
	return &world{t: t, fake: f, stream: "s", written: map[string][]string{}}
}

// put writes count records spread over keys.
func (w *world) put(keys, count int) {
	for range count {
		k := fmt.Sprintf("key-%d", w.n%keys)
		payload := fmt.Sprintf("%s#%d", k, len(w.written[k]))
		w.fake.Put(w.stream, k, []byte(payload))
		w.written[k] = append(w.written[k], payload)
		w.n++
	}
}

func (w *world) total() int {
	n := 0
	for _, v := range w.written {
		n += len(v)
	}
	return n
}

// fastOptions keep unit tests quick; pacing itself is tested separately.
func fastOptions() Options {
	return Options{StreamName: "s", PollInterval: 20 * time.Millisecond, RelistInterval: 200 * time.Millisecond,
		CheckpointInterval: 50 * time.Millisecond, IdleExit: 150 * time.Millisecond, minInterval: 5 * time.Millisecond}
}

type sink struct {
	mu   sync.Mutex
	recs []Record
	fail func(n int) error
}

func (s *sink) deliver(batch []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(len(s.recs)); err != nil {
			return err
		}
	}
	for _, r := range batch {
		r.Data = slices.Clone(r.Data)
		s.recs = append(s.recs, r)
	}
	return nil
}

func (s *sink) records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

func runTail(t *testing.T, api API, store Store, opts Options, out *sink) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := New(api, store, opts, out.deliver).Run(ctx)
	if err != nil {
		t.Fatalf("tail: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("tail did not stop by itself (reason %v)", res.Reason)
	}
	return res
}

// checkDelivered asserts: every written record delivered, each key's
// records in write order; with exactlyOnce, no record twice.
func (w *world) checkDelivered(recs []Record, exactlyOnce bool) {
	w.t.Helper()
	got := map[string][]string{}
	for _, r := range recs {
		got[r.PartitionKey] = append(got[r.PartitionKey], string(r.Data))
	}
	for k, want := range w.written {
		seq := got[k]
		if exactlyOnce && len(seq) != len(want) {
			w.t.Fatalf("key %s: delivered %d records, want %d\n got %v\nwant %v", k, len(seq), len(want), seq, want)
		}
		// In order, allowing replays: each next record is either the next
		// expected one or a replay of an earlier one.
		next := 0
		for _, p := range seq {
			switch {
			case next < len(want) && p == want[next]:
				next++
			case slices.Index(want[:next], p) >= 0:
				// replayed
			default:
				w.t.Fatalf("key %s: %s out of order (expected %s)\n got %v", k, p, want[min(next, len(want)-1)], seq)
			}
		}
		if next != len(want) {
			w.t.Fatalf("key %s: only %d of %d records delivered", k, next, len(want))
		}
	}
}

// checkParentsFirst asserts that no record of a shard comes before the last
// record of any of its parents.
func checkParentsFirst(t *testing.T, f *fake.Fake, stream string, recs []Record) {
	t.Helper()
	first, last := map[string]int{}, map[string]int{}
	for i, r := range recs {
		if _, ok := first[r.ShardID]; !ok {
			first[r.ShardID] = i
		}
		last[r.ShardID] = i
	}
	out, _ := f.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	for _, sh := range out.Shards {
		c := aws.ToString(sh.ShardId)
		for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
			if p == nil {
				continue
			}
			if fc, ok := first[c]; ok {
				if lp, ok := last[*p]; ok && lp > fc {
					t.Fatalf("child %s delivered (at %d) before parent %s finished (at %d)", c, fc, *p, lp)
				}
			}
		}
	}
}

func TestSingleSplit(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		w.put(10, 50)
		lo, hi := w.fake.SplitHalf("s", "shardId-000000000000")
		w.put(10, 50)
		out := &sink{}
		store := NewMemoryStore(nil)
		res := w.run(store, fastOptions(), out)
		w.checkDelivered(out.records(), true)
		checkParentsFirst(t, w.fake, "s", out.records())
		if res.Reason != StopIdle || res.Records != 100 || res.Readers != 3 {
			t.Fatalf("result = %+v", res)
		}
		saved := store.Saved()
		if !saved["shardId-000000000000"].ShardEnd || saved[lo].SequenceNumber == "" || saved[hi].SequenceNumber == "" {
			t.Fatalf("checkpoint = %v", saved)
		}
	})
}

func TestMergeWaitsForBothParents(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 2, kind)
		// The upper parent holds far more records (270 to 30), read in small
		// pages, so it finishes last: the child must wait for it too.
		two, err := lineage.EvenLayout(2)
		if err != nil {
			t.Fatal(err)
		}
		half := two[1].Start // where the fake's shard 1 starts, as on AWS
		var upper, lower []string
		for i := 0; len(upper) < 27 || len(lower) < 3; i++ {
			k := fmt.Sprintf("key-%d", i)
			if lineage.PartitionKeyHash(k).Cmp(half) >= 0 {
				if len(upper) < 27 {
					upper = append(upper, k)
				}
			} else if len(lower) < 3 {
				lower = append(lower, k)
			}
		}
		keys := append(upper, lower...)
		for i := range 300 {
			k := keys[i%30]
			w.fake.Put("s", k, []byte(fmt.Sprintf("%s#%d", k, len(w.written[k]))))
			w.written[k] = append(w.written[k], fmt.Sprintf("%s#%d", k, len(w.written[k])))
		}
		child := w.fake.Merge("s", "shardId-000000000000", "shardId-000000000001")
		w.put(30, 60)
		opts := fastOptions()
		opts.Limit = 7
		// 39 pages of the upper parent take about a second, five times the
		// relisting interval: the child is listed (and could start) long
		// before its second parent ends.
		opts.minInterval = 25 * time.Millisecond
		out := &sink{}
		w.run(NewMemoryStore(nil), opts, out)
		recs := out.records()
		w.checkDelivered(recs, true)
		checkParentsFirst(t, w.fake, "s", recs)
		if recs[len(recs)-1].ShardID != child {
			t.Fatalf("last record from %s, want the merge child %s", recs[len(recs)-1].ShardID, child)
		}
	})
}

// The ways a shard's end comes: with the children named (AWS), without
// them (found by listing), kinesalite's extra empty page for polling, and,
// subscribed, never (kinesis-mock keeps sending empty events: the reader
// takes a caught-up empty event of a subscription made after a listing
// showed the shard closed as its end).
func TestSplitMergeSplit(t *testing.T) {
	for _, tt := range []struct{ kind, end string }{
		{"polling", "aws"}, {"polling", "kinesalite"}, {"polling", "no-children"},
		{"efo", "aws"}, {"efo", "no-children"}, {"efo", "never"},
	} {
		t.Run(tt.kind+"/"+tt.end, func(t *testing.T) {
			w := newWorldOf(t, 2, tt.kind)
			w.fake.KinesaliteEnd = tt.end == "kinesalite"
			w.fake.NoChildShards = tt.end == "no-children"
			w.efoOptions.NeverEnd = tt.end == "never"
			w.put(20, 40)
			a, b := w.fake.SplitHalf("s", "shardId-000000000000")
			w.put(20, 40)
			m := w.fake.Merge("s", b, "shardId-000000000001")
			w.put(20, 40)
			w.fake.SplitHalf("s", m)
			w.put(20, 40)
			w.fake.SplitHalf("s", a)
			w.put(20, 40)
			out := &sink{}
			w.run(NewMemoryStore(nil), fastOptions(), out)
			w.checkDelivered(out.records(), true)
			checkParentsFirst(t, w.fake, "s", out.records())
		})
	}
}

func TestTrimmedParents(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 2, kind)
		w.put(10, 20)
		lo, _ := w.fake.SplitHalf("s", "shardId-000000000000")
		m := w.fake.Merge("s", "shardId-000000000003", "shardId-000000000001")
		w.put(10, 20)
		// Retention trims the first split's parent and one parent of the merge:
		// their records are gone, the rest is read without waiting for them.
		w.fake.Trim("s", "shardId-000000000000")
		w.fake.Trim("s", "shardId-000000000001")
		for k := range w.written {
			w.written[k] = nil
		}
		// What is still readable, per key, in order.
		for _, id := range []string{lo, "shardId-000000000003", m} {
			for _, r := range w.fake.ShardRecords("s", id) {
				w.written[r.PartitionKey] = append(w.written[r.PartitionKey], string(r.Data))
			}
		}
		out := &sink{}
		w.run(NewMemoryStore(nil), fastOptions(), out)
		got := 0
		for _, r := range out.records() {
			if r.ShardID == "shardId-000000000000" || r.ShardID == "shardId-000000000001" {
				t.Fatalf("read a trimmed shard")
			}
			got++
		}
		want := 0
		for _, v := range w.written {
			want += len(v)
		}
		if got != want {
			t.Fatalf("delivered %d, want %d", got, want)
		}
		checkParentsFirst(t, w.fake, "s", out.records())
	})
}

func TestFromTip(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		w.put(5, 20)
		w.fake.SplitHalf("s", "shardId-000000000000")
		w.put(5, 20) // on the open children, before the tail starts: skipped
		opts := fastOptions()
		opts.Start = StartLatest
		opts.IdleExit = 0
		opts = w.with(opts)
		store := NewMemoryStore(nil)
		out := &sink{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Result)
		go func() {
			res, err := New(w.fake, store, opts, out.deliver).Run(ctx)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		// Wait until both children have LATEST iterators (or subscriptions),
		// then write.
		started := func() int {
			if w.efo != nil {
				return len(w.efo.Calls())
			}
			return w.fake.Calls("GetShardIterator")
		}
		deadline := time.Now().Add(5 * time.Second)
		for started() < 2 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		var fresh []string
		for i := range 10 {
			k := fmt.Sprintf("new-%d", i)
			w.fake.Put("s", k, []byte(k))
			fresh = append(fresh, k)
		}
		deadline = time.Now().Add(5 * time.Second)
		for len(out.records()) < 10 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		res := <-done
		var got []string
		for _, r := range out.records() {
			got = append(got, string(r.Data))
		}
		slices.Sort(got)
		slices.Sort(fresh)
		if !slices.Equal(got, fresh) || res.Reason != StopInterrupted {
			t.Fatalf("from tip delivered %v (reason %v), want only %v", got, res.Reason, fresh)
		}
		if !store.Saved()["shardId-000000000000"].ShardEnd {
			t.Fatalf("closed parent not counted as read: %v", store.Saved())
		}
	})
}

func TestResumeFromCheckpointMidParent(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		w.put(8, 80)
		w.fake.SplitHalf("s", "shardId-000000000000")
		w.put(8, 80)
		store := NewMemoryStore(nil)
		var all []Record
		for stop := int64(13); ; stop += 29 {
			opts := fastOptions()
			opts.MaxRecords = 29
			out := &sink{}
			res := w.run(store, opts, out)
			all = append(all, out.records()...)
			if res.Reason == StopIdle {
				break
			}
			if res.Reason != StopMaxRecords || res.Records != 29 {
				t.Fatalf("run stopped with %+v", res)
			}
			if len(all) > 1000 {
				t.Fatal("no progress")
			}
		}
		// --max-records checkpoints exactly: no replays at all.
		w.checkDelivered(all, true)
		checkParentsFirst(t, w.fake, "s", all)
	})
}

func TestResumeInsideAggregate(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		recs := []UserRecord{{PartitionKey: "a", Data: []byte("a0")}, {PartitionKey: "b", Data: []byte("b0")}, {PartitionKey: "a", Data: []byte("a1")}}
		w.fake.Put("s", "agg", aggregate([]string{"a", "b"}, nil, recs))
		w.fake.Put("s", "plain", []byte("p0"))
		store := NewMemoryStore(nil)
		var got []string
		for range 10 {
			opts := fastOptions()
			opts.MaxRecords = 2
			out := &sink{}
			res := w.run(store, opts, out)
			for _, r := range out.records() {
				got = append(got, fmt.Sprintf("%s:%s:%v/%d", r.PartitionKey, r.Data, r.Aggregated, r.SubSequence))
			}
			if res.Reason == StopIdle {
				break
			}
		}
		want := []string{"a:a0:true/0", "b:b0:true/1", "a:a1:true/2", "plain:p0:false/0"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func TestKeyAndShardFilters(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 2, kind)
		w.put(40, 80)
		a, b := w.fake.SplitHalf("s", "shardId-000000000000")
		w.put(40, 80)
		w.fake.Merge("s", b, "shardId-000000000001")
		w.put(40, 80)

		t.Run("key", func(t *testing.T) {
			key := "key-7"
			h := lineage.PartitionKeyHash(key)
			opts := fastOptions()
			opts.Key = &h
			out := &sink{}
			w.run(NewMemoryStore(nil), opts, out)
			var mine []string
			shards := map[string]bool{}
			for _, r := range out.records() {
				shards[r.ShardID] = true
				if r.PartitionKey == key {
					mine = append(mine, string(r.Data))
				}
			}
			if !slices.Equal(mine, w.written[key]) {
				t.Fatalf("key records %v, want %v", mine, w.written[key])
			}
			// Only the shards on the key's path: one per epoch.
			if len(shards) != 3 {
				t.Fatalf("read shards %v, want the 3 on the key's path", shards)
			}
		})
		t.Run("shard", func(t *testing.T) {
			opts := fastOptions()
			opts.Shard = a
			out := &sink{}
			w.run(NewMemoryStore(nil), opts, out)
			shards := map[string]bool{}
			for _, r := range out.records() {
				shards[r.ShardID] = true
			}
			if !shards[a] || shards["shardId-000000000000"] || shards["shardId-000000000001"] || shards[b] {
				t.Fatalf("read %v, want only %s's subtree", shards, a)
			}
		})
		t.Run("unknown shard", func(t *testing.T) {
			opts := fastOptions()
			opts.Shard = "shardId-000000000099"
			_, err := New(w.fake, NewMemoryStore(nil), w.with(opts), (&sink{}).deliver).Run(context.Background())
			if !errors.Is(err, ErrShardNotFound) {
				t.Fatalf("err = %v", err)
			}
		})
	})
}

// --shard over a deep history: 40 split-and-merge cycles on the other
// shard give 2^40 paths from its last child to the root. The filter visits
// each ancestor once; walking every path never ended (runTail's deadline).
func TestShardFilterOverDeepHistory(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 2, kind)
		cur := "shardId-000000000000"
		for range 40 {
			lo, hi := w.fake.SplitHalf("s", cur)
			cur = w.fake.Merge("s", lo, hi)
		}
		w.put(20, 40)
		opts := fastOptions()
		opts.Shard = "shardId-000000000001"
		out := &sink{}
		w.run(NewMemoryStore(nil), opts, out)
		recs := out.records()
		if len(recs) == 0 {
			t.Fatal("nothing read from the filtered shard")
		}
		for _, r := range recs {
			if r.ShardID != opts.Shard {
				t.Fatalf("read %s, outside --shard %s", r.ShardID, opts.Shard)
			}
		}
	})
}

// Faults: throttling, expired iterators and 5xx lose and repeat nothing.
func TestFaultsLoseNothing(t *testing.T) { synctest.Test(t, testFaultsLoseNothing) }

func testFaultsLoseNothing(t *testing.T) {
	w := newWorld(t, 2)
	w.put(20, 100)
	w.fake.SplitHalf("s", "shardId-000000000000")
	w.put(20, 100)
	var mu sync.Mutex
	n := 0
	w.fake.Hook = func(op string, in any) error {
		if op != "GetRecords" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if n > 300 {
			// Then the faults stop: --idle-exit is claimed only once every
			// reader has an answer since its last failure.
			return nil
		}
		switch n % 7 {
		case 2:
			return &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}
		case 4:
			return &types.ExpiredIteratorException{Message: aws.String("Iterator expired")}
		case 6:
			return &types.InternalFailureException{Message: aws.String("internal")}
		}
		return nil
	}
	opts := fastOptions()
	opts.Limit = 9
	opts.IdleExit = 2500 * time.Millisecond // throttle backoff is ≥ 1 s
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	w.checkDelivered(out.records(), true)
}

// The pacer never lets more than 5 GetRecords attempts per second reach a
// shard, retries included, even while catching up.
func TestPacingNeverExceedsFivePerSecond(t *testing.T) {
	synctest.Test(t, testPacingNeverExceedsFivePerSecond)
}

func testPacingNeverExceedsFivePerSecond(t *testing.T) {
	w := newWorld(t, 2)
	w.put(10, 400)
	var mu sync.Mutex
	n := 0
	w.fake.Hook = func(op string, in any) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "GetRecords" {
			if n++; n%5 == 0 {
				return &types.InternalFailureException{Message: aws.String("boom")}
			}
		}
		return nil
	}
	opts := fastOptions()
	opts.minInterval = 0 // the real floor
	opts.Limit = 10      // ~20 calls per shard: behind all the way
	opts.IdleExit = time.Second
	opts.PollInterval = 0
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	w.checkDelivered(out.records(), true)
	for shard, ts := range w.fake.GetRecordsTimes() {
		if len(ts) < 10 {
			t.Fatalf("shard %s: only %d calls; the test needs more", shard, len(ts))
		}
		for i := range ts {
			inWindow := 0
			for _, u := range ts[i:] {
				if u.Sub(ts[i]) < time.Second {
					inWindow++
				}
			}
			if inWindow > 5 {
				t.Fatalf("shard %s: %d GetRecords in one second from %v", shard, inWindow, ts[i])
			}
		}
	}
}

func TestDeliveryErrorStopsAndCheckpointsDelivered(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		w.put(3, 30)
		boom := errors.New("broken pipe")
		out := &sink{fail: func(n int) error {
			if n >= 10 {
				return boom
			}
			return nil
		}}
		opts := fastOptions()
		opts.Limit = 5
		store := NewMemoryStore(nil)
		_, err := New(w.fake, store, w.with(opts), out.deliver).Run(context.Background())
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		recs := out.records()
		if len(recs) != 10 {
			t.Fatalf("delivered %d", len(recs))
		}
		if got := store.Saved()["shardId-000000000000"].SequenceNumber; got != recs[9].SequenceNumber {
			t.Fatalf("checkpoint %s, want the last delivered %s", got, recs[9].SequenceNumber)
		}
	})
}

func TestDecompress(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 1, kind)
		var gz strings.Builder
		zw := gzipWriter(&gz)
		zw.Write([]byte(`{"logEvents":[]}`))
		zw.Close()
		w.fake.Put("s", "k", []byte(gz.String()))
		w.fake.Put("s", "k", []byte("plain"))
		opts := fastOptions()
		opts.Decompress = true
		out := &sink{}
		w.run(NewMemoryStore(nil), opts, out)
		recs := out.records()
		if string(recs[0].Data) != `{"logEvents":[]}` || !recs[0].Decompressed || string(recs[1].Data) != "plain" || recs[1].Decompressed {
			t.Fatalf("records = %+v", recs)
		}
	})
}

func TestBigSequenceCompare(t *testing.T) {
	a := new(big.Int).Exp(big.NewInt(10), big.NewInt(128), nil).String()
	for _, tt := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"10", "9", 1}, {a, a, 0}, {"49590338271490256608559692538361571095921575989136588898", "49590338271490256608559692538361571095921575989136588899", -1}} {
		if got := compareSequence(tt.a, tt.b); got != tt.want {
			t.Errorf("compare(%s, %s) = %d", tt.a, tt.b, got)
		}
	}
}

// UpdateShardCount histories: the service's own intermediate shards (2→3
// as AWS does it: two splits, then a merge of the middle pieces, which
// live briefly), and the fake's direct even re-layouts (4→2→3) where a new
// shard names the old shards holding its first and last keys.
func TestUpdateShardCountHistories(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		t.Run("intermediate shards", func(t *testing.T) {
			w := newWorldOf(t, 2, kind)
			w.put(24, 48)
			third := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(3))
			_, b := w.fake.Split("s", "shardId-000000000000", third)
			w.put(24, 6) // a few records on the short-lived pieces
			c, _ := w.fake.Split("s", "shardId-000000000001", new(big.Int).Mul(third, big.NewInt(2)))
			w.put(24, 6)
			w.fake.Merge("s", b, c)
			w.put(24, 48)
			if n := len(w.fake.OpenShards("s")); n != 3 {
				t.Fatalf("%d open shards, want 3", n)
			}
			out := &sink{}
			w.run(NewMemoryStore(nil), fastOptions(), out)
			w.checkDelivered(out.records(), true)
			checkParentsFirst(t, w.fake, "s", out.records())
		})
		t.Run("even re-layouts", func(t *testing.T) {
			w := newWorldOf(t, 4, kind)
			w.put(30, 60)
			ctx := context.Background()
			if _, err := w.fake.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("s"), TargetShardCount: aws.Int32(2), ScalingType: types.ScalingTypeUniformScaling}); err != nil {
				t.Fatal(err)
			}
			w.put(30, 60)
			if _, err := w.fake.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("s"), TargetShardCount: aws.Int32(3), ScalingType: types.ScalingTypeUniformScaling}); err != nil {
				t.Fatal(err)
			}
			w.put(30, 60)
			out := &sink{}
			w.run(NewMemoryStore(nil), fastOptions(), out)
			w.checkDelivered(out.records(), true)
			checkParentsFirst(t, w.fake, "s", out.records())
		})
	})
}

// --key prints only the key's records, in order, from the shards on its path.
func TestKeyFilterPrintsOnlyTheKey(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		w := newWorldOf(t, 2, kind)
		w.put(20, 60)
		w.fake.SplitHalf("s", "shardId-000000000000")
		w.put(20, 60)
		key := "key-3"
		h := lineage.PartitionKeyHash(key)
		opts := fastOptions()
		opts.Key, opts.KeyName = &h, key
		out := &sink{}
		w.run(NewMemoryStore(nil), opts, out)
		var got []string
		for _, r := range out.records() {
			if r.PartitionKey != key {
				t.Fatalf("record of key %s printed with --key %s", r.PartitionKey, key)
			}
			got = append(got, string(r.Data))
		}
		if !slices.Equal(got, w.written[key]) {
			t.Fatalf("got %v, want %v", got, w.written[key])
		}
	})
}

// A shard throttled for a long time gets one warning, and loses nothing.
func TestThrottleWarning(t *testing.T) { synctest.Test(t, testThrottleWarning) }

func testThrottleWarning(t *testing.T) {
	defer func(d time.Duration) { throttleWarnAfter = d }(throttleWarnAfter)
	throttleWarnAfter = time.Nanosecond
	w := newWorld(t, 1)
	w.put(3, 9)
	var mu sync.Mutex
	n := 0
	w.fake.Hook = func(op string, in any) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "GetRecords" {
			if n++; n <= 2 {
				return &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}
			}
		}
		return nil
	}
	var warnings []string
	opts := fastOptions()
	opts.IdleExit = 3 * time.Second // the throttle backoff is ≥ 1 s
	opts.Warnf = func(format string, args ...any) {
		mu.Lock()
		warnings = append(warnings, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	w.checkDelivered(out.records(), true)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "shard shardId-000000000000 has been throttled for") {
		t.Fatalf("warnings = %q", warnings)
	}
}

// --from-tip: an iterator that expires before any record arrived is not
// replaced by a new LATEST one (that would skip what came in between).
func TestLatestIteratorRefetchLosesNothing(t *testing.T) {
	w := newWorld(t, 1)
	var once sync.Once
	w.fake.Hook = func(op string, in any) error {
		if op != "GetRecords" {
			return nil
		}
		var expire error
		once.Do(func() {
			w.fake.Put("s", "k", []byte("written while the iterator expired"))
			expire = &types.ExpiredIteratorException{Message: aws.String("Iterator expired")}
		})
		return expire
	}
	opts := fastOptions()
	opts.Start = StartLatest
	out := &sink{}
	runTail(t, w.fake, NewMemoryStore(nil), opts, out)
	recs := out.records()
	if len(recs) != 1 || string(recs[0].Data) != "written while the iterator expired" {
		t.Fatalf("records = %v", recs)
	}
}

// An open shard that the service says does not exist is an error, never
// a SHARD_END that would skip it for good.
func TestOpenShardNotFoundIsAnError(t *testing.T) {
	w := newWorld(t, 1)
	w.put(2, 4)
	w.fake.Hook = func(op string, in any) error {
		if op == "GetRecords" {
			return &types.ResourceNotFoundException{Message: aws.String("Stream s not found")}
		}
		return nil
	}
	store := NewMemoryStore(nil)
	_, err := New(w.fake, store, fastOptions(), (&sink{}).deliver).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "was not found although it was open") {
		t.Fatalf("err = %v", err)
	}
	if store.Saved()["shardId-000000000000"].ShardEnd {
		t.Fatal("SHARD_END recorded for an open shard")
	}
}

// Resuming "after" the last record of a closed shard can be refused by the
// service; the reader reads at that record, skips it, and reaches the end.
func TestResumeAfterLastRecordOfClosedShard(t *testing.T) {
	w := newWorld(t, 1)
	w.put(3, 6)
	recs := w.fake.ShardRecords("s", "shardId-000000000000")
	last := recs[len(recs)-1].Seq
	w.fake.SplitHalf("s", "shardId-000000000000")
	w.put(3, 6)
	refused := 0
	w.fake.Hook = func(op string, in any) error {
		if gi, ok := in.(*kinesis.GetShardIteratorInput); ok && gi.ShardIteratorType == types.ShardIteratorTypeAfterSequenceNumber && aws.ToString(gi.StartingSequenceNumber) == last {
			refused++
			return &types.InvalidArgumentException{Message: aws.String("SequenceNumber has reached max possible value for the shard")}
		}
		return nil
	}
	store := NewMemoryStore(map[string]Position{"shardId-000000000000": {SequenceNumber: last}})
	out := &sink{}
	runTail(t, w.fake, store, fastOptions(), out)
	for _, r := range out.records() {
		if r.ShardID == "shardId-000000000000" {
			t.Fatalf("record %s of the finished parent delivered again", r.SequenceNumber)
		}
	}
	if refused != 1 || len(out.records()) != 6 || !store.Saved()["shardId-000000000000"].ShardEnd {
		t.Fatalf("refused %d, delivered %d, saved %v", refused, len(out.records()), store.Saved())
	}
}
