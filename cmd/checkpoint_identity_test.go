package cmd

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// What an expression sees depends on --decompress (and --cwlogs): a
// --filter run that forgot --decompress sees gzip bytes, drops every
// record and checkpoints to the end. The corrected run must not resume
// from there: by default it gets a file of its own and prints the
// records; on the same --checkpoint it is refused, naming the option that
// differs, and the file is left as it was.
func TestCheckpointIdentityHoldsDecompress(t *testing.T) {
	e, c, stream, env := oneShardStream(t)
	var recs []emulator.Rec
	for i := range 6 {
		level := "info"
		if i%2 == 0 {
			level = "error"
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		fmt.Fprintf(zw, `{"level":%q,"n":%d}`, level, i)
		zw.Close()
		recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("k%d", i), Data: buf.Bytes()})
	}
	putOneByOne(t, e, c, stream, recs...)
	filter := []string{"--filter", `.payload.level == "error"`}
	run := func(extra ...string) cliResult {
		t.Helper()
		args := append([]string{"tail", stream, "--idle-exit", "1s", "--poll-interval", "200ms"}, filter...)
		return runBinary(t, env, "", append(args, extra...)...)
	}

	// The default file.
	if r := run(); r.code != 0 || r.stdout != "" {
		t.Fatalf("without --decompress: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	r := run("--decompress")
	if r.code != 0 || len(lines(r.stdout)) != 3 {
		t.Fatalf("with --decompress after a run without: exit %d, %d lines (want the 3 errors), stderr %s", r.code, len(lines(r.stdout)), r.stderr)
	}
	// It says why it did not go on from the other run's file.
	if !strings.Contains(r.stderr, "warning: no checkpoint of this run's options yet (") || !strings.Contains(r.stderr, "this run starts afresh") {
		t.Fatalf("no word about the other run's file: %q", r.stderr)
	}
	if r := run("--decompress"); r.code != 0 || r.stdout != "" || strings.Contains(r.stderr, "warning") {
		t.Fatalf("the same run again: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// An explicit file.
	cp := filepath.Join(t.TempDir(), "cp.json")
	if r := run("--checkpoint", cp); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	before, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	r = run("--checkpoint", cp, "--decompress")
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, "; --decompress differs") || len(lines(r.stderr)) != 1 {
		t.Fatalf("another --decompress on the same file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(cp); !bytes.Equal(before, after) {
		t.Fatal("the refused run changed the file")
	}
}
