package golden

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	// teatest defines -update through charmbracelet's golden package;
	// importing it here makes it initialise first, so that this package
	// shares that flag rather than defining it a second time (a panic).
	_ "github.com/charmbracelet/x/exp/golden"
)

// update is the -update flag, whoever defined it.
var update = func() *flag.Flag {
	if f := flag.Lookup("update"); f != nil {
		return f
	}
	flag.Bool("update", false, "rewrite the golden files under testdata/")
	return flag.Lookup("update")
}()

// Updating reports whether the tests run with -update.
func Updating() bool { return update.Value.String() == "true" }

// maxDiff bounds the diff a mismatch prints.
const maxDiff = 8000

// Check compares got with the file at path (relative to the package's
// directory, normally under testdata/), or writes got there with -update.
// A path ending in .gz is stored gzipped and compared unzipped. A mismatch
// fails the test with a unified diff and lets it go on.
func Check(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if Updating() {
		write(tb, path, got)
		return
	}
	if d := diff(tb, path, got, false); d != "" {
		tb.Errorf("output differs from %s (rerun with -update if the change is intended):\n%s", path, d)
	}
}

// RequireEqual compares got with testdata/<test name>.golden, with line
// endings made \n on both sides (the layout of charmbracelet's golden
// package, which the dashboard's screens use), and stops the test on a
// mismatch.
func RequireEqual(tb testing.TB, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", tb.Name()+".golden")
	got = unixLines(got)
	if Updating() {
		write(tb, path, got)
		return
	}
	if d := diff(tb, path, got, true); d != "" {
		tb.Fatalf("output differs from %s (rerun with -update if the change is intended):\n%s", path, d)
	}
}

func write(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if strings.HasSuffix(path, ".gz") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(got)
		zw.Close()
		got = buf.Bytes()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, got, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// diff reads the golden file and returns its diff with got ("" when they
// are equal).
func diff(tb testing.TB, path string, got []byte, lines bool) string {
	tb.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (create it with: go test . -run '%s' -update)", err, tb.Name())
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(want))
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		if want, err = io.ReadAll(zr); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
	}
	if lines {
		want = unixLines(want)
	}
	if bytes.Equal(got, want) {
		return ""
	}
	d := udiff.Unified(path, "got", string(want), string(got))
	if len(d) > maxDiff {
		d = d[:maxDiff] + "\n[diff cut]"
	}
	return d
}

func unixLines(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) }
