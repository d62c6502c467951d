package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

func main() {
	bin := flag.String("bin", "bin/kinesis-shards", "the kinesis-shards binary")
	duration := flag.Duration("duration", 10*time.Minute, "how long to write, reshard and restart")
	rate := flag.Int("rate", 20, "records per second written")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the faults and the schedule (printed, to replay)")
	report := flag.String("report", "docs/RELIABILITY.md", "file whose soak sections are replaced with the figures (\"\" = none)")
	leasePhase := flag.Duration("lease-phase", 3*time.Minute, "how long the lease-table phase runs (0 = skip it)")
	fileMode := flag.Bool("file-phase", true, "run the checkpoint-file phase")
	flag.Parse()
	if err := runAll(*bin, *duration, *rate, *seed, *report, *fileMode, *leasePhase); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAIL:", err)
		os.Exit(1)
	}
}

// runAll runs the checkpoint-file phase, then the lease-table phase.
func runAll(bin string, duration time.Duration, rate int, seed uint64, report string, fileMode bool, leasePhase time.Duration) error {
	if fileMode {
		if err := run(bin, duration, rate, seed, report); err != nil {
			return err
		}
	}
	if leasePhase <= 0 {
		return nil
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	fmt.Printf("soak: lease-table phase, seed %d, %s\n", seed, leasePhase)
	e, err := emulator.Start(context.Background(), emulator.Options{StateDuration: 300 * time.Millisecond})
	if err != nil {
		return err
	}
	defer e.Stop()
	st, err := runLeasePhase(bin, e, seed, leasePhase)
	if err != nil {
		return err
	}
	text := leaseFigures(st, seed, leasePhase)
	fmt.Print(text)
	if report != "" {
		return writeSection(report, leaseBeginMark, leaseEndMark, text)
	}
	return nil
}

type line struct {
	ShardID        string `json:"shardId"`
	SequenceNumber string `json:"sequenceNumber"`
	PartitionKey   string `json:"partitionKey"`
	Data           string `json:"data"`
}

type stats struct {
	written, delivered, replays, restarts, kills, interrupts, splits, merges int
	maxCallsPerSecond                                                        int
	fired                                                                    map[string]int
	writeTime                                                                time.Duration  // from the first write due to the writer's stop
	statuses                                                                 map[string]int // how the runs ended, as observed
	maxReplay, maxReplayBound, maxReplayRun                                  int
	maxReplayAfter                                                           string // how the run before the largest replay was stopped
}

// How a run is stopped, and the only way it may end.
const (
	stopKill      = "kill -9"
	stopInterrupt = "Ctrl-C"
	stopDrain     = "final drain"
)

// expectedStatus is the status a run stopped that way must end with: kill -9
// ends it by the signal; Ctrl-C makes tail save the checkpoint and exit 130
// (its documented interrupted code); the drain runs with --idle-exit, which
// exits 0. The runs that are stopped get no --idle-exit or --max-records, so
// a 0 from them is not a documented end: tail follows the stream forever.
var expectedStatus = map[string]string{stopKill: "SIGKILL", stopInterrupt: "exit 130", stopDrain: "exit 0"}

// The checkpoint window. tail is run with --checkpoint-interval
// checkpointInterval, so a kill -9 loses at most the records printed since
// the last tick's save: those of the last checkpointInterval, plus
// replayGrace for a tick the busy loop took late and the save's own write
// on a loaded machine, plus replaySlack records in flight. Ctrl-C saves at
// exit, so nothing the interrupted run printed may be printed again.
const (
	checkpointInterval = time.Second
	replayGrace        = 500 * time.Millisecond
	replaySlack        = 5
)

func run(bin string, duration time.Duration, rate int, seed uint64, report string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	started := time.Now()
	ctx := context.Background()
	fmt.Printf("soak: seed %d, %s, %d records/s\n", seed, duration, rate)
	e, err := emulator.Start(ctx, emulator.Options{StateDuration: 300 * time.Millisecond})
	if err != nil {
		return err
	}
	defer e.Stop()
	inj := faults.New(seed,
		faults.Rule{Op: "GetRecords", Kind: faults.Throttle, Prob: 0.05},
		faults.Rule{Op: "GetRecords", Kind: faults.ExpiredIterator, Prob: 0.02},
		faults.Rule{Op: "GetRecords", Kind: faults.InternalFailure500, Prob: 0.02},
		faults.Rule{Op: "GetRecords", Kind: faults.DropResponse, Prob: 0.01},
		faults.Rule{Op: "GetShardIterator", Kind: faults.Throttle, Prob: 0.05},
		faults.Rule{Op: "ListShards", Kind: faults.LimitExceeded, Prob: 0.05},
		faults.Rule{Op: "DescribeStreamSummary", Kind: faults.Unavailable503, Prob: 0.05},
	)
	proxy, err := inj.StartProxy(e.Endpoint)
	if err != nil {
		return err
	}
	defer proxy.Close()

	c := kinesis.New(e.ClientOptions())
	stream := fmt.Sprintf("soak-%d", seed%100000)
	ref := kstream.Ref{Name: stream}
	if _, err := kstream.Ensure(ctx, c, ref, kstream.Spec{Shards: 2}, kstream.WaitOptions{}); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kinesis-shards-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := append(e.Env(), "AWS_ENDPOINT_URL_KINESIS="+proxy.URL, "XDG_STATE_HOME="+dir)
	checkpoint := filepath.Join(dir, "soak.checkpoint.json")

	s := &fileSoak{bin: bin, env: env, stream: stream, checkpoint: checkpoint, c: c, started: started,
		written: map[string][]string{}, st: stats{statuses: map[string]int{}}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.write(ctx, rate, stop) })
	wg.Go(func() { s.reshards(ctx, ref, seed, stop) })
	runs, err := s.runTails(time.Now().Add(duration), rand.New(rand.NewPCG(seed, 1)))
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if s.putErr != nil {
		return fmt.Errorf("a PutRecords call failed after its retries, so the records written cannot all be told apart: %w", s.putErr)
	}
	if runs, err = s.drain(runs); err != nil {
		return err
	}
	if err := verifyRuns(runs, s.written, &s.st); err != nil {
		return err
	}
	st := s.st
	st.fired = inj.Fired()
	for _, ts := range inj.GetRecordsCalls() {
		st.maxCallsPerSecond = max(st.maxCallsPerSecond, faults.MaxCallsInWindow(ts, time.Second))
	}
	if st.maxCallsPerSecond > 5 {
		return fmt.Errorf("a shard got %d GetRecords in one second", st.maxCallsPerSecond)
	}
	text := figures(st, seed, duration, rate, time.Since(started))
	fmt.Print(text)
	if report != "" {
		return writeReport(report, text)
	}
	return nil
}

// fileSoak is the checkpoint-file phase's shared state: what was written
// (under mu) and the figures.
type fileSoak struct {
	bin, stream, checkpoint string
	env                     []string
	c                       *kinesis.Client
	started                 time.Time

	mu      sync.Mutex
	written map[string][]string
	st      stats
	// putErr: a PutRecords that failed for good. Part of it may be stored,
	// under payloads the next records would reuse, so the writer stops and
	// the soak fails rather than judge the order of records it cannot tell
	// apart.
	putErr error
}

// write: records fall due at rate per second since the start and are
// written as they fall due, keys taken round-robin. (A tick per key at
// rate/keys rounded 20/s over 16 keys down to 16/s.) One record per key per
// call keeps each key in write order: putAll retries only the failed
// entries, which would put a key's later record before its earlier one.
// Calls are sequential, so a key's calls are in write order too.
func (s *fileSoak) write(ctx context.Context, rate int, stop <-chan struct{}) {
	const keys = 16
	tick := time.NewTicker(100 * time.Millisecond) // spreads the records over the second
	defer tick.Stop()
	begin := time.Now()
	defer func() {
		s.mu.Lock()
		s.st.writeTime = time.Since(begin)
		s.mu.Unlock()
	}()
	sent, next := 0, 0
	for {
		due := int(float64(rate) * time.Since(begin).Seconds())
		if sent >= due {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			continue
		}
		// Behind (slow puts): catch up a call at a time, but still stop.
		select {
		case <-stop:
			return
		default:
		}
		var recs []types.PutRecordsRequestEntry
		s.mu.Lock()
		for range min(due-sent, keys) {
			key := fmt.Sprintf("key-%02d", next)
			next = (next + 1) % keys
			p := fmt.Sprintf("%s#%d", key, len(s.written[key]))
			recs = append(recs, types.PutRecordsRequestEntry{PartitionKey: aws.String(key), Data: []byte(p)})
		}
		s.mu.Unlock()
		// Counted as sent even when the put fails: the shortfall shows
		// in the achieved rate instead of as a burst after it.
		sent += len(recs)
		if err := putAll(ctx, s.c, s.stream, recs); err != nil {
			s.mu.Lock()
			s.putErr = err
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		for _, r := range recs {
			s.written[*r.PartitionKey] = append(s.written[*r.PartitionKey], string(r.Data))
			s.st.written++
		}
		s.mu.Unlock()
	}
}

// reshards splits or merges every 20-40 s.
func (s *fileSoak) reshards(ctx context.Context, ref kstream.Ref, seed uint64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 2))
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(20+rng.IntN(20)) * time.Second):
		}
		did, err := reshard(ctx, s.c, ref, rng)
		if err != nil {
			fmt.Println("soak: reshard:", err)
			continue
		}
		s.mu.Lock()
		if did == "split" {
			s.st.splits++
		} else if did == "merge" {
			s.st.merges++
		}
		s.mu.Unlock()
		fmt.Printf("soak: %s at %s\n", did, time.Since(s.started).Round(time.Second))
	}
}

// runTails runs tail, kills (-9) or interrupts it after 20-60 s and
// restarts it, until the deadline.
func (s *fileSoak) runTails(deadline time.Time, rng *rand.Rand) ([]*tailRun, error) {
	// Tail runner: run, then kill -9 or Ctrl-C after 20-60 s, restart. Each
	// run must end the way it was stopped (expectedStatus): a run that dies
	// on its own, with any status, is a failure, not a kill or a Ctrl-C.
	var runs []*tailRun
	for time.Now().Before(deadline) {
		if len(runs) > 0 {
			// GetRecords pacing is per process: a tail restarted at once
			// could call a shard within the same second as the calls its
			// predecessor made just before it stopped, and the soak counts
			// both against the shard's five a second.
			time.Sleep(time.Second)
		}
		p, err := startTail(s.bin, s.env, s.stream, s.checkpoint)
		if err != nil {
			return runs, err
		}
		r := &tailRun{n: len(runs) + 1, proc: p}
		life := time.Duration(20+rng.IntN(40)) * time.Second
		select {
		case <-time.After(min(life, time.Until(deadline)+time.Second)):
		case <-p.done:
			p.wait()
			return runs, fmt.Errorf("tail run %d ended on its own after %s, before it was stopped: %s\n%s",
				r.n, time.Since(p.started).Round(time.Millisecond), p.status(), p.stderrTail())
		}
		r.how = stopInterrupt
		if rng.IntN(2) == 0 {
			r.how = stopKill
		}
		r.stopped = time.Now()
		// An error here means it had already exited: its status says how.
		if r.how == stopKill {
			p.cmd.Process.Kill()
		} else {
			p.cmd.Process.Signal(syscall.SIGINT)
		}
		r.lines, r.arrived = p.wait()
		runs = append(runs, r)
		if err := r.check(); err != nil {
			return runs, err
		}
		s.st.statuses[p.status()]++
		switch p.status() {
		case expectedStatus[stopKill]:
			s.st.kills++
		case expectedStatus[stopInterrupt]:
			s.st.interrupts++
		}
		s.st.restarts++
		fmt.Printf("soak: tail run %d printed %d lines, %s: %s (%s)\n", r.n, len(r.lines), r.how, p.status(), time.Since(s.started).Round(time.Second))
	}
	return runs, nil
}

// drain reads the rest with a last run.
func (s *fileSoak) drain(runs []*tailRun) ([]*tailRun, error) {
	// Drain the rest, within a bound: a tail that never goes idle fails
	// the soak instead of hanging it.
	time.Sleep(time.Second)
	p, err := startTail(s.bin, s.env, s.stream, s.checkpoint, "--idle-exit", "5s")
	if err != nil {
		return nil, err
	}
	drain := &tailRun{n: len(runs) + 1, proc: p, how: stopDrain}
	select {
	case <-p.done:
	case <-time.After(5 * time.Minute):
		p.cmd.Process.Kill()
		p.wait()
		return nil, fmt.Errorf("the final drain (tail --idle-exit 5s) did not end within 5 minutes: %s\n%s", p.status(), p.stderrTail())
	}
	drain.lines, drain.arrived = p.wait()
	drain.stopped = time.Now()
	runs = append(runs, drain)
	if err := drain.check(); err != nil {
		return nil, err
	}
	s.st.statuses[p.status()]++
	fmt.Printf("soak: tail run %d printed %d lines, %s: %s (%s)\n", drain.n, len(drain.lines), drain.how, p.status(), time.Since(s.started).Round(time.Second))

	return runs, nil
}

// verifyRuns checks every record was delivered, each key in order in every
// run, and replays stayed within the checkpoint window.
func verifyRuns(runs []*tailRun, written map[string][]string, st *stats) error {
	// Verify. unsaved holds what the checkpoint may not cover when a run
	// ends: the records of a killed run's last window, and those an earlier
	// run left uncovered that this run did not print again (the shard's
	// position cannot pass a record without printing it; a run killed
	// before reaching them leaves them to the next). A restart may print
	// again only those, plus the slack.
	seen := map[string]bool{}
	unsaved := map[string]bool{}
	st.maxReplay, st.maxReplayBound = -1, 0
	for i, r := range runs {
		last := map[string]int{}
		printed := map[string]bool{}
		replayed := 0
		for _, l := range r.lines {
			st.delivered++
			if seen[l.Data] {
				replayed++
			}
			seen[l.Data] = true
			printed[l.Data] = true
			n := index(l.Data)
			if prev, ok := last[l.PartitionKey]; ok && n != prev+1 {
				return fmt.Errorf("run %d: key %s went from #%d to #%d", r.n, l.PartitionKey, prev, n)
			}
			last[l.PartitionKey] = n
		}
		st.replays += replayed
		if i > 0 {
			before := runs[i-1]
			bound := len(unsaved)
			if before.how == stopKill {
				bound += replaySlack
			}
			if replayed > bound {
				return fmt.Errorf("tail run %d printed again %d records already printed, more than the %d the checkpoint window allows after run %d's %s "+
					"(%d the checkpoint may not cover: printed in the last %s before a kill -9, or left uncovered by earlier runs; slack %d)",
					r.n, replayed, bound, before.n, before.how, len(unsaved), checkpointInterval+replayGrace, bound-len(unsaved))
			}
			if replayed > st.maxReplay {
				st.maxReplay, st.maxReplayBound, st.maxReplayRun, st.maxReplayAfter = replayed, bound, r.n, before.how
			}
		}
		next := map[string]bool{}
		for d := range unsaved {
			if !printed[d] {
				next[d] = true
			}
		}
		if r.how == stopKill {
			from := r.stopped.Add(-(checkpointInterval + replayGrace))
			for j, l := range r.lines {
				if !r.arrived[j].Before(from) {
					next[l.Data] = true
				}
			}
		}
		unsaved = next
	}
	for k, ps := range written {
		for _, p := range ps {
			if !seen[p] {
				return fmt.Errorf("key %s: %s was never delivered", k, p)
			}
		}
	}
	return nil
}

func index(p string) int {
	i := strings.LastIndexByte(p, '#')
	var n int
	fmt.Sscanf(p[i+1:], "%d", &n)
	return n
}

func putAll(ctx context.Context, c *kinesis.Client, stream string, recs []types.PutRecordsRequestEntry) error {
	pending := recs
	for attempt := 0; attempt < 10 && len(pending) > 0; attempt++ {
		out, err := c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: pending})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		var failed []types.PutRecordsRequestEntry
		for i, r := range out.Records {
			if r.ErrorCode != nil {
				failed = append(failed, pending[i])
			}
		}
		pending = failed
	}
	if len(pending) > 0 {
		return fmt.Errorf("%d records not written", len(pending))
	}
	return nil
}

func reshard(ctx context.Context, c *kinesis.Client, ref kstream.Ref, rng *rand.Rand) (string, error) {
	shards, err := lineage.ListShards(ctx, c, lineage.ListOptions{StreamName: ref.Name})
	if err != nil {
		return "", err
	}
	g, err := lineage.Build(shards)
	if err != nil {
		return "", err
	}
	open := g.Open()
	var did string
	if len(open) < 3 || (len(open) < 6 && rng.IntN(2) == 0) {
		s := open[rng.IntN(len(open))]
		_, err = c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(ref.Name), ShardToSplit: aws.String(s.ID),
			NewStartingHashKey: aws.String(s.Range.Midpoint().String())})
		did = "split"
	} else {
		i := rng.IntN(len(open) - 1)
		_, err = c.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String(ref.Name),
			ShardToMerge: aws.String(open[i].ID), AdjacentShardToMerge: aws.String(open[i+1].ID)})
		did = "merge"
	}
	if err != nil {
		return "", err
	}
	_, err = kstream.WaitActive(ctx, c, ref, kstream.WaitOptions{})
	return did, err
}

// tailRun is one run of tail: how it was stopped, when, and what it printed
// with the time each line was read.
type tailRun struct {
	n       int
	how     string // stopKill, stopInterrupt or stopDrain
	proc    *tailProc
	stopped time.Time // when it was signalled (the drain: when it ended)
	lines   []line
	arrived []time.Time
}

// check fails unless the run ended with the status its stop calls for.
func (r *tailRun) check() error {
	if got, want := r.proc.status(), expectedStatus[r.how]; got != want {
		return fmt.Errorf("tail run %d (%s) ended with %s, not %s\n%s", r.n, r.how, got, want, r.proc.stderrTail())
	}
	return nil
}
