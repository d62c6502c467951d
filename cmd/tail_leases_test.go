package cmd

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
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
// table on dynalite, while records and reshards keep coming: two, then
// three (one lease each), then one of the three is killed: every record is delivered, each key's records come out
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
	// A third worker: three open shards, one lease each once balanced.
	start("c")
	dc := dynamodb.New(d.ClientOptions())
	const handing = " handing over" // not a worker id
	owners := func() map[string]int {
		ls, err := leases.Scan(context.Background(), dc, table)
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, l := range ls {
			if !l.Finished() {
				n[l.Owner]++
				if l.CheckpointOwner != "" {
					// Being handed over (KCL 3): Owner is the taker, and
					// CheckpointOwner still reads it until it hands off.
					n[handing]++
				}
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "a, b and c to hold a lease each", func() bool {
		n := owners()
		return n["a"] == 1 && n["b"] == 1 && n["c"] == 1
	})
	procs["a"].cmd.Process.Kill() // no Release: its leases must expire
	procs["a"].wait(t, 10*time.Second)
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
	waitFor(t, 20*time.Second, "b and c to share the leases, none of them still being handed over", func() bool {
		n := owners()
		return n["b"] > 0 && n["c"] > 0 && n["a"] == 0 && n[""] == 0 && n[handing] == 0
	})
	// A last round, now that b and c hold the open shards between them:
	// every open shard takes one of the keys, so each live worker prints
	// some of it (before, a worker may have held only shards whose records
	// another had already read).
	g, err := lineage.Load(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range g.Open() {
		hit := false
		for k := range w.keys {
			hit = hit || sh.Range.Contains(lineage.PartitionKeyHash(fmt.Sprintf("key-%02d", k)))
		}
		if !hit {
			t.Fatalf("open shard %s holds none of the %d keys: the last round cannot reach its owner", sh.ID, w.keys)
		}
	}
	w.round(1)
	waitFor(t, 60*time.Second, "the last round", func() bool { return delivered() >= w.total() })

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

// A lease table belongs to one stream: after the stream is deleted and
// re-created under the same name, its old SHARD_END leases must not stop
// the new shards from being read, so the table is refused, unchanged.
func TestTailLeaseTableOfARecreatedStream(t *testing.T) {
	d := startDynalite(t)
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	e.Put(t, c, stream, []emulator.Rec{{PartitionKey: "k", Data: []byte("old")}})
	table := "leases-" + stream
	res := runCLIWithDynamo(t, d, "tail", stream, "--lease-table", table, "--create-lease-table", "--idle-exit", "1s", "-o", "json")
	if res.code != 0 || strings.Count(res.stdout, "\n") != 1 {
		t.Fatalf("first tail: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dc := dynamodb.New(d.ClientOptions())
	before, err := leases.Scan(context.Background(), dc, table)
	if err != nil || len(before) != 1 {
		t.Fatalf("leases %v %v", before, err)
	}

	if _, err := c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	e.WaitDeleted(t, c, stream)
	e.CreateStream(t, c, stream, 1)
	res = runCLIWithDynamo(t, d, "tail", stream, "--lease-table", table, "--idle-exit", "1s")
	want := "a stream deleted and re-created under the same name is another stream: use another --lease-table, or delete this one to start over"
	if res.code != 1 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, "error: lease table belongs to another stream: "+table+" holds the leases of ") || !strings.Contains(res.stderr, want) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", res.code, res.stdout, res.stderr)
	}
	after, err := leases.Scan(context.Background(), dc, table)
	if err != nil || len(after) != 1 || after[0].Counter != before[0].Counter || after[0].Checkpoint != before[0].Checkpoint {
		t.Fatalf("the table changed: %v -> %v (%v)", before, after, err)
	}
}
