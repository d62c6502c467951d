package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// TestTailKillBehindSlowStdout: behind a stdout that drains a few hundred
// lines a second (`| less`, a rate-limited `put`), one GetRecords page
// takes seconds to write out. The checkpoint must follow what was written,
// not wait for the page: a kill -9 then replays about one
// --checkpoint-interval of output, never the page. Plain records and
// CloudWatch Logs batches (the position inside a batch) alike.
//
// The bound is computed from what the reader saw (the lines it read in the
// last interval before the kill, plus a few 64 KiB writes and the pipe's
// buffer), not from wall-clock limits.
func TestTailKillBehindSlowStdout(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	c := e.Client(t)
	for _, tc := range []struct {
		name    string
		cwlogs  bool
		records int
		perLine time.Duration
	}{
		{name: "records", records: 2000, perLine: 4 * time.Millisecond},
		{name: "cwlogs", cwlogs: true, records: 200, perLine: 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := emulator.StreamName(t)
			e.CreateStream(t, c, stream, 1)
			var recs []emulator.Rec
			for i := range tc.records {
				if tc.cwlogs {
					msgs := make([]string, 20)
					for j := range msgs {
						msgs[j] = fmt.Sprintf("r%05d-e%02d %s", i, j, strings.Repeat("m", 150))
					}
					recs = append(recs, emulator.Rec{PartitionKey: "k", Data: cwBatchData(t, msgs...)})
					continue
				}
				recs = append(recs, emulator.Rec{PartitionKey: "k", Data: fmt.Appendf(nil, "r%05d %s", i, strings.Repeat("d", 1000))})
			}
			e.Put(t, c, stream, recs)
			env := tailEnv(e, t, e.Endpoint)
			cp := filepath.Join(t.TempDir(), "cp.json")
			args := []string{"tail", stream, "--checkpoint", cp, "--checkpoint-interval", "1s", "--poll-interval", "200ms"}
			if tc.cwlogs {
				args = append(args, "--cwlogs")
			}
			id := func(l tailLine) string {
				if tc.cwlogs {
					return l.Message[:10]
				}
				return l.Data[:6]
			}

			// The first run, read slowly and killed after 5 s of output.
			cmd := exec.Command(binary(t), args...)
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			var (
				mu      sync.Mutex
				first   []string
				readAt  []time.Time
				lineLen int
				killed  time.Time
			)
			done := make(chan struct{})
			go func() {
				defer close(done)
				br := bufio.NewReaderSize(out, 4096)
				for {
					b, err := br.ReadBytes('\n')
					var l tailLine
					if len(b) > 0 && b[len(b)-1] == '\n' && json.Unmarshal(b, &l) == nil {
						mu.Lock()
						first = append(first, id(l))
						readAt = append(readAt, time.Now())
						lineLen = max(lineLen, len(b))
						slow := killed.IsZero()
						mu.Unlock()
						if slow {
							time.Sleep(tc.perLine)
						}
					}
					if err != nil {
						return
					}
				}
			}()
			deadline := time.Now().Add(2 * time.Minute)
			for {
				mu.Lock()
				started := len(readAt) > 0 && time.Since(readAt[0]) > 5*time.Second
				mu.Unlock()
				if started {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no output within two minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			killed = time.Now()
			mu.Unlock()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-done // what the pipe held is read too
			cmd.Wait()
			recent := 0
			for _, at := range readAt {
				if at.After(killed.Add(-1500 * time.Millisecond)) {
					recent++
				}
			}
			// A 64 KiB write in flight, one just written but not yet
			// saved, and the pipe's 64 KiB buffer.
			bound := recent + 3*(64<<10)/lineLen + 1

			// The second run resumes from the checkpoint and reads on.
			res := runBinary(t, env, "", append(args, "--idle-exit", "2s")...)
			if res.code != 0 {
				t.Fatalf("resume: exit %d: %s", res.code, res.stderr)
			}
			seen := make(map[string]bool, len(first))
			for _, k := range first {
				seen[k] = true
			}
			replayed, total := 0, len(seen)
			for _, l := range lines(res.stdout) {
				var tl tailLine
				if err := json.Unmarshal([]byte(l), &tl); err != nil {
					t.Fatalf("not a JSON line: %q", l)
				}
				if seen[id(tl)] {
					replayed++
				} else {
					seen[id(tl)] = true
					total++
				}
			}
			want := tc.records
			if tc.cwlogs {
				want *= 20
			}
			if total != want {
				t.Fatalf("%d distinct lines over both runs, want %d: a crash lost some", total, want)
			}
			t.Logf("first run: %d lines read before the kill and out of the pipe after it, %d in the last 1.5 s; resume replayed %d (bound %d, lines of %d bytes)", len(first), recent, replayed, bound, lineLen)
			if replayed > bound {
				t.Fatalf("the resume replayed %d lines; the checkpoint should have followed the output to within %d", replayed, bound)
			}
		})
	}
}
