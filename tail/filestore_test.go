package tail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var testID = StreamIdentity{Name: "orders", ARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
	Created: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}

func openT(t *testing.T, path string) *FileStore {
	t.Helper()
	s, err := OpenFile(path, testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFileStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "cp.json")
	s := openT(t, path)
	if got, _ := s.Load(context.Background()); len(got) != 0 {
		t.Fatalf("new store loaded %v", got)
	}
	want := map[string]Position{
		"shardId-000000000000": {ShardEnd: true},
		"shardId-000000000001": {SequenceNumber: "49590338271490256608559692538361571095921575989136588898"},
		"shardId-000000000002": {SequenceNumber: "7", Aggregated: true, SubSequence: 3},
		"shardId-000000000003": {SequenceNumber: "8", Aggregated: true, SubSequence: 0},
	}
	if err := s.Save(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for p, wantMode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != wantMode {
			t.Errorf("%s: mode %v, want %04o (%v)", p, st.Mode().Perm(), wantMode, err)
		}
	}
	s2 := openT(t, path)
	got, _ := s2.Load(context.Background())
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	b, _ := os.ReadFile(path)
	for _, frag := range []string{`"kind": "kinesis-shards/checkpoint"`, `"version": 1`, `"shardEnd": true`, `"subSequenceNumber": 0`, `"streamCreated": "2026-11-30T10:00:00Z"`} {
		if !strings.Contains(string(b), frag) {
			t.Errorf("file lacks %s:\n%s", frag, b)
		}
	}
}

func TestFileStoreRefusals(t *testing.T) {
	good := func(t *testing.T, path string) {
		s := openT(t, path)
		if err := s.Save(context.Background(), map[string]Position{"shardId-000000000000": {SequenceNumber: "1"}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		id    StreamIdentity
		want  error  // errors.Is target, or nil to match text only
		text  string // substring of the message
	}{
		{name: "directory", setup: func(t *testing.T, p string) { os.Mkdir(p, 0o700) }, text: "is a directory"},
		{name: "garbage", setup: func(t *testing.T, p string) { os.WriteFile(p, []byte("{not json"), 0o600) }, want: ErrCorrupt, text: "left untouched"},
		{name: "empty file", setup: func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) }, want: ErrCorrupt},
		{name: "other tool's json", setup: func(t *testing.T, p string) { os.WriteFile(p, []byte(`{"a":1}`), 0o600) }, want: ErrCorrupt, text: "not a kinesis-shards checkpoint"},
		{name: "newer version", setup: func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"kind":"kinesis-shards/checkpoint","version":5,"streamArn":"x","streamCreated":"2026-11-30T10:00:00Z"}`), 0o600)
		}, want: ErrCorrupt, text: "version 5 is newer than this kinesis-shards understands (4)"},
		{name: "bad sequence", setup: func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"kind":"kinesis-shards/checkpoint","version":1,"streamArn":"`+testID.ARN+`","streamCreated":"2026-11-30T10:00:00Z","shards":{"s":{"sequenceNumber":"01"}}}`), 0o600)
		}, want: ErrCorrupt, text: "not a sequence number"},
		{name: "other stream", setup: good, id: StreamIdentity{Name: "x", ARN: "arn:aws:kinesis:us-east-1:123456789012:stream/x", Created: testID.Created}, want: ErrForeign},
		{name: "re-created stream", setup: good, id: StreamIdentity{Name: testID.Name, ARN: testID.ARN, Created: testID.Created.Add(time.Hour)}, want: ErrForeign, text: "re-created"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.json")
			tt.setup(t, path)
			before, _ := os.ReadFile(path)
			id := tt.id
			if id.ARN == "" {
				id = testID
			}
			s, err := OpenFile(path, id, nil)
			if err == nil {
				s.Close()
				t.Fatal("opened; want refusal")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), path) && tt.name != "directory" {
				t.Errorf("err = %q, want it to name the file and say %q", err, tt.text)
			}
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Errorf("file changed")
			}
			// A refused open leaves the lock free.
			if s, err := OpenFile(filepath.Join(filepath.Dir(path), "other.json"), id, nil); err == nil {
				s.Close()
			}
		})
	}
}

func TestFileStoreUnreadableAndUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.json")
	os.WriteFile(path, []byte("{}"), 0o000)
	if _, err := OpenFile(path, testID, nil); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("unreadable: err = %v", err)
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	if _, err := OpenFile(filepath.Join(ro, "cp.json"), testID, nil); err == nil {
		t.Errorf("unwritable directory: opened")
	}
}

func TestFileStoreTightensPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	s := openT(t, path)
	s.Save(context.Background(), nil)
	s.Close()
	os.Chmod(path, 0o644)
	var warned string
	s2, err := OpenFile(path, testID, func(w string) { warned = w })
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 || !strings.Contains(warned, "changed to 0600") {
		t.Fatalf("mode %v, warning %q", st.Mode().Perm(), warned)
	}
}

// A crash between writing the temporary file and the rename leaves the old
// checkpoint whole; the next open removes the leftover.
func TestFileStoreCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.json")
	s := openT(t, path)
	old := map[string]Position{"shardId-000000000000": {SequenceNumber: "100"}}
	if err := s.Save(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	s.beforeRename = func(string) error { return errors.New("crash") }
	if err := s.Save(context.Background(), map[string]Position{"shardId-000000000000": {SequenceNumber: "200"}}); err == nil {
		t.Fatal("save with crash succeeded")
	}
	s.Close()
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".cp.json.*.tmp")); len(tmps) != 1 {
		t.Fatalf("leftover temporary files: %v", tmps)
	}
	s2 := openT(t, path)
	got, _ := s2.Load(context.Background())
	if !reflect.DeepEqual(got, old) {
		t.Fatalf("after crash loaded %v, want %v", got, old)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".cp.json.*.tmp")); len(tmps) != 0 {
		t.Fatalf("leftover not removed: %v", tmps)
	}
}

// The lock is per process: a second process is refused with our pid, and a
// killed holder releases it.
func TestFileStoreLockAcrossProcesses(t *testing.T) {
	if os.Getenv("KS_LOCK_HELPER") != "" {
		s, err := OpenFile(os.Getenv("KS_LOCK_HELPER"), testID, nil)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
		fmt.Println("LOCKED")
		time.Sleep(time.Minute)
		s.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "cp.json")
	s := openT(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "KS_LOCK_HELPER="+path)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), fmt.Sprintf("in use by another kinesis-shards (pid %d)", os.Getpid())) {
		t.Fatalf("second process: %s", out)
	}
	s.Close()

	// Now the child holds it; kill -9 frees it.
	cmd = exec.Command(os.Args[0], "-test.run=^TestFileStoreLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "KS_LOCK_HELPER="+path)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := stdout.Read(buf)
	if !strings.Contains(string(buf[:n]), "LOCKED") {
		t.Fatalf("child: %q", buf[:n])
	}
	_, err := OpenFile(path, testID, nil)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
		t.Fatalf("err = %v, want LockedError naming pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	s3, err := OpenFile(path, testID, nil)
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	s3.Close()
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add([]byte(`{"kind":"kinesis-shards/checkpoint","version":1,"streamArn":"a","streamCreated":"2026-11-30T10:00:00Z","shards":{"s":{"sequenceNumber":"12","subSequenceNumber":1},"t":{"shardEnd":true}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"kind":"kinesis-shards/checkpoint","version":1,"shards":{"":{}}}`))
	f.Add([]byte(`{"kind":"kinesis-shards/checkpoint","version":3,"streamArn":"a","streamCreated":"2026-11-30T10:00:00Z","shards":{"s":{"sequenceNumber":"12","logEventIndex":2}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		for id, s := range doc.Shards {
			if id == "" || (!s.ShardEnd && !validSequence(s.SequenceNumber)) || (s.ShardEnd && s.SequenceNumber != "") ||
				(s.LogEventIndex != nil && (*s.LogEventIndex < 0 || s.ShardEnd || doc.Version != fileVersionInBatch)) {
				t.Fatalf("accepted bad shard %q: %+v", id, s)
			}
		}
	})
}

func TestReadCheckpointDoesNotLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	s := openT(t, path)
	want := map[string]Position{"shardId-000000000000": {ShardEnd: true}, "shardId-000000000001": {SequenceNumber: "5"}}
	if err := s.Save(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	// The tail holds the lock; a reader still gets the positions.
	id, got, err := ReadCheckpoint(path)
	if err != nil || !reflect.DeepEqual(got, want) || id.ARN != testID.ARN || !id.Created.Equal(testID.Created) {
		t.Fatalf("ReadCheckpoint = %+v, %v, %v", id, got, err)
	}
}

// A refused file keeps its mode too: the tightening happens only to a file
// that is opened.
func TestFileStoreRefusedFileKeepsItsMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	warned := false
	if _, err := OpenFile(path, testID, func(string) { warned = true }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 || warned {
		t.Fatalf("mode %04o, warned %v: a refused file must be left untouched", st.Mode().Perm(), warned)
	}
}

// A file records the --key or --shard it was written with; a run with
// another filter, or none, is refused with the reason and the file is left
// as it was. A file without a filter (version 1, as earlier builds wrote
// it) is an unfiltered run's.
func TestFileStoreFilter(t *testing.T) {
	key, shard := Filter{Key: "orders-17"}, Filter{Shard: "shardId-000000000003"}
	differing := map[string]string{
		"key then another key":                     "--key",
		"--filter then another":                    "--filter",
		"--jq then --filter of the same text":      "--filter and --jq",
		"--filter then the same with --decompress": "--decompress",
		"unfiltered then --cwlogs":                 "--cwlogs",
		"--cwlogs then unfiltered":                 "--cwlogs",
		"key --cwlogs then key":                    "--cwlogs",
	}
	for _, c := range []struct {
		name          string
		wrote, opened Filter
		refused       bool
	}{
		{"unfiltered then unfiltered", Filter{}, Filter{}, false},
		{"key then the same key", key, key, false},
		{"key then unfiltered", key, Filter{}, true},
		{"unfiltered then key", Filter{}, key, true},
		{"key then another key", key, Filter{Key: "orders-18"}, true},
		{"shard then key", shard, key, true},
		{"shard then unfiltered", shard, Filter{}, true},
		{"--filter then the same", Filter{Select: ".level"}, Filter{Select: ".level"}, false},
		{"--filter then unfiltered", Filter{Select: ".level"}, Filter{}, true},
		{"unfiltered then --filter", Filter{}, Filter{Select: ".level"}, true},
		{"--filter then another", Filter{Select: ".level"}, Filter{Select: ".msg"}, true},
		{"--jq then --filter of the same text", Filter{Transform: ".level"}, Filter{Select: ".level"}, true},
		{"key and --filter then key", Filter{Key: "orders-17", Select: ".level"}, key, true},
		{"key and --filter then the same", Filter{Key: "orders-17", Select: ".level"}, Filter{Key: "orders-17", Select: ".level"}, false},
		// What an expression sees, and what counts as one printed line,
		// depends on --decompress and --cwlogs too.
		{"--filter then the same with --decompress", Filter{Select: ".payload.level"}, Filter{Select: ".payload.level", Decompress: true}, true},
		{"--filter --decompress then the same", Filter{Select: ".payload.level", Decompress: true}, Filter{Select: ".payload.level", Decompress: true}, false},
		{"unfiltered then --cwlogs", Filter{}, Filter{CWLogs: true}, true},
		{"--cwlogs then unfiltered", Filter{CWLogs: true}, Filter{}, true},
		{"--cwlogs then --cwlogs", Filter{CWLogs: true}, Filter{CWLogs: true}, false},
		{"--decompress then unfiltered", Filter{Decompress: true}, Filter{}, true},
		{"key --cwlogs then key", Filter{Key: "orders-17", CWLogs: true}, key, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.json")
			s, err := OpenFilteredFile(path, testID, c.wrote, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Save(context.Background(), map[string]Position{"shardId-000000000000": {ShardEnd: true}}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			before, _ := os.ReadFile(path)
			s2, err := OpenFilteredFile(path, testID, c.opened, nil)
			if !c.refused {
				if err != nil {
					t.Fatal(err)
				}
				s2.Close()
				return
			}
			if !errors.Is(err, ErrFilter) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.wrote.String()) {
				t.Fatalf("opened with %v a file of %v: %v", c.opened, c.wrote, err)
			}
			// The sentence names the option that differs.
			if d := differing[c.name]; d != "" && !strings.Contains(err.Error(), "; "+d+" differ") {
				t.Fatalf("%v\ndoes not name %s as what differs", err, d)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("a refused file was changed")
			}
		})
	}
	// The version: 1 without a filter (earlier builds read it), 2 with one
	// (earlier builds refuse it rather than skip records).
	for _, c := range []struct {
		f       Filter
		version string
	}{{Filter{}, `"version": 1`}, {key, `"version": 2`}, {Filter{Select: ".level"}, `"version": 2`}} {
		path := filepath.Join(t.TempDir(), "cp.json")
		s, _ := OpenFilteredFile(path, testID, c.f, nil)
		s.Save(context.Background(), nil)
		s.Close()
		if b, _ := os.ReadFile(path); !strings.Contains(string(b), c.version) {
			t.Fatalf("a file with %v: %s", c.f, b)
		}
	}
}

// A shard stopped inside a CloudWatch Logs batch has "logEventIndex", and
// such a file is version 3, which builds from before it refuse rather
// than skip the rest of the batch. A file with no shard inside a batch is
// written as before (version 1, or 2 with a filter), so it stays readable
// by them; a later save goes back to that version once the batch is done.
func TestFileStoreLogEventIndex(t *testing.T) {
	inBatch := map[string]Position{
		"shardId-000000000000": {SequenceNumber: "7", InBatch: true, LogEventIndex: 3},
		"shardId-000000000001": {SequenceNumber: "8", Aggregated: true, SubSequence: 2, InBatch: true, LogEventIndex: 0},
		"shardId-000000000002": {SequenceNumber: "9"},
		"shardId-000000000003": {ShardEnd: true},
	}
	whole := map[string]Position{"shardId-000000000000": {SequenceNumber: "7"}}
	for _, c := range []struct {
		name      string
		filter    Filter
		positions map[string]Position
		version   string
	}{
		{"inside a batch", Filter{}, inBatch, `"version": 3`},
		{"inside a batch, with --key", Filter{Key: "k"}, inBatch, `"version": 3`},
		{"batches done", Filter{}, whole, `"version": 1`},
		{"batches done, with --shard", Filter{Shard: "shardId-000000000000"}, whole, `"version": 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp.json")
			s, err := OpenFilteredFile(path, testID, c.filter, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Save(context.Background(), c.positions); err != nil {
				t.Fatal(err)
			}
			s.Close()
			b, _ := os.ReadFile(path)
			if !strings.Contains(string(b), c.version) {
				t.Fatalf("want %s:\n%s", c.version, b)
			}
			if strings.Contains(string(b), "logEventIndex") != (c.version == `"version": 3`) {
				t.Fatalf("logEventIndex where it does not belong:\n%s", b)
			}
			s2, err := OpenFilteredFile(path, testID, c.filter, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if got, _ := s2.Load(context.Background()); !reflect.DeepEqual(got, c.positions) {
				t.Fatalf("loaded %v, want %v", got, c.positions)
			}
		})
	}
	t.Run("back to version 1", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cp.json")
		s := openT(t, path)
		s.Save(context.Background(), inBatch)
		s.Save(context.Background(), whole)
		if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"version": 1`) {
			t.Fatalf("%s", b)
		}
	})
}

// What a file's logEventIndex may not be.
func TestDecodeCheckpointLogEventIndex(t *testing.T) {
	doc := func(version int, filter, shard string) []byte {
		return []byte(fmt.Sprintf(`{"kind":"kinesis-shards/checkpoint","version":%d,"streamArn":"a","streamCreated":"2026-11-30T10:00:00Z"%s,"shards":{"s":%s}}`, version, filter, shard))
	}
	for _, c := range []struct {
		name string
		b    []byte
		err  string // "" = accepted
	}{
		{"version 3", doc(3, "", `{"sequenceNumber":"12","logEventIndex":4}`), ""},
		{"version 3 with a filter", doc(3, `,"filter":{"key":"k"}`, `{"sequenceNumber":"12","subSequenceNumber":1,"logEventIndex":0}`), ""},
		{"version 3 with an empty filter", doc(3, `,"filter":{}`, `{"sequenceNumber":"12","logEventIndex":0}`), "a filter needs a key or a shard (not both), expressions, --cwlogs or --decompress"},
		{"in version 1", doc(1, "", `{"sequenceNumber":"12","logEventIndex":4}`), "shard s: logEventIndex in a version 1 file"},
		{"in version 2", doc(2, `,"filter":{"shard":"s"}`, `{"sequenceNumber":"12","logEventIndex":4}`), "shard s: logEventIndex in a version 2 file"},
		{"negative", doc(3, "", `{"sequenceNumber":"12","logEventIndex":-1}`), "shard s: negative logEventIndex"},
		{"with shardEnd", doc(3, "", `{"shardEnd":true,"logEventIndex":1}`), "shard s is both at SHARD_END and inside a batch"},
		{"without a sequence number", doc(3, "", `{"logEventIndex":1}`), `shard s: "" is not a sequence number`},
		{"version 4", doc(4, `,"filter":{"cwlogs":true}`, `{"sequenceNumber":"12","logEventIndex":4}`), ""},
		{"version 4 without its options", doc(4, `,"filter":{"key":"k"}`, `{"sequenceNumber":"12"}`), "a version 4 file needs --cwlogs or --decompress in its filter"},
		{"version 5", doc(5, "", `{"sequenceNumber":"12"}`), "version 5 is newer than this kinesis-shards understands (4)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeCheckpoint(c.b)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
}
