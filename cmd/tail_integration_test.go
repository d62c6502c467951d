package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// tailLine is one JSON line of `tail`.
type tailLine struct {
	ShardID        string `json:"shardId"`
	SequenceNumber string `json:"sequenceNumber"`
	PartitionKey   string `json:"partitionKey"`
	ArrivalTime    string `json:"arrivalTime"`
	Data           string `json:"data"`
	Message        string `json:"message"` // a log event's (--cwlogs)
}

// tailProc is a running `kinesis-shards tail`.
type tailProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []tailLine
	stderr strings.Builder
	done   chan struct{}
	err    error
}

func startTail(t *testing.T, env []string, args ...string) *tailProc {
	t.Helper()
	p := &tailProc{cmd: exec.Command(binary(t), append([]string{"tail"}, args...)...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l tailLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				p.mu.Lock()
				p.stderr.WriteString("BAD LINE: " + sc.Text() + "\n")
				p.mu.Unlock()
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *tailProc) output() []tailLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

func (p *tailProc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for exit and returns the exit code.
func (p *tailProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("tail did not exit within %s; stderr:\n%s", timeout, p.errText())
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}

// waitFor polls until cond holds.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntil(timeout, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitUntil polls cond until it holds (true) or timeout passes (false).
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// keyedWriter writes numbered records per key and remembers the order.
type keyedWriter struct {
	t       *testing.T
	e       *emulator.Emulator
	c       *kinesis.Client
	stream  string
	keys    int
	written map[string][]string
}

func (w *keyedWriter) round(perKey int) {
	w.t.Helper()
	var recs []emulator.Rec
	for i := range perKey {
		_ = i
		for k := range w.keys {
			key := fmt.Sprintf("key-%02d", k)
			payload := fmt.Sprintf("%s#%d", key, len(w.written[key]))
			w.written[key] = append(w.written[key], payload)
			recs = append(recs, emulator.Rec{PartitionKey: key, Data: []byte(payload)})
		}
	}
	// One record per key per PutRecords call keeps each key in order even
	// when a call's entries are retried.
	for i := 0; i < len(recs); i += w.keys {
		w.e.Put(w.t, w.c, w.stream, recs[i:min(i+w.keys, len(recs))])
	}
}

func (w *keyedWriter) total() int {
	n := 0
	for _, v := range w.written {
		n += len(v)
	}
	return n
}

// check asserts every written record was delivered and each key's records
// came in write order; replays (after a crash) are allowed only when
// allowReplays.
func (w *keyedWriter) check(lines []tailLine, allowReplays bool) {
	w.t.Helper()
	got := map[string][]string{}
	for _, l := range lines {
		got[l.PartitionKey] = append(got[l.PartitionKey], l.Data)
	}
	for k, want := range w.written {
		seq := got[k]
		if !allowReplays && len(seq) != len(want) {
			w.t.Fatalf("key %s: %d records delivered, want %d exactly once", k, len(seq), len(want))
		}
		next := 0
		for _, d := range seq {
			switch {
			case next < len(want) && d == want[next]:
				next++
			case allowReplays && slices.Contains(want[:next], d):
			default:
				w.t.Fatalf("key %s: %s out of order after %d in order\n got %v", k, d, next, seq)
			}
		}
		if next != len(want) {
			w.t.Fatalf("key %s: %d of %d records delivered", k, next, len(want))
		}
	}
}

// checkParentsFirst asserts no child record was printed before the last
// record of each of its parents, within one run's output.
func checkParentsFirstLines(t *testing.T, c *kinesis.Client, stream string, lines []tailLine) {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	first, last := map[string]int{}, map[string]int{}
	for i, l := range lines {
		if _, ok := first[l.ShardID]; !ok {
			first[l.ShardID] = i
		}
		last[l.ShardID] = i
	}
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
			if p == nil {
				continue
			}
			if fc, ok := first[id]; ok {
				if lp, ok := last[*p]; ok && lp > fc {
					t.Fatalf("child %s printed at line %d before parent %s finished (line %d)", id, fc, *p, lp)
				}
			}
		}
	}
}

// reshard runs split/merge steps on the open shards, waiting for ACTIVE.
func splitShard(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream, shard string) {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	g, err := lineage.Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Shard(shard)
	k := s.Range.Midpoint()
	if _, err := c.SplitShard(context.Background(), &kinesis.SplitShardInput{StreamName: aws.String(stream), ShardToSplit: aws.String(shard), NewStartingHashKey: aws.String(k.String())}); err != nil {
		t.Fatalf("split %s: %v", shard, err)
	}
	e.WaitActive(t, c, stream)
}

func mergeOpen(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream string, i int) {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := lineage.Build(shards)
	open := g.Open()
	if _, err := c.MergeShards(context.Background(), &kinesis.MergeShardsInput{StreamName: aws.String(stream),
		ShardToMerge: aws.String(open[i].ID), AdjacentShardToMerge: aws.String(open[i+1].ID)}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	e.WaitActive(t, c, stream)
}

func openIDs(t *testing.T, c *kinesis.Client, stream string) []string {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := lineage.Build(shards)
	var ids []string
	for _, s := range g.Open() {
		ids = append(ids, s.ID)
	}
	return ids
}

func tailEnv(e *emulator.Emulator, t *testing.T, endpoint string) []string {
	env := e.Env()
	if endpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_KINESIS="+endpoint)
	}
	return append(env, "XDG_STATE_HOME="+t.TempDir())
}

// The tail follows splits and merges made while it runs: every record,
// each key in order, parents before children; Ctrl-C exits 130 with the
// checkpoint saved. Polling and subscribed (--efo).
func TestTailFollowsReshardsLive(t *testing.T) {
	for _, read := range tailReads {
		t.Run(read.name, func(t *testing.T) {
			e := emulator.Require(t)
			if !e.Caps.Reshard {
				t.Skipf("%s cannot reshard", e.Backend)
			}
			c := e.Client(t)
			stream := emulator.StreamName(t)
			e.CreateStream(t, c, stream, 2)
			endpoint, args := read.setup(t, e, c, stream)
			w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 12, written: map[string][]string{}}
			w.round(3)
			cp := filepath.Join(t.TempDir(), "cp.json")
			p := startTail(t, tailEnv(e, t, endpoint), args(stream, "--checkpoint", cp, "--relist-interval", "1s", "--poll-interval", "200ms")...)

			waitFor(t, 20*time.Second, "the first records", func() bool { return len(p.output()) >= w.total() })
			splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
			w.round(3)
			mergeOpen(t, e, c, stream, 1)
			w.round(3)
			splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
			w.round(3)
			waitFor(t, 30*time.Second, "every record", func() bool { return len(p.output()) >= w.total() })
			p.cmd.Process.Signal(syscall.SIGINT)
			if code := p.wait(t, 15*time.Second); code != 130 || !strings.HasSuffix("\n"+p.errText(), "\ninterrupted; checkpoint saved\n") {
				t.Fatalf("exit %d after SIGINT, want 130; stderr:\n%s", code, p.errText())
			}
			lines := p.output()
			w.check(lines, false)
			checkParentsFirstLines(t, c, stream, lines)
			b, err := os.ReadFile(cp)
			if err != nil || !strings.Contains(string(b), `"shardEnd": true`) {
				t.Fatalf("checkpoint after SIGINT: %v\n%s", err, b)
			}
		})
	}
}

// kill -9 at random moments while records and reshards keep coming; every
// restart resumes from the checkpoint: nothing lost, keys in order, replays
// bounded by what was printed since the last checkpoint. Polling,
// subscribed (--efo: a killed tail leaves its consumer, the next reuses
// it, the last deregisters it), and the two taking turns on one
// checkpoint file.
func TestTailKillAndResume(t *testing.T) {
	for _, mode := range []string{"polling", "efo", "taking turns"} {
		t.Run(mode, func(t *testing.T) {
			e := emulator.Require(t)
			if !e.Caps.Reshard {
				t.Skipf("%s cannot reshard", e.Backend)
			}
			c := e.Client(t)
			stream := emulator.StreamName(t)
			e.CreateStream(t, c, stream, 2)
			endpoint, efo := "", func(a ...string) []string { return a }
			if mode != "polling" {
				endpoint, efo = tailReads[1].setup(t, e, c, stream)
			}
			// Run i polls or subscribes (the shim passes polling calls
			// on); the last one subscribes, and deregisters the consumer
			// the killed ones left. A subscribed run is given longer
			// before its kill: kinesis-mock sends the first event a second
			// after the call, and refuses a consumer and shard for 1 to
			// 2 s after a killed run's subscription.
			subscribed := func(i int) bool { return mode == "efo" || (mode == "taking turns" && i%2 == 0) }
			argsOf := func(i int, a ...string) []string {
				if subscribed(i) {
					return efo(a...)
				}
				return a
			}
			w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 8, written: map[string][]string{}}
			cp := filepath.Join(t.TempDir(), "cp.json")
			env := tailEnv(e, t, endpoint)
			args := []string{stream, "--checkpoint", cp, "--relist-interval", "1s", "--poll-interval", "200ms", "--checkpoint-interval", "300ms"}
			rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
			var all []tailLine
			steps := []func(){
				func() { splitShard(t, e, c, stream, openIDs(t, c, stream)[0]) },
				func() { mergeOpen(t, e, c, stream, 0) },
				func() { splitShard(t, e, c, stream, openIDs(t, c, stream)[len(openIDs(t, c, stream))-1]) },
				func() {},
			}
			for i, step := range steps {
				w.round(4)
				p := startTail(t, env, argsOf(i, args...)...)
				step()
				w.round(2)
				d := time.Duration(300+rng.IntN(1500)) * time.Millisecond
				if subscribed(i) {
					d += 3 * time.Second
				}
				time.Sleep(d)
				p.cmd.Process.Kill()
				p.wait(t, 10*time.Second)
				all = append(all, p.output()...)
				t.Logf("run %d: %d lines before kill -9", i, len(p.output()))
			}
			// A last run drains the rest.
			p := startTail(t, env, argsOf(len(steps), append(args, "--idle-exit", "2s")...)...)
			if code := p.wait(t, 90*time.Second); code != 0 {
				t.Fatalf("final run exit %d; stderr:\n%s", code, p.errText())
			}
			all = append(all, p.output()...)
			w.check(all, true)
			if len(all) > 2*w.total() {
				t.Fatalf("%d lines for %d records: replays beyond the checkpoint window", len(all), w.total())
			}
		})
	}
}

func TestTailFromTip(t *testing.T) {
	for _, read := range tailReads {
		t.Run(read.name, func(t *testing.T) {
			e := emulator.Require(t)
			c := e.Client(t)
			stream := emulator.StreamName(t)
			e.CreateStream(t, c, stream, 2)
			endpoint, args := read.setup(t, e, c, stream)
			old := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 5, written: map[string][]string{}}
			old.round(2)
			p := startTail(t, tailEnv(e, t, endpoint), args(stream, "--from-tip", "--no-checkpoint", "--debug", "--poll-interval", "200ms")...)
			atTip := "iterator=LATEST status=200" // GetShardIterator
			if read.efo {
				atTip = " from LATEST\n" // a subscription
			}
			waitFor(t, 20*time.Second, "both readers at LATEST", func() bool {
				return strings.Count(p.errText(), atTip) >= 2
			})
			if read.efo {
				waitForSubscriptions(t, e, c, stream, p)
			}
			var fresh []emulator.Rec
			for i := range 6 {
				fresh = append(fresh, emulator.Rec{PartitionKey: fmt.Sprintf("new-%d", i), Data: []byte(fmt.Sprintf("new-%d", i))})
			}
			e.Put(t, c, stream, fresh)
			if !waitUntil(20*time.Second, func() bool { return len(p.output()) >= len(fresh) }) {
				t.Fatalf("timed out waiting for the new records: %d of %d printed; stderr:\n%s", len(p.output()), len(fresh), p.errText())
			}
			time.Sleep(500 * time.Millisecond)
			p.cmd.Process.Signal(syscall.SIGINT)
			if code := p.wait(t, 10*time.Second); code != 130 || !strings.HasSuffix("\n"+p.errText(), "\ninterrupted; nothing saved (--no-checkpoint)\n") {
				t.Fatalf("exit %d after SIGINT, want 130 and no claim of a checkpoint; stderr ends:\n%s", code, p.errText()[max(0, len(p.errText())-300):])
			}
			var got []string
			for _, l := range p.output() {
				if !strings.HasPrefix(l.Data, "probe-") {
					got = append(got, l.Data)
				}
			}
			slices.Sort(got)
			want := []string{"new-0", "new-1", "new-2", "new-3", "new-4", "new-5"}
			if !slices.Equal(got, want) {
				t.Fatalf("--from-tip printed %v, want only %v", got, want)
			}
		})
	}
}

// waitForSubscriptions waits until a subscribed tail of a two-shard stream
// prints records of both shards. kinesis-mock fixes a LATEST
// subscription's position at its first event (about a second after the
// call), not at the call as AWS does, so what is written before then is
// not "after the tip" there: probes (data "probe-N", one per shard, by
// explicit hash key) are written until each shard's reader shows one.
func waitForSubscriptions(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream string, p *tailProc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		seen := map[string]bool{}
		for _, l := range p.output() {
			if strings.HasPrefix(l.Data, "probe-") {
				seen[l.ShardID] = true
			}
		}
		if len(seen) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriptions printed no probe of %d shards in 30s; stderr:\n%s", 2-len(seen), p.errText())
		}
		e.Put(t, c, stream, []emulator.Rec{
			{PartitionKey: "probe", ExplicitHashKey: "0", Data: []byte(fmt.Sprintf("probe-%d", n))},
			{PartitionKey: "probe", ExplicitHashKey: "340282366920938463463374607431768211455", Data: []byte(fmt.Sprintf("probe-%d", n))},
		})
		time.Sleep(500 * time.Millisecond)
	}
}

func TestTailCreateIfMissingAndIdleExit(t *testing.T) {
	e := emulator.Require(t)
	stream := emulator.StreamName(t)
	start := time.Now()
	res := runBinary(t, tailEnv(e, t, ""), "", "tail", stream, "--create-if-missing", "3", "--idle-exit", "1s", "--no-checkpoint")
	if res.code != 0 || res.stdout != "" || !strings.Contains(res.stderr, "created stream "+stream) {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	t.Logf("created and idled out in %s", time.Since(start))
	c := e.Client(t)
	if ids := openIDs(t, c, stream); len(ids) != 3 {
		t.Fatalf("stream has %d open shards, want 3", len(ids))
	}
	t.Cleanup(func() {
		c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
	})
}

// Throttling, expired iterators, 500s and dropped connections through a
// proxy: nothing lost or repeated, keys in order, and never more than 5
// GetRecords per second on any shard.
func TestTailUnderFaults(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 10, written: map[string][]string{}}
	w.round(6)
	splitShard(t, e, c, stream, openIDs(t, c, stream)[1])
	w.round(6)
	mergeOpen(t, e, c, stream, 0)
	w.round(6)
	inj := faults.New(42,
		faults.Rule{Op: "GetRecords", Kind: faults.Throttle, Prob: 0.15},
		faults.Rule{Op: "GetRecords", Kind: faults.ExpiredIterator, Prob: 0.1},
		faults.Rule{Op: "GetRecords", Kind: faults.InternalFailure500, Prob: 0.1},
		faults.Rule{Op: "GetRecords", Kind: faults.Unavailable503, Prob: 0.05},
		faults.Rule{Op: "GetRecords", Kind: faults.DropResponse, Prob: 0.05},
		faults.Rule{Op: "GetShardIterator", Kind: faults.Throttle, Prob: 0.1},
		faults.Rule{Op: "ListShards", Kind: faults.LimitExceeded, Prob: 0.2},
	)
	proxy := inj.Proxy(t, e.Endpoint)
	res := runBinary(t, tailEnv(e, t, proxy.URL), "", "tail", stream, "--no-checkpoint", "--idle-exit", "3s", "--poll-interval", "200ms", "--relist-interval", "1s")
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.stderr)
	}
	var lines []tailLine
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("bad line %q", l)
		}
		lines = append(lines, tl)
	}
	w.check(lines, false)
	checkParentsFirstLines(t, c, stream, lines)
	fired := inj.Fired()
	if fired["GetRecords/Throttle"] == 0 || fired["GetRecords/ExpiredIterator"] == 0 || fired["GetRecords/InternalFailure500"] == 0 {
		t.Fatalf("faults did not fire: %v", fired)
	}
	for shard, ts := range inj.GetRecordsCalls() {
		if n := faults.MaxCallsInWindow(ts, time.Second); n > 5 {
			t.Fatalf("shard %s: %d GetRecords in one second", shard, n)
		}
	}
	t.Logf("faults fired: %v", fired)
}

var _ = big.NewInt
var _ = types.StreamStatusActive

// A checkpoint file written by a --key run is refused by an unfiltered run
// (which would skip the shards the --key run ended, and the other keys'
// records with them): one line, a non-zero exit, nothing printed, and the
// file exactly as it was.
func TestTailCheckpointFilterRefused(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	w := &keyedWriter{t: t, e: e, c: c, stream: stream, keys: 4, written: map[string][]string{}}
	w.round(2)
	cp := filepath.Join(t.TempDir(), "cp.json")
	env := tailEnv(e, t, "")
	res := runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--key", "key-01", "--idle-exit", "1s")
	if res.code != 0 || strings.Count(res.stdout, "\n") != 2 {
		t.Fatalf("--key run: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	before, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--key", "key-02"}} {
		res = runBinary(t, env, "", append([]string{"tail", stream, "--checkpoint", cp, "--idle-exit", "1s"}, args...)...)
		if res.code != 1 || res.stdout != "" || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 ||
			!strings.Contains(res.stderr, "was written by a tail with --key key-01") {
			t.Fatalf("run with %v on a --key key-01 file: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
		if after, _ := os.ReadFile(cp); string(after) != string(before) {
			t.Fatalf("the refused file changed:\n%s\nwas\n%s", after, before)
		}
	}
	// A --filter run moves its positions past the records it drops: the
	// same holds for its file.
	cp = filepath.Join(t.TempDir(), "cp.json")
	keep := `.partitionKey == "key-01"`
	res = runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--filter", keep, "--idle-exit", "1s")
	if res.code != 0 || strings.Count(res.stdout, "\n") != 2 {
		t.Fatalf("--filter run: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if before, err = os.ReadFile(cp); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--filter", "true"}, {"--jq", keep}} {
		res = runBinary(t, env, "", append([]string{"tail", stream, "--checkpoint", cp, "--idle-exit", "1s"}, args...)...)
		if res.code != 1 || res.stdout != "" || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 ||
			!strings.Contains(res.stderr, "was written by a tail with --filter "+strconv.Quote(keep)) {
			t.Fatalf("run with %v on a --filter file: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
		if after, _ := os.ReadFile(cp); string(after) != string(before) {
			t.Fatalf("the refused file changed:\n%s\nwas\n%s", after, before)
		}
	}
	if res = runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--filter", keep, "--idle-exit", "1s"); res.code != 0 || res.stdout != "" {
		t.Fatalf("the same --filter again: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
