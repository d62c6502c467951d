// Command soak is `make soak`: minutes of continuous keyed writes, periodic
// splits and merges, and injected faults against kinesis-mock, while the real
// `kinesis-shards tail` binary runs and is killed (-9) or interrupted and
// restarted on one checkpoint file. At the end it drains the rest and checks
// every record was delivered, each key in write order in every run, and
// replays stayed within the checkpoint window. It prints the figures and
// writes them into docs/RELIABILITY.md between the soak markers.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/faults"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

func main() {
	bin := flag.String("bin", "bin/kinesis-shards", "the kinesis-shards binary")
	duration := flag.Duration("duration", 10*time.Minute, "how long to write, reshard and restart")
	rate := flag.Int("rate", 20, "records per second written")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the faults and the schedule (printed, to replay)")
	report := flag.String("report", "docs/RELIABILITY.md", "file whose soak section is replaced with the figures (\"\" = none)")
	flag.Parse()
	if err := run(*bin, *duration, *rate, *seed, *report); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAIL:", err)
		os.Exit(1)
	}
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
}

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

	rng := rand.New(rand.NewPCG(seed, 1))
	var (
		mu      sync.Mutex
		written = map[string][]string{}
		st      = stats{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup

	// Writer: one record per key per call keeps each key in write order.
	wg.Go(func() {
		keys := 16
		n := 0
		tick := time.NewTicker(time.Second / time.Duration(max(rate/keys, 1)))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var recs []types.PutRecordsRequestEntry
			mu.Lock()
			for k := range keys {
				key := fmt.Sprintf("key-%02d", k)
				p := fmt.Sprintf("%s#%d", key, len(written[key]))
				recs = append(recs, types.PutRecordsRequestEntry{PartitionKey: aws.String(key), Data: []byte(p)})
			}
			mu.Unlock()
			if err := putAll(ctx, c, stream, recs); err != nil {
				fmt.Println("soak: put:", err)
				continue
			}
			mu.Lock()
			for _, r := range recs {
				written[*r.PartitionKey] = append(written[*r.PartitionKey], string(r.Data))
				st.written++
			}
			mu.Unlock()
			n++
		}
	})

	// Resharder: a split or a merge every 20-40 s.
	reshardRNG := rand.New(rand.NewPCG(seed, 2))
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+reshardRNG.IntN(20)) * time.Second):
			}
			did, err := reshard(ctx, c, ref, reshardRNG)
			if err != nil {
				fmt.Println("soak: reshard:", err)
				continue
			}
			mu.Lock()
			if did == "split" {
				st.splits++
			} else if did == "merge" {
				st.merges++
			}
			mu.Unlock()
			fmt.Printf("soak: %s at %s\n", did, time.Since(started).Round(time.Second))
		}
	})

	// Tail runner: run, then kill -9 or Ctrl-C after 20-60 s, restart.
	var runs [][]line
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		p, err := startTail(bin, env, stream, checkpoint)
		if err != nil {
			return err
		}
		life := time.Duration(20+rng.IntN(40)) * time.Second
		time.Sleep(min(life, time.Until(deadline)+time.Second))
		if rng.IntN(2) == 0 {
			p.cmd.Process.Kill()
			st.kills++
		} else {
			p.cmd.Process.Signal(syscall.SIGINT)
			st.interrupts++
		}
		out := p.wait()
		runs = append(runs, out)
		st.restarts++
		fmt.Printf("soak: tail run %d printed %d lines (%s)\n", len(runs), len(out), time.Since(started).Round(time.Second))
	}
	close(stop)
	wg.Wait()

	// Drain the rest.
	p, err := startTail(bin, env, stream, checkpoint, "--idle-exit", "5s")
	if err != nil {
		return err
	}
	runs = append(runs, p.wait())
	if p.err != nil {
		return fmt.Errorf("final tail: %v\n%s", p.err, p.stderr.String())
	}

	// Verify.
	seen := map[string]bool{}
	for i, out := range runs {
		last := map[string]int{}
		for _, l := range out {
			st.delivered++
			if seen[l.Data] {
				st.replays++
			}
			seen[l.Data] = true
			n := index(l.Data)
			if prev, ok := last[l.PartitionKey]; ok && n != prev+1 {
				return fmt.Errorf("run %d: key %s went from #%d to #%d", i+1, l.PartitionKey, prev, n)
			}
			last[l.PartitionKey] = n
		}
	}
	for k, ps := range written {
		for _, p := range ps {
			if !seen[p] {
				return fmt.Errorf("key %s: %s was never delivered", k, p)
			}
		}
	}
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

type tailProc struct {
	cmd    *exec.Cmd
	lines  []line
	stderr strings.Builder
	done   chan struct{}
	err    error
}

func startTail(bin string, env []string, stream, checkpoint string, extra ...string) (*tailProc, error) {
	args := append([]string{"tail", stream, "--checkpoint", checkpoint, "--relist-interval", "2s", "--checkpoint-interval", "1s"}, extra...)
	p := &tailProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				p.lines = append(p.lines, l)
			}
		}
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok && (ee.ExitCode() == 130 || ee.ExitCode() == -1) {
			err = nil // interrupted or killed on purpose
		}
		p.err = err
		close(p.done)
	}()
	return p, nil
}

func (p *tailProc) wait() []line {
	<-p.done
	return slices.Clone(p.lines)
}

func figures(st stats, seed uint64, duration time.Duration, rate int, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Last soak run: %s, seed %d, %s of writes at %d records/s against kinesis-mock (took %s).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), seed, duration, rate, took.Round(time.Second))
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| records written | %d |\n| lines printed (all runs) | %d |\n| replayed after restarts | %d |\n", st.written, st.delivered, st.replays)
	fmt.Fprintf(&b, "| tail runs | %d (%d kill -9, %d Ctrl-C, 1 final drain) |\n", st.restarts+1, st.kills, st.interrupts)
	fmt.Fprintf(&b, "| reshards | %d splits, %d merges |\n", st.splits, st.merges)
	fmt.Fprintf(&b, "| most GetRecords on one shard in any second | %d |\n", st.maxCallsPerSecond)
	keys := make([]string, 0, len(st.fired))
	for k := range st.fired {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var f []string
	for _, k := range keys {
		f = append(f, fmt.Sprintf("%s %d", k, st.fired[k]))
	}
	fmt.Fprintf(&b, "| faults injected | %s |\n", strings.Join(f, ", "))
	fmt.Fprintf(&b, "| result | every record delivered, each key in order in every run |\n")
	return b.String()
}

const (
	beginMark = "<!-- soak:begin -->"
	endMark   = "<!-- soak:end -->"
)

func writeReport(path, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s … %s section", path, beginMark, endMark)
	}
	s = s[:i+len(beginMark)] + "\n" + text + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
