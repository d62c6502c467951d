package golden

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper()                    {}
func (r *recorder) Name() string               { return "TestX/case" }
func (r *recorder) Errorf(f string, a ...any)  { r.errs = append(r.errs, f) }
func (r *recorder) Fatalf(f string, a ...any)  { r.errs = append(r.errs, f); r.fatal = true; panic(r) }
func (r *recorder) Fatal(a ...any)             { r.fatal = true; panic(r) }
func (r *recorder) run(fn func(tb testing.TB)) { defer func() { _ = recover() }(); fn(r) }

func setUpdate(t *testing.T, on bool) {
	old := update.Value.String()
	v := "false"
	if on {
		v = "true"
	}
	if err := update.Value.Set(v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { update.Value.Set(old) })
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	plain, zipped := filepath.Join(dir, "a", "out.txt"), filepath.Join(dir, "out.json.gz")

	setUpdate(t, true)
	for _, p := range []string{plain, zipped} {
		r := &recorder{TB: t}
		r.run(func(tb testing.TB) { Check(tb, p, []byte("one\ntwo\n")) })
		if len(r.errs) != 0 {
			t.Fatalf("-update %s: %q", p, r.errs)
		}
	}
	b, _ := os.ReadFile(zipped)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not gzipped: %v", zipped, err)
	}
	zr.Close()

	setUpdate(t, false)
	for _, tt := range []struct {
		path string
		got  string
		fail bool
	}{
		{plain, "one\ntwo\n", false},
		{zipped, "one\ntwo\n", false},
		{plain, "one\nthree\n", true},
		{zipped, "one\n", true},
		{plain, "one\r\ntwo\r\n", true}, // Check compares bytes
	} {
		r := &recorder{TB: t}
		r.run(func(tb testing.TB) { Check(tb, tt.path, []byte(tt.got)) })
		if failed := len(r.errs) > 0; failed != tt.fail || r.fatal {
			t.Errorf("Check(%s, %q): errors %q, fatal %v; want a failure: %v", tt.path, tt.got, r.errs, r.fatal, tt.fail)
		}
	}
	r := &recorder{TB: t}
	r.run(func(tb testing.TB) { Check(tb, filepath.Join(dir, "missing.txt"), nil) })
	if !r.fatal || !strings.Contains(r.errs[0], "-update") {
		t.Errorf("a missing file: %q, fatal %v", r.errs, r.fatal)
	}
}

func TestRequireEqual(t *testing.T) {
	t.Chdir(t.TempDir())
	setUpdate(t, true)
	r := &recorder{TB: t}
	r.run(func(tb testing.TB) { RequireEqual(tb, []byte("screen\r\nline\n")) })
	if b, err := os.ReadFile(filepath.Join("testdata", "TestX", "case.golden")); err != nil || string(b) != "screen\nline\n" {
		t.Fatalf("written %q, %v", b, err)
	}
	setUpdate(t, false)
	for _, tt := range []struct {
		got  string
		fail bool
	}{{"screen\nline\n", false}, {"screen\r\nline\r\n", false}, {"screen\n", true}} {
		r := &recorder{TB: t}
		r.run(func(tb testing.TB) { RequireEqual(tb, []byte(tt.got)) })
		if r.fatal != tt.fail || len(r.errs) > 0 != tt.fail {
			t.Errorf("RequireEqual(%q): errors %q, fatal %v; want a failure: %v", tt.got, r.errs, r.fatal, tt.fail)
		}
	}
}
