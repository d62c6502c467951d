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

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fake"
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
}

func (h *randomHistory) step() {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch r := h.rng.IntN(10); {
	case r < 6:
		for range 1 + h.rng.IntN(8) {
			k := "k" + strconv.Itoa(h.rng.IntN(h.keys))
			p := fmt.Sprintf("%s#%d", k, len(h.written[k]))
			h.fake.Put("s", k, []byte(p))
			h.written[k] = append(h.written[k], p)
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
// random crash points: across the runs every record is delivered at least
// once, each key's records come out in write order in every run (and with
// no gap or repeat inside a run), and each restart replays no more than
// what the crashed run delivered after its last checkpoint. The runs of a
// seed poll, subscribe (enhanced fan-out), or take turns on the same
// checkpoint.
func TestPropertyCrashResume(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 5
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
			h := &randomHistory{rng: rand.New(rand.NewPCG(uint64(seed), 7)), fake: f, written: map[string][]string{}, keys: 6}
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
					p := saved[r.ShardID]
					if !p.ShardEnd && (p.SequenceNumber == "" || compareSequence(r.SequenceNumber, p.SequenceNumber) > 0) {
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
				deliver := func(batch []Record) error {
					mu.Lock()
					defer mu.Unlock()
					if !last && len(delivered) >= crashAfter {
						cs.crash()
						return errCrash
					}
					for _, r := range batch {
						r.Data = append([]byte(nil), r.Data...)
						delivered = append(delivered, r)
					}
					return nil
				}
				opts := fastOptions()
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
				_, err := New(f, cs, w.with(opts), deliver).Run(ctx)
				close(stopWriter)
				wg.Wait()
				cancel()
				if last && err != nil {
					t.Fatalf("final run: %v", err)
				}
				if !last && err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("run %d: %v", run, err)
				}
				if !last && err == nil && ctx.Err() == nil {
					t.Fatalf("run %d ended without crashing", run)
				}
				// Within a run: per key, consecutive and increasing.
				lastIdx := map[string]int{}
				replays := 0
				for _, r := range delivered {
					key, n := splitPayload(t, string(r.Data))
					if p, ok := lastIdx[key]; ok && n != p+1 {
						t.Fatalf("run %d: key %s jumped from #%d to #%d", run, key, p, n)
					}
					lastIdx[key] = n
					if _, ok := seen[string(r.Data)]; ok {
						replays++
					}
					seen[string(r.Data)] = r
				}
				if replays > unsaved {
					t.Fatalf("run %d replayed %d records; only %d delivered records were beyond the checkpoint", run, replays, unsaved)
				}
			}
			for k, want := range h.written {
				for _, p := range want {
					if _, ok := seen[p]; !ok {
						t.Fatalf("key %s: %s never delivered", k, p)
					}
				}
			}
		})
	}
}

func splitPayload(t *testing.T, p string) (string, int) {
	i := strings.LastIndexByte(p, '#')
	n, err := strconv.Atoi(p[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("bad payload %q", p)
	}
	return p[:i], n
}
