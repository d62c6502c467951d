//go:build linux

package cmd

// Crash consistency of `tail`, with the real binary:
//
//   - TestTailCrashDuringCheckpointWrites: kill -9 at random moments and the
//     instant a checkpoint's temporary file appears (inotify), while a
//     writer keeps writing and the stream is split and merged, polling and
//     subscribed (--efo). After every
//     kill the checkpoint file parses and names the stream; every resume
//     starts each shard just after its checkpoint; what a resume prints
//     again was printed within the last checkpoint interval before the
//     kill; at the end every record was printed, each key in order.
//   - TestTailSecondOnSameCheckpoint: a second tail on a checkpoint file in
//     use is refused with the first one's pid, and the file is untouched; the
//     lock dies with a killed tail.
//
// Linux only: the kill at the write uses inotify. tail/filestore_test.go
// injects the crash between write and rename in-process on every platform;
// cmd/tail_integration_test.go (TestTailKillAndResume) kills between reshards.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// crLine is one line of a run, with when the test read it.
type crLine struct {
	tailLine
	at time.Time
}

// crRun is one `tail` process of the crash test.
type crRun struct {
	cmd      *exec.Cmd
	interval time.Duration
	mu       sync.Mutex
	lines    []crLine
	stderr   strings.Builder
	partial  int // lines cut short by the kill (not delivered)
	done     chan struct{}
	killedAt time.Time
	// cp is the checkpoint file as the kill left it.
	cp map[string]tail.Position
}

func crStart(t *testing.T, env []string, interval time.Duration, args ...string) *crRun {
	t.Helper()
	r := &crRun{cmd: exec.Command(binary(t), append([]string{"tail"}, args...)...), interval: interval, done: make(chan struct{})}
	r.cmd.Env = env
	r.cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.stderr}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			b, err := br.ReadBytes('\n')
			now := time.Now()
			if len(b) > 0 {
				var l tailLine
				if b[len(b)-1] != '\n' || json.Unmarshal(b, &l) != nil {
					r.mu.Lock()
					r.partial++
					r.mu.Unlock()
				} else {
					r.mu.Lock()
					r.lines = append(r.lines, crLine{l, now})
					r.mu.Unlock()
				}
			}
			if err != nil {
				r.cmd.Wait()
				return
			}
		}
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

func (r *crRun) kill(t *testing.T) {
	t.Helper()
	r.killedAt = time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a killed tail did not go away")
	}
}

func (r *crRun) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// crWriter writes one record per key per PutRecords call until stopped,
// remembering each key's records in the order the stream stored them.
type crWriter struct {
	c      *kinesis.Client
	stream string
	keys   int
	every  time.Duration

	mu      sync.Mutex
	written map[string][]string
	err     error
	stop    chan struct{}
	done    chan struct{}
}

func (w *crWriter) start() {
	w.written, w.stop, w.done = map[string][]string{}, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(w.every)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			if err := w.round(); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
		}
	}()
}

func (w *crWriter) round() error {
	w.mu.Lock()
	pending := make([]types.PutRecordsRequestEntry, w.keys)
	for k := range w.keys {
		key := fmt.Sprintf("key-%02d", k)
		pending[k] = types.PutRecordsRequestEntry{PartitionKey: aws.String(key), Data: []byte(fmt.Sprintf("%s#%d", key, len(w.written[key])))}
	}
	w.mu.Unlock()
	// One record per key per call: retrying the failed entries before the
	// next round keeps each key in order.
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == 10 {
			return fmt.Errorf("put: %d entries still failing", len(pending))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := w.c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(w.stream), Records: pending})
		cancel()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var failed []types.PutRecordsRequestEntry
		w.mu.Lock()
		for i, res := range out.Records {
			if res.ErrorCode != nil {
				failed = append(failed, pending[i])
				continue
			}
			k := aws.ToString(pending[i].PartitionKey)
			w.written[k] = append(w.written[k], string(pending[i].Data))
		}
		w.mu.Unlock()
		pending = failed
	}
	return nil
}

func (w *crWriter) finish(t *testing.T) map[string][]string {
	t.Helper()
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.written
}

// crWatch reports, through a channel, each checkpoint temporary file
// created in dir (inotify IN_CREATE).
func crWatch(t *testing.T, dir, base string) <-chan string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE); err != nil {
		syscall.Close(fd)
		t.Fatalf("inotify: %v", err)
	}
	ch := make(chan string, 64)
	var once sync.Once
	stop := func() { once.Do(func() { syscall.Close(fd) }) }
	t.Cleanup(stop)
	go func() {
		defer close(ch)
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if err != nil || n <= 0 {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)])
				name = strings.TrimRight(name, "\x00")
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				if strings.HasPrefix(name, "."+base+".") && strings.HasSuffix(name, ".tmp") {
					select {
					case ch <- name:
					default:
					}
				}
			}
		}
	}()
	return ch
}

func TestTailCrashDuringCheckpointWrites(t *testing.T) {
	for _, read := range tailReads[:2] {
		t.Run(read.name, func(t *testing.T) {
			t.Parallel()
			e := emulator.Require(t)
			if !e.Caps.Reshard {
				t.Skipf("%s cannot reshard", e.Backend)
			}
			seed := fmSeed(t)
			rng := rand.New(rand.NewPCG(seed, 0xc4a54))
			t.Logf("seed %d (KINESIS_SHARDS_FAULT_SEED replays the kill times)", seed)
			c := e.Client(t)
			stream := emulator.StreamName(t)
			e.CreateStream(t, c, stream, 2)
			endpoint, tailArgs := read.setup(t, e, c, stream)
			sum, err := kstream.Describe(context.Background(), c, kstream.Ref{Name: stream})
			if err != nil {
				t.Fatal(err)
			}
			w := &crWriter{c: c, stream: stream, keys: 6, every: 60 * time.Millisecond}
			w.start()
			dir := t.TempDir()
			cpPath := filepath.Join(dir, "cp.json")
			temps := crWatch(t, dir, "cp.json")
			env := tailEnv(e, t, endpoint)

			const runs = 16
			var (
				all          []*crRun
				midWrite     int // kills that left a temporary file: between write and rename
				maxUnsavedAt time.Duration
			)
			for i := range runs {
				switch i {
				case runs / 3:
					splitShard(t, e, c, stream, openIDs(t, c, stream)[0])
				case 2 * runs / 3:
					mergeOpen(t, e, c, stream, 0)
				}
				// Odd runs save every 10 ms and are killed the instant a save
				// creates its temporary file; even runs save every 200 ms and are
				// killed at a random moment.
				interval := 200 * time.Millisecond
				if i%2 == 1 {
					interval = 10 * time.Millisecond
				}
				r := crStart(t, env, interval, tailArgs(stream, "--checkpoint", cpPath, "--checkpoint-interval", interval.String(),
					"--poll-interval", "200ms", "--relist-interval", "1s")...)
				// A subscribed run reads later: kinesis-mock sends the first
				// event a second after the call, and refuses the consumer and
				// shard for 1 to 2 s after a killed run's subscription.
				if read.efo {
					time.Sleep(3 * time.Second)
				}
				if i%2 == 1 {
					// Drain events of earlier runs, let this one read for a while,
					// then kill it at its next save.
					time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
				drain:
					for {
						select {
						case <-temps:
						default:
							break drain
						}
					}
					select {
					case <-temps:
					case <-time.After(5 * time.Second):
						t.Logf("run %d: no save within 5s; killing anyway", i)
					}
				} else {
					time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
				}
				r.kill(t)
				if left, _ := filepath.Glob(filepath.Join(dir, ".cp.json.*.tmp")); len(left) > 0 {
					midWrite++
				}
				// The checkpoint as the kill left it: never half-written.
				if _, err := os.Stat(cpPath); err == nil {
					id, pos, err := tail.ReadCheckpoint(cpPath)
					if err != nil {
						t.Fatalf("run %d: after kill -9 the checkpoint file does not parse: %v", i, err)
					}
					if id.ARN != sum.ARN || !id.Created.Equal(sum.Created) {
						t.Fatalf("run %d: the checkpoint names %+v", i, id)
					}
					r.cp = pos
				}
				if r.partial > 1 {
					t.Fatalf("run %d: %d cut lines", i, r.partial)
				}
				t.Logf("run %d (interval %s): %d lines, checkpoint %v", i, interval, r.count(), r.cp)
				all = append(all, r)
			}
			written := w.finish(t)

			// A last run drains what is left; it must clear the temporary files a
			// killed writer left.
			last := crStart(t, env, 200*time.Millisecond, tailArgs(stream, "--checkpoint", cpPath, "--idle-exit", "2s", "--poll-interval", "200ms", "--relist-interval", "1s")...)
			select {
			case <-last.done:
			case <-time.After(90 * time.Second):
				t.Fatalf("the last run did not end; stderr:\n%s", last.stderr.String())
			}
			if code := last.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("last run: exit %d\n%s", code, last.stderr.String())
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".cp.json.*.tmp")); len(left) > 0 {
				t.Fatalf("temporary files left after a clean run: %v", left)
			}
			all = append(all, last)

			// Nothing lost, each key in order, replays only of what was printed.
			var lines []tailLine
			for _, r := range all {
				for _, l := range r.lines {
					lines = append(lines, l.tailLine)
				}
			}
			kw := &keyedWriter{t: t, written: written}
			kw.check(lines, true)

			// Each resume starts every shard just after its checkpoint, and what it
			// prints again was printed within the checkpoint interval (plus the
			// time a save takes on a busy machine) before the kill.
			// Observed: well under 100 ms; the slack is for a loaded CI machine.
			const slack = 750 * time.Millisecond
			replays := 0
			for i := 1; i < len(all); i++ {
				prev, cur := all[i-1], all[i]
				for _, l := range cur.lines {
					p, ok := prev.cp[l.ShardID]
					switch {
					case !ok:
					case p.ShardEnd:
						t.Fatalf("run %d printed %s of shard %s, which the checkpoint has at SHARD_END", i, l.SequenceNumber, l.ShardID)
					case crCompare(l.SequenceNumber, p.SequenceNumber) <= 0:
						t.Fatalf("run %d printed %s of shard %s, at or before its checkpoint %s", i, l.SequenceNumber, l.ShardID, p.SequenceNumber)
					}
				}
				for _, l := range prev.lines {
					p, ok := prev.cp[l.ShardID]
					if ok && (p.ShardEnd || crCompare(l.SequenceNumber, p.SequenceNumber) <= 0) {
						continue // saved
					}
					replays++
					age := prev.killedAt.Sub(l.at)
					maxUnsavedAt = max(maxUnsavedAt, age)
					if age > prev.interval+slack {
						t.Errorf("run %d: %s of %s was printed %s before the kill and never saved (checkpoint interval %s)", i-1, l.SequenceNumber, l.ShardID, age.Round(time.Millisecond), prev.interval)
					}
				}
			}
			total := 0
			for _, v := range written {
				total += len(v)
			}
			t.Logf("%d records, %d lines over %d runs; %d unsaved at a kill (printed again), the oldest %s before its kill; %d of %d kills left a temporary file (killed between write and rename)",
				total, len(lines), len(all), replays, maxUnsavedAt.Round(time.Millisecond), midWrite, runs)
			if len(lines) > total+replays {
				t.Fatalf("%d lines for %d records and %d replays", len(lines), total, replays)
			}
		})
	}
}

// crCompare compares two sequence numbers of one shard as numbers.
func crCompare(a, b string) int {
	x, ok1 := new(big.Int).SetString(a, 10)
	y, ok2 := new(big.Int).SetString(b, 10)
	if !ok1 || !ok2 {
		panic("bad sequence number " + a + " / " + b)
	}
	return x.Cmp(y)
}

// A second tail on a checkpoint file in use is refused, naming the first
// one's pid, and the file is left as it was; once the first is killed -9,
// the lock is gone with it.
func TestTailSecondOnSameCheckpoint(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	e.Put(t, c, stream, []emulator.Rec{{PartitionKey: "a", Data: []byte("one")}})
	cp := filepath.Join(t.TempDir(), "cp.json")
	env := append(e.Env(), "XDG_STATE_HOME="+t.TempDir())
	// The first saves at once (the record) and then not for an hour.
	first := startTail(t, env, stream, "--checkpoint", cp, "--checkpoint-interval", "1h", "--poll-interval", "200ms")
	waitFor(t, 20*time.Second, "the first tail's record", func() bool { return len(first.output()) == 1 })
	waitFor(t, 10*time.Second, "the first tail's lock", func() bool {
		b, _ := os.ReadFile(cp + ".lock")
		return strings.TrimSpace(string(b)) == strconv.Itoa(first.cmd.Process.Pid)
	})
	before, _ := os.ReadFile(cp)

	res := runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--idle-exit", "1s")
	want := fmt.Sprintf("error: checkpoint file %s is in use by another kinesis-shards (pid %d); run one tail per checkpoint file\n", cp, first.cmd.Process.Pid)
	if res.code != 1 || res.stdout != "" || res.stderr != want {
		t.Fatalf("second tail: exit %d, stdout %q, stderr %q; want exit 1 and %q", res.code, res.stdout, res.stderr, want)
	}
	if after, _ := os.ReadFile(cp); string(after) != string(before) {
		t.Fatalf("the refused tail changed the checkpoint file:\n%s\n%s", before, after)
	}

	first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait(t, 10*time.Second)
	res = runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--idle-exit", "1s")
	if res.code != 0 {
		t.Fatalf("after kill -9 of the first: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestTailSecondInterruptQuits: the first Ctrl-C waits for what was read to
// be written out, which never happens when stdout has stopped reading; a
// second one ends the process at once.
func TestTailSecondInterruptQuits(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	// More than a pipe holds (64 KiB on Linux), so the tail blocks writing.
	payload := bytes.Repeat([]byte("x"), 4000)
	recs := make([]emulator.Rec, 100)
	for i := range recs {
		recs[i] = emulator.Rec{PartitionKey: "k", Data: payload}
	}
	e.Put(t, c, stream, recs)

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(binary(t), "tail", stream, "--no-checkpoint", "--format", "raw")
	cmd.Env = e.Env()
	cmd.Stdout = pw
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Read a little, so the tail is surely writing, then stop reading.
	if _, err := io.ReadFull(pr, make([]byte, 1000)); err != nil {
		t.Fatalf("reading the tail's output: %v (stderr %q)", err, errOut.String())
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		t.Fatalf("the tail exited on the first Ctrl-C although its stdout was blocked (%v); the test needs a blocked writer", err)
	case <-time.After(time.Second):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Success() {
			t.Fatalf("after a second Ctrl-C: %v, want a failed exit", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("a second Ctrl-C did not end the tail")
	}
}
