package cmd

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// TestLeaseHandOffDuplicates measures what two `tail --lease-table` workers
// print twice over a 4-shard stream: when the second joins half a second
// after the first (it asks for its share, and the first hands each lease
// over at the last record it wrote), when one leaves with Ctrl-C (it
// checkpoints and releases), and when one dies with kill -9 (its leases
// expire and the other goes on from their last checkpoints). Joining and
// Ctrl-C must replay (close to) nothing; kill -9 at most what the dead
// worker wrote since its last checkpoint. The figures are logged for
// docs/RELIABILITY.md.
func TestLeaseHandOffDuplicates(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	d := startDynalite(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 4)
	table := "leases-" + stream
	env := append(tailEnv(e, t, ""), d.Env()...)
	args := func(id string) []string {
		return []string{stream, "--lease-table", table, "--create-lease-table", "--worker-id", id,
			"--lease-duration", "3s", "--poll-interval", "200ms", "--checkpoint-interval", "2s"}
	}
	n := 0
	write := func(count int) {
		var recs []emulator.Rec
		for range count {
			recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("k%d", n%97), Data: fmt.Appendf(nil, "r%06d", n)})
			n++
		}
		e.Put(t, c, stream, recs)
	}
	procs := map[string]*tailProc{}
	count := func() (lines, distinct int) {
		seen := map[string]bool{}
		for _, p := range procs {
			for _, l := range p.output() {
				lines++
				seen[l.Data] = true
			}
		}
		return lines, len(seen)
	}
	settle := func(what string) (dups int) {
		waitFor(t, 60*time.Second, what, func() bool { _, got := count(); return got == n })
		time.Sleep(2 * time.Second) // anything printed twice comes out by now
		lines, distinct := count()
		return lines - distinct
	}

	write(4000)
	procs["a"] = startTail(t, env, args("a")...)
	time.Sleep(500 * time.Millisecond)
	procs["b"] = startTail(t, env, args("b")...)
	joined := settle("every record once the second worker joined")
	// Both hold leases now; records keep coming to both.
	write(4000)
	before := settle("the second batch")
	procs["a"].cmd.Process.Signal(syscall.SIGINT)
	if code := procs["a"].wait(t, 20*time.Second); code != 130 {
		t.Fatalf("a after Ctrl-C: exit %d: %s", code, procs["a"].errText())
	}
	write(4000)
	leftCtrlC := settle("every record after a left with Ctrl-C") - before
	// a comes back (as c), takes its share, and b is killed.
	procs["c"] = startTail(t, env, args("c")...)
	write(4000)
	before = settle("the fourth batch")
	procs["b"].cmd.Process.Kill()
	procs["b"].wait(t, 10*time.Second)
	write(4000)
	killed := settle("every record after b was killed") - before
	t.Logf("printed twice: %d when a worker joined 0.5 s after the first (4,000 records written), %d when one left with Ctrl-C, %d when one was killed -9 (checkpoint interval 2 s)", joined, leftCtrlC, killed)
	if joined > 50 || leftCtrlC > 50 {
		t.Fatalf("printed twice: %d on joining, %d on Ctrl-C; a hand-off should replay close to nothing", joined, leftCtrlC)
	}
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGINT)
	}
}
