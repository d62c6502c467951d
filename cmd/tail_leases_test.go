package cmd

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kinesis-shards/kinesis-shards/internal/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
)

// arrival is a line with when the test read it (the worker wrote it).
type arrival struct {
	worker string
	line   tailLine
	at     time.Time
}

// mergedOutput collects the lines of several workers in arrival order.
type mergedOutput struct {
	mu   sync.Mutex
	seen map[*tailProc]int
	all  []arrival
}

func (m *mergedOutput) poll(procs map[string]*tailProc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for name, p := range procs {
		out := p.output()
		for _, l := range out[m.seen[p]:] {
			m.all = append(m.all, arrival{worker: name, line: l, at: now})
		}
		m.seen[p] = len(out)
	}
}

// Several `tail --lease-table` workers share one stream through a lease
// table on dynalite, while records and reshards keep coming and one
// worker is killed: every record is delivered, each key's records come out
// in order (allowing replays after the failover), parents before children
// across workers, and the live workers share the leases.
func TestTailLeaseWorkers(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	d := startDynalite(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 10, written: map[string][]string{}}
	table := "leases-" + stream
	env := append(tailEnv(e, t, ""), d.Env()...)
	args := func(id string) []string {
		return []string{stream, "--lease-table", table, "--create-lease-table", "--worker-id", id,
			"--lease-duration", "2s", "--relist-interval", "1s", "--poll-interval", "200ms", "--checkpoint-interval", "300ms"}
	}
	procs := map[string]*tailProc{}
	out := &mergedOutput{seen: map[*tailProc]int{}}
	stopPolling := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stopPolling:
				return
			case <-time.After(20 * time.Millisecond):
			}
			out.mu.Lock()
			ps := map[string]*tailProc{}
			for k, v := range procs {
				ps[k] = v
			}
			out.mu.Unlock()
			out.poll(ps)
		}
	})
	start := func(id string) {
		p := startTail(t, env, args(id)...)
		out.mu.Lock()
		procs[id] = p
		out.mu.Unlock()
	}

	w.round(3)
	start("a")
	time.Sleep(time.Second)
	start("b")
	time.Sleep(2 * time.Second)
	splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
	w.round(3)
	time.Sleep(time.Second)
	procs["a"].cmd.Process.Kill() // no Release: its leases must expire
	procs["a"].wait(t, 10*time.Second)
	start("c")
	mergeOpen(t, e, c, stream, 1)
	w.round(3)
	splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
	w.round(3)

	delivered := func() int {
		out.mu.Lock()
		defer out.mu.Unlock()
		seen := map[string]bool{}
		for _, a := range out.all {
			seen[a.line.Data] = true
		}
		return len(seen)
	}
	waitFor(t, 60*time.Second, "every record from the live workers", func() bool { return delivered() >= w.total() })

	// The live workers share the open shards' leases.
	dc := dynamodb.New(d.ClientOptions())
	waitFor(t, 20*time.Second, "b and c to share the leases", func() bool {
		ls, err := leases.Scan(context.Background(), dc, table)
		if err != nil {
			t.Fatal(err)
		}
		owners := map[string]int{}
		for _, l := range ls {
			if !l.Finished() {
				owners[l.Owner]++
			}
		}
		return owners["b"] > 0 && owners["c"] > 0 && owners["a"] == 0 && owners[""] == 0
	})

	for _, id := range []string{"b", "c"} {
		procs[id].cmd.Process.Signal(syscall.SIGINT)
	}
	for _, id := range []string{"b", "c"} {
		if code := procs[id].wait(t, 15*time.Second); code != 130 {
			t.Errorf("worker %s exit %d; stderr:\n%s", id, code, procs[id].errText())
		}
	}
	close(stopPolling)
	wg.Wait()
	out.poll(procs)

	// In arrival order across workers: each key in write order, replays
	// allowed (a taken-over shard resumes from its last checkpoint).
	var lines []tailLine
	workers := map[string]int{}
	for _, a := range out.all {
		lines = append(lines, a.line)
		workers[a.worker]++
	}
	w.check(lines, true)
	checkParentsFirstLines(t, c, stream, dedupe(lines))
	if workers["b"] == 0 || workers["c"] == 0 {
		t.Fatalf("lines per worker %v: the work was not shared", workers)
	}
	// Released at exit: nobody owns a lease now.
	ls, _ := leases.Scan(context.Background(), dc, table)
	var owned []string
	for _, l := range ls {
		if l.Owner != "" {
			owned = append(owned, l.ShardID+"="+l.Owner)
		}
	}
	sort.Strings(owned)
	if len(owned) > 0 {
		t.Fatalf("leases still owned after the workers exited: %v", owned)
	}
	t.Logf("lines per worker: %v for %d records", workers, w.total())
}

// dedupe keeps the first delivery of each record (for the parents-first
// check, which compares first and last positions).
func dedupe(lines []tailLine) []tailLine {
	seen := map[string]bool{}
	var out []tailLine
	for _, l := range lines {
		if !seen[l.Data] {
			seen[l.Data] = true
			out = append(out, l)
		}
	}
	return out
}

func TestTailLeaseTableRefusals(t *testing.T) {
	emulator.Require(t)
	for _, args := range [][]string{
		{"tail", "s", "--lease-table", "t1t", "--checkpoint", "x.json"},
		{"tail", "s", "--lease-table", "t1t", "--no-checkpoint"},
		{"tail", "s", "--lease-table", "t1t", "--key", "k"},
		{"tail", "s", "--lease-table", "x"},
		{"tail", "s", "--lease-table", "t1t", "--lease-duration", "10ms"},
		{"tail", "s", "--worker-id", "w"},
	} {
		res := runCLI(t, "", "", args...)
		if res.code != 2 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
	}
	// A missing table without --create-lease-table and without a terminal.
	d := startDynalite(t)
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	res := runCLIWithDynamo(t, d, "tail", stream, "--lease-table", "missing-table", "--idle-exit", "1s")
	if res.code != 1 || !strings.Contains(res.stderr, "lease table missing-table does not exist: pass --create-lease-table") {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	if ls, err := dynamodb.New(d.ClientOptions()).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil || slices.Contains(ls.TableNames, "missing-table") {
		t.Fatalf("the table was created anyway: %v %v", ls, err)
	}
}
