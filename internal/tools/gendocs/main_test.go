package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docsDir is the committed docs/ directory, from this package's directory.
var docsDir = filepath.Join("..", "..", "..", "docs")

// TestDocsUpToDate regenerates the pages and compares them with docs/.
func TestDocsUpToDate(t *testing.T) {
	tmp := t.TempDir()
	if err := generate(tmp); err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, d := range []struct{ sub, ext string }{{manDir, manExt}, {refDir, refExt}} {
		want, err := pages(filepath.Join(tmp, d.sub), d.ext)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("generated no %s pages", d.sub)
		}
		got, err := pages(filepath.Join(docsDir, d.sub), d.ext)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedKeys(want) {
			switch b, ok := got[name]; {
			case !ok:
				problems = append(problems, "missing docs/"+d.sub+"/"+name)
			case string(b) != string(want[name]):
				problems = append(problems, "stale docs/"+d.sub+"/"+name)
			}
		}
		for _, name := range sortedKeys(got) {
			if _, ok := want[name]; !ok {
				problems = append(problems, "docs/"+d.sub+"/"+name+" documents no command")
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("docs/ does not match the command tree; run make docs and commit the result:\n  %s", strings.Join(problems, "\n  "))
	}
}

// The pages are reproducible: no date but the fixed one, no auto-generated
// tag, and the same bytes twice.
func TestGenerateReproducible(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := generate(a); err != nil {
		t.Fatal(err)
	}
	if err := generate(b); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ sub, ext string }{{manDir, manExt}, {refDir, refExt}} {
		pa, _ := pages(filepath.Join(a, d.sub), d.ext)
		pb, _ := pages(filepath.Join(b, d.sub), d.ext)
		for name, content := range pa {
			if string(pb[name]) != string(content) {
				t.Errorf("%s/%s differs between two runs", d.sub, name)
			}
			if strings.Contains(string(content), "Auto generated") {
				t.Errorf("%s/%s carries cobra's auto-generated tag", d.sub, name)
			}
		}
	}
	root, err := os.ReadFile(filepath.Join(a, manDir, "kinesis-shards.1"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `.TH "KINESIS-SHARDS" "1" "Nov 2026" "kinesis-shards" "kinesis-shards manual"`; !strings.Contains(string(root), want+"\n") {
		t.Errorf("man header: want %s in\n%.300s", want, root)
	}
	// The completion command documents how to install each script.
	ref, err := os.ReadFile(filepath.Join(a, refDir, "kinesis-shards_completion_bash.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ref), "source <(kinesis-shards completion bash)") {
		t.Errorf("completion bash reference lacks the install line:\n%s", ref)
	}
}

// write adds, updates and removes pages, and leaves other files alone.
func TestWrite(t *testing.T) {
	out := t.TempDir()
	for _, f := range []struct{ path, content string }{
		{"man/kinesis-shards-gone.1", "old"},
		{"man/README", "keep"},
		{"reference/kinesis-shards_gone.md", "old"},
		{"reference/kinesis-shards.md", "stale"},
	} {
		p := filepath.Join(out, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(out); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	if err := generate(fresh); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ sub, ext string }{{manDir, manExt}, {refDir, refExt}} {
		got, _ := pages(filepath.Join(out, d.sub), d.ext)
		want, _ := pages(filepath.Join(fresh, d.sub), d.ext)
		if !slices.Equal(sortedKeys(got), sortedKeys(want)) {
			t.Errorf("%s: pages %q, want %q", d.sub, sortedKeys(got), sortedKeys(want))
		}
		for name, b := range want {
			if string(got[name]) != string(b) {
				t.Errorf("%s/%s not rewritten", d.sub, name)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "man", "README")); err != nil || string(b) != "keep" {
		t.Errorf("man/README: %q, %v; want it left alone", b, err)
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestCaskManpages keeps the Homebrew cask's list of man pages in
// .goreleaser.yaml equal to the pages generated: a cask names each page,
// and one that is missing from the archive fails `brew install`.
func TestCaskManpages(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("..", "..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	in := false
	for _, line := range strings.Split(string(cfg), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "manpages:":
			in = true
		case in && strings.HasPrefix(trimmed, "- "):
			listed = append(listed, strings.TrimPrefix(trimmed, "- man/"))
		case in && !strings.HasPrefix(trimmed, "#"):
			in = false
		}
	}
	tmp := t.TempDir()
	if err := generate(tmp); err != nil {
		t.Fatal(err)
	}
	want, err := pages(filepath.Join(tmp, manDir), manExt)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, sortedKeys(want)) {
		t.Errorf(".goreleaser.yaml homebrew_casks manpages lists\n  %q\nwant every generated page:\n  %q", listed, sortedKeys(want))
	}
}
