package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// The lease-table phase: three `tail --lease-table` workers share a stream
// through dynalite while it is written, split and merged; one worker is
// killed (-9) and restarted; DynamoDB answers 500 for a few seconds at a
// time, and once hangs for longer than the lease duration. Every record
// must be delivered (by some worker), each key in order across workers (a
// worker's lines stamped as they arrive, the union in arrival order), and
// no worker may print a shard's record more than a lease duration after
// another worker started printing that shard.

const (
	leaseDuration = 6 * time.Second
	leaseWorkers  = 3
)

type leaseStats struct {
	written, delivered, replays int
	perWorker                   map[string]int
	kills, splits, merges       int
	outages, hangs              int
	pauses                      int           // warnings that readers stopped for want of renewals
	maxOverlap                  time.Duration // longest a worker printed a shard after another began it
	fired                       map[string]int
	took                        time.Duration
	statuses                    map[string]int
}

// leaseEvent is a step of the phase's schedule, at an offset from its start.
type leaseEvent struct {
	at time.Duration
	do func() error
}

// runLeasePhase runs the phase. Its length is mostly the schedule, one
// table of steps kept together so that it reads as the timeline it is.
func runLeasePhase(bin string, e *emulator.Emulator, seed uint64, length time.Duration) (leaseStats, error) {
	started := time.Now()
	ctx := context.Background()
	st := leaseStats{perWorker: map[string]int{}, statuses: map[string]int{}}
	d, err := emulator.StartDynalite(ctx)
	if err != nil {
		return st, err
	}
	defer d.Stop()
	inj := faults.New(seed)
	proxy, err := inj.StartProxy(d.Endpoint)
	if err != nil {
		return st, err
	}
	defer proxy.Close()

	c := kinesis.New(e.ClientOptions())
	stream := fmt.Sprintf("soak-leases-%d", seed%100000)
	ref := kstream.Ref{Name: stream}
	if _, err := kstream.Ensure(ctx, c, ref, kstream.Spec{Shards: 2}, kstream.WaitOptions{}); err != nil {
		return st, err
	}
	dir, err := os.MkdirTemp("", "kinesis-shards-soak-leases-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(dir)
	env := append(e.Env(), "AWS_ENDPOINT_URL_DYNAMODB="+proxy.URL, "XDG_STATE_HOME="+dir)
	table := stream + "-leases"
	worker := func(id string) (*tailProc, error) {
		return startLeaseTail(bin, env, stream, table, id)
	}

	var (
		mu    sync.Mutex
		procs = map[string][]*tailProc{} // worker -> its runs
	)
	wr := &leaseWriter{written: map[string][]string{}}
	stopWriter := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { wr.run(ctx, c, stream, stopWriter) })

	rng := rand.New(rand.NewPCG(seed, 3))
	unit := length / 12 // the schedule scales with the phase's length
	outage := func(kind faults.Kind, d time.Duration) func() error {
		return func() error {
			inj.SetRules(faults.Rule{Op: "*", Kind: kind})
			time.Sleep(d)
			inj.SetRules()
			return nil
		}
	}
	start := func(id string) func() error {
		return func() error {
			p, err := worker(id)
			if err == nil {
				mu.Lock()
				procs[id] = append(procs[id], p)
				mu.Unlock()
			}
			return err
		}
	}
	schedule := []leaseEvent{
		{0, start("w1")}, // creates the table; the others join it
		{3 * time.Second, start("w2")},
		{4 * time.Second, start("w3")},
		{2 * unit, func() error { return reshardStep(ctx, c, ref, rng, &st) }},
		{3 * unit, func() error { // kill -9 a worker, restart it a lease duration later
			mu.Lock()
			p := procs["w2"][len(procs["w2"])-1]
			mu.Unlock()
			p.cmd.Process.Kill()
			st.kills++
			return nil
		}},
		{3*unit + leaseDuration, start("w2")},
		{4 * unit, func() error { st.outages++; return outage(faults.InternalFailure500, 3*time.Second)() }},
		{5 * unit, func() error { return reshardStep(ctx, c, ref, rng, &st) }},
		{6 * unit, func() error { st.outages++; return outage(faults.InternalFailure500, 4*time.Second)() }},
		{7 * unit, func() error { st.hangs++; return outage(faults.Stall, leaseDuration*3/2)() }},
		{8 * unit, func() error { return reshardStep(ctx, c, ref, rng, &st) }},
		{9 * unit, func() error { st.outages++; return outage(faults.InternalFailure500, 3*time.Second)() }},
	}
	for _, ev := range schedule {
		time.Sleep(time.Until(started.Add(ev.at)))
		if err := ev.do(); err != nil {
			return st, err
		}
		fmt.Printf("soak: leases: step at %s done (%s)\n", ev.at.Round(time.Second), time.Since(started).Round(time.Second))
	}
	time.Sleep(time.Until(started.Add(10 * unit)))
	close(stopWriter)
	wg.Wait()
	if wr.err != nil {
		return st, fmt.Errorf("leases: a PutRecords call failed after its retries: %w", wr.err)
	}
	st.written = wr.n
	if err := waitForAll(procs, wr.n); err != nil {
		return st, err
	}
	all, err := stopWorkers(procs, &st)
	if err != nil {
		return st, err
	}
	st.fired = inj.Fired()
	st.took = time.Since(started)
	return st, checkLeaseLines(all, wr.written, &st)
}

// leaseWriter writes 10 records/s over 8 keys, one record per key per
// call, so each key's records are stored in write order.
type leaseWriter struct {
	written map[string][]string
	n       int
	err     error // a PutRecords that failed for good
}

func (w *leaseWriter) run(ctx context.Context, c *kinesis.Client, stream string, stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("key-%d", n%8)
		p := fmt.Sprintf("%s#%d", key, len(w.written[key]))
		if err := putAll(ctx, c, stream, []types.PutRecordsRequestEntry{{PartitionKey: aws.String(key), Data: []byte(p)}}); err != nil {
			w.err = err
			return
		}
		w.written[key] = append(w.written[key], p)
		w.n++
	}
}

// waitForAll waits until the union of what the workers printed holds every
// record written.
func waitForAll(procs map[string][]*tailProc, want int) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := map[string]bool{}
		for _, runs := range procs {
			for _, p := range runs {
				for _, l := range p.snapshot() {
					got[l.Data] = true
				}
			}
		}
		if len(got) >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leases: %d of %d records printed 3 minutes after the writes stopped", len(got), want)
		}
		time.Sleep(time.Second)
	}
}

// stopWorkers interrupts the running workers and collects every run's
// lines; each run must have ended as it was stopped (a killed run by
// SIGKILL, the others by Ctrl-C: exit 130).
func stopWorkers(procs map[string][]*tailProc, st *leaseStats) ([]stampedLine, error) {
	for _, runs := range procs {
		runs[len(runs)-1].cmd.Process.Signal(syscall.SIGINT)
	}
	var all []stampedLine
	for id, runs := range procs {
		for i, p := range runs {
			lines, arrived := p.wait()
			status := p.status()
			st.statuses[status]++
			want := "exit 130"
			if i < len(runs)-1 {
				want = "SIGKILL"
			}
			if status != want {
				return nil, fmt.Errorf("leases: worker %s run %d ended with %s, not %s\n%s", id, i+1, status, want, p.stderrTail())
			}
			st.pauses += strings.Count(p.stderr.String(), "reading stops until it answers")
			st.perWorker[id] += len(lines)
			for j, l := range lines {
				all = append(all, stampedLine{l, arrived[j], id})
			}
		}
	}
	return all, nil
}

type stampedLine struct {
	line
	at     time.Time
	worker string
}

// checkLeaseLines checks the union of the workers' lines: every record,
// each key in order (allowing replays), and no shard printed by a worker
// more than a lease duration after another worker began printing it.
func checkLeaseLines(all []stampedLine, written map[string][]string, st *leaseStats) error {
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	seen := map[string]bool{}
	next := map[string]int{}
	for _, l := range all {
		st.delivered++
		if seen[l.Data] {
			st.replays++
		}
		seen[l.Data] = true
		n := index(l.Data)
		switch {
		case n == next[l.PartitionKey]:
			next[l.PartitionKey]++
		case n < next[l.PartitionKey]: // a replay after a takeover
		default:
			return fmt.Errorf("leases: key %s: #%d printed (by %s at %s) before #%d", l.PartitionKey, n, l.worker, l.at.Format("15:04:05.000"), next[l.PartitionKey])
		}
	}
	for k, ps := range written {
		for _, p := range ps {
			if !seen[p] {
				return fmt.Errorf("leases: key %s: %s was never delivered", k, p)
			}
		}
	}
	// Per shard: two workers reading it at once. A line of X at t, when
	// another worker Y began printing the shard after X's line before it
	// (at b) and Y prints it again after t, means both were reading from b
	// to t. That may last until X notices the takeover, within its lease
	// duration; never longer. (A worker that takes a shard back after the
	// other stopped is not reading at once with it.)
	byShard := map[string][]stampedLine{}
	for _, l := range all {
		byShard[l.ShardID] = append(byShard[l.ShardID], l)
	}
	for shard, lines := range byShard {
		times := map[string][]time.Time{}
		for _, l := range lines {
			times[l.worker] = append(times[l.worker], l.at)
		}
		prev := map[string]time.Time{}
		for _, l := range lines {
			p, had := prev[l.worker]
			prev[l.worker] = l.at
			if !had {
				continue
			}
			for other, ts := range times {
				if other == l.worker || !ts[len(ts)-1].After(l.at) {
					continue
				}
				k := sort.Search(len(ts), func(k int) bool { return ts[k].After(p) })
				if k == len(ts) || !ts[k].Before(l.at) {
					continue
				}
				over := l.at.Sub(ts[k])
				st.maxOverlap = max(st.maxOverlap, over)
				if over > leaseDuration {
					return fmt.Errorf("leases: shard %s: %s printed at %s, %s after %s began printing it, and %s went on (lease duration %s)",
						shard, l.worker, l.at.Format("15:04:05.000"), over.Round(time.Millisecond), other, other, leaseDuration)
				}
			}
		}
	}
	return nil
}

func reshardStep(ctx context.Context, c *kinesis.Client, ref kstream.Ref, rng *rand.Rand, st *leaseStats) error {
	did, err := reshard(ctx, c, ref, rng)
	if err != nil {
		return fmt.Errorf("leases: reshard: %w", err)
	}
	if did == "split" {
		st.splits++
	} else {
		st.merges++
	}
	return nil
}

func startLeaseTail(bin string, env []string, stream, table, id string) (*tailProc, error) {
	return startProc(bin, env, "tail", stream, "--lease-table", table, "--create-lease-table", "--worker-id", id,
		"--lease-duration", leaseDuration.String(), "--relist-interval", "2s", "--checkpoint-interval", "1s")
}

func leaseFigures(st leaseStats, seed uint64, length time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Last lease-table soak run: %s, seed %d, %s of writes against kinesis-mock and dynalite (took %s).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), seed, length*10/12, st.took.Round(time.Second))
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| records written | %d |\n", st.written)
	ids := slices.Sorted(maps.Keys(st.perWorker))
	var per []string
	for _, id := range ids {
		per = append(per, fmt.Sprintf("%s %d", id, st.perWorker[id]))
	}
	fmt.Fprintf(&b, "| lines printed (all workers) | %d (%s) |\n", st.delivered, strings.Join(per, ", "))
	fmt.Fprintf(&b, "| printed again (after the kill -9, or a lease changing hands) | %d |\n", st.replays)
	fmt.Fprintf(&b, "| workers | %d, lease duration %s; %d kill -9 and restart |\n", leaseWorkers, leaseDuration, st.kills)
	fmt.Fprintf(&b, "| reshards | %d splits, %d merges |\n", st.splits, st.merges)
	fmt.Fprintf(&b, "| DynamoDB faults | %d outages answering 500 (3-4 s each), %d hang of %s (every call unanswered) |\n", st.outages, st.hangs, leaseDuration*3/2)
	fmt.Fprintf(&b, "| calls answered with a fault | %s |\n", firedText(st.fired))
	fmt.Fprintf(&b, "| readers stopped for want of renewals (warnings) | %d |\n", st.pauses)
	fmt.Fprintf(&b, "| longest two workers printed one shard at once | %s (bound: the lease duration, %s) |\n", st.maxOverlap.Round(time.Millisecond), leaseDuration)
	var ss []string
	for _, k := range slices.Sorted(maps.Keys(st.statuses)) {
		ss = append(ss, fmt.Sprintf("%s %d", k, st.statuses[k]))
	}
	fmt.Fprintf(&b, "| worker exit statuses | %s |\n", strings.Join(ss, ", "))
	fmt.Fprintf(&b, "| result | every record delivered, each key in order across workers, no shard read by two workers past a lease duration |\n")
	return b.String()
}

func firedText(fired map[string]int) string {
	var f []string
	for _, k := range slices.Sorted(maps.Keys(fired)) {
		f = append(f, fmt.Sprintf("%s %d", k, fired[k]))
	}
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, ", ")
}
