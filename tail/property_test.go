package tail

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// crashStore is a MemoryStore that stops persisting once the process
// "crashes": what it holds then is what a killed tail leaves on disk.
type crashStore struct {
	*MemoryStore
	mu      sync.Mutex
	crashed bool
}

func (c *crashStore) Save(ctx context.Context, p map[string]Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return nil
	}
	return c.MemoryStore.Save(ctx, p)
}

func (c *crashStore) crash() {
	c.mu.Lock()
	c.crashed = true
	c.mu.Unlock()
}

var errCrash = errors.New("crash")

// randomHistory mutates the stream: keyed writes, splits at random legal
// keys, merges of random adjacent pairs.
type randomHistory struct {
	rng     *rand.Rand
	fake    *fake.Fake
	mu      sync.Mutex
	written map[string][]string
	keys    int
	// shape of the Kinesis records: "plain" (one payload each), "kpl"
	// (KPL aggregates of one to four user records of a key) or "cwlogs"
	// (CloudWatch Logs batches of one to four log events of a key).
	shape string
	tb    testing.TB
}

// write puts payloads of key k as one Kinesis record of the history's
// shape (plain: one payload).
func (h *randomHistory) write(k string, payloads []string) {
	switch h.shape {
	case "kpl":
		var recs []UserRecord
		for _, p := range payloads {
			recs = append(recs, UserRecord{PartitionKey: k, Data: []byte(p)})
		}
		h.fake.Put("s", k, aggregate([]string{k}, nil, recs))
	case "cwlogs":
		h.fake.Put("s", k, cwBatch(h.tb, payloads...))
	default:
		h.fake.Put("s", k, []byte(payloads[0]))
	}
}

func (h *randomHistory) step() {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch r := h.rng.IntN(10); {
	case r < 6:
		for range 1 + h.rng.IntN(8) {
			k := "k" + strconv.Itoa(h.rng.IntN(h.keys))
			n := 1
			if h.shape != "plain" {
				n += h.rng.IntN(4)
			}
			var ps []string
			for range n {
				p := fmt.Sprintf("%s#%d", k, len(h.written[k]))
				ps = append(ps, p)
				h.written[k] = append(h.written[k], p)
			}
			h.write(k, ps)
		}
	case r < 8:
		open := h.fake.OpenShards("s")
		if len(open) >= 12 {
			return
		}
		id := open[h.rng.IntN(len(open))]
		// A random legal key: start+2 .. end-1 (ranges here are huge).
		lo, hi := shardRange(h.fake, id)
		span := new(big.Int).Sub(hi, lo)
		// off in [0, span-3): a fraction of the span drawn from the seeded rng.
		frac := new(big.Int).SetUint64(h.rng.Uint64())
		off := new(big.Int).Rsh(new(big.Int).Mul(new(big.Int).Sub(span, big.NewInt(3)), frac), 64)
		k := new(big.Int).Add(lo, new(big.Int).Add(off, big.NewInt(2)))
		h.fake.Split("s", id, k)
	default:
		open := h.fake.OpenShards("s")
		if len(open) < 2 {
			return
		}
		i := h.rng.IntN(len(open) - 1)
		h.fake.Merge("s", open[i], open[i+1])
	}
}

func shardRange(f *fake.Fake, id string) (*big.Int, *big.Int) {
	shards, _ := lineage.ListShards(context.Background(), f, lineage.ListOptions{StreamName: "s"})
	for _, s := range shards {
		if *s.ShardId == id {
			lo, _ := new(big.Int).SetString(*s.HashKeyRange.StartingHashKey, 10)
			hi, _ := new(big.Int).SetString(*s.HashKeyRange.EndingHashKey, 10)
			return lo, hi
		}
	}
	panic("no shard " + id)
}

// Random reshard histories, random keyed writes interleaved with the tail,
// random crash points (between writes, or in the middle of a page once
// part of it was written): across the runs every record is delivered at
// least once, each key's records come out in write order in every run
// (and with no gap or repeat inside a run), and each restart replays no
// more than what the crashed run wrote after its last checkpoint. The runs
// of a seed poll, subscribe (enhanced fan-out), or take turns on the same
// checkpoint; the records are plain, KPL aggregates or CloudWatch Logs
// batches (--cwlogs), and some seeds drop records with a filter (they
// count as read, and are never printed) or stop runs with --max-records.
func TestPropertyCrashResume(t *testing.T) {
	seeds := 36
	if testing.Short() {
		seeds = 6
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			f := fake.New()
			f.PageSize = 1 + rng.IntN(5)
			f.KinesaliteEnd = seed%3 == 1
			f.NoChildShards = seed%3 == 2
			f.AddStream("s", 1+rng.IntN(4))
			shape := []string{"plain", "kpl", "cwlogs"}[seed%3]
			filtered := seed%5 == 2   // a filter drops every fourth payload of a key
			maxRecords := seed%5 == 3 // runs stop at --max-records (or crash first)
			slowOut := seed%2 == 0
			h := &randomHistory{rng: rand.New(rand.NewPCG(uint64(seed), 7)), fake: f, written: map[string][]string{}, keys: 6, shape: shape, tb: t}
			for range 10 {
				h.step()
			}
			store := NewMemoryStore(nil)
			seen := map[string]Record{}
			// Subscribed runs read through a server over the same fake; a
			// closed shard's subscription never ends on every third seed
			// (kinesis-mock), and ends without children on others.
			w := &world{t: t, fake: f, stream: "s", efoOptions: fanout.FakeOptions{MaxEventRecords: 1 + rng.IntN(6), NeverEnd: seed%3 == 1}}
			kindOf := func(run int) string {
				switch seed % 4 {
				case 0:
					return "polling"
				case 1:
					return "efo"
				}
				return readKinds[(run+seed)%2]
			}
			for run := 0; run < 6; run++ {
				// A restart may replay what was delivered before but is not
				// covered by the persisted checkpoint: nothing more.
				unsaved := 0
				saved := store.Saved()
				for _, r := range seen {
					if beyond(r, saved[r.ShardID]) {
						unsaved++
					}
				}
				last := run == 5
				cs := &crashStore{MemoryStore: store}
				var (
					mu        sync.Mutex
					delivered []Record
				)
				crashAfter := 5 + rng.IntN(60)
				// The writer reports every record it wrote, and the crash
				// may come in the middle of a batch.
				write := func(batch []Record, written func(int)) error {
					mu.Lock()
					defer mu.Unlock()
					for i, r := range batch {
						if !last && len(delivered) >= crashAfter {
							cs.crash()
							return errCrash
						}
						if slowOut {
							// A slow stdout: checkpoints are saved while a
							// batch is being written.
							time.Sleep(2 * time.Millisecond)
						}
						r.Data = append([]byte(nil), r.Data...)
						delivered = append(delivered, r)
						written(i + 1)
					}
					return nil
				}
				opts := fastOptions()
				opts.CWLogs = shape == "cwlogs"
				if filtered {
					opts.Select = func(_ context.Context, batch []Record) ([]Record, int) {
						var out []Record
						for _, r := range batch {
							if _, n := splitPayload(t, payloadOf(r)); n%4 != 3 {
								out = append(out, r)
							}
						}
						return out, len(batch)
					}
				}
				if maxRecords && !last {
					opts.MaxRecords = int64(3 + rng.IntN(40))
				}
				opts.CheckpointInterval = time.Duration(5+rng.IntN(40)) * time.Millisecond
				opts.Limit = int32(1 + rng.IntN(6))
				if !last {
					opts.IdleExit = 0
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				stopWriter := make(chan struct{})
				var wg sync.WaitGroup
				if !last {
					// Or crash at a random moment (kill -9 while idle).
					crashIn := time.Duration(20+rng.IntN(300)) * time.Millisecond
					wg.Go(func() {
						select {
						case <-stopWriter:
						case <-time.After(crashIn):
							cs.crash()
							cancel()
						}
					})
					wg.Go(func() {
						for i := 0; i < 15; i++ {
							select {
							case <-stopWriter:
								return
							case <-time.After(time.Duration(2+rng.IntN(10)) * time.Millisecond):
							}
							h.step()
						}
					})
				}
				w.kind = kindOf(run)
				res, err := NewWriting(f, cs, w.with(opts), write).Run(ctx)
				close(stopWriter)
				wg.Wait()
				cancel()
				if last && err != nil {
					t.Fatalf("final run: %v", err)
				}
				if !last && err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("run %d: %v", run, err)
				}
				if !last && err == nil && ctx.Err() == nil && res.Reason != StopMaxRecords {
					t.Fatalf("run %d ended without crashing (%v)", run, res.Reason)
				}
				// Within a run: per key, consecutive and increasing.
				lastIdx := map[string]int{}
				replays := 0
				for _, r := range delivered {
					key, n := splitPayload(t, payloadOf(r))
					if filtered && n%4 == 3 {
						t.Fatalf("run %d: %s printed, although the filter drops it", run, payloadOf(r))
					}
					next := n - 1
					if filtered && next%4 == 3 {
						next-- // the one before was dropped
					}
					if p, ok := lastIdx[key]; ok && p != next {
						t.Fatalf("run %d: key %s jumped from #%d to #%d", run, key, p, n)
					}
					lastIdx[key] = n
					if _, ok := seen[payloadOf(r)]; ok {
						replays++
					}
					seen[payloadOf(r)] = r
				}
				if replays > unsaved {
					t.Fatalf("run %d replayed %d records; only %d delivered records were beyond the checkpoint", run, replays, unsaved)
				}
			}
			for k, want := range h.written {
				for _, p := range want {
					if _, n := splitPayload(t, p); filtered && n%4 == 3 {
						continue
					}
					if _, ok := seen[p]; !ok {
						t.Fatalf("key %s: %s never delivered", k, p)
					}
				}
			}
		})
	}
}

// payloadOf is what a delivered item carries: a log event's message, or
// the record's (or user record's) data.
func payloadOf(r Record) string {
	if r.Log != nil {
		return r.Log.Message
	}
	return string(r.Data)
}

// beyond reports whether a delivered item lies past the saved position p
// of its shard: a later record, or a later user record of the aggregate
// or log event of the batch p stopped inside.
func beyond(r Record, p Position) bool {
	if p.ShardEnd {
		return false
	}
	if p.SequenceNumber == "" {
		return true
	}
	switch c := compareSequence(r.SequenceNumber, p.SequenceNumber); {
	case c != 0:
		return c > 0
	case p.Aggregated:
		return r.SubSequence > p.SubSequence
	case p.InBatch:
		return r.Log != nil && r.Log.Index > p.LogEventIndex
	}
	return false
}

func splitPayload(t *testing.T, p string) (string, int) {
	i := strings.LastIndexByte(p, '#')
	n, err := strconv.Atoi(p[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("bad payload %q", p)
	}
	return p[:i], n
}
