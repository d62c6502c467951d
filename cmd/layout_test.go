package cmd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

const module = "github.com/kinesis-shards/kinesis-shards"

// TestPackageDocs: every package has a doc.go that says what it is for,
// and the doc.go of each package of the binary ends with an "Imports:"
// paragraph naming every package of this module it imports, so the
// direction of imports drawn in docs/ARCHITECTURE.md can be read, and
// checked, package by package.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Name}}|{{.Dir}}|{{join .Imports \",\"}}", "./...")
	c.Dir = root
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 4)
		path, name, dir, imports := parts[0], parts[1], parts[2], strings.Split(parts[3], ",")
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if rel == "" {
			continue // main.go: one line that calls cmd
		}
		b, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go", rel)
			continue
		}
		doc := string(b)
		lead := "// Package " + name + " "
		if name == "main" {
			lead = "// Command "
		}
		if !strings.HasPrefix(doc, lead) {
			t.Errorf("%s/doc.go does not start with %q", rel, lead)
		}
		if name == "main" || strings.HasPrefix(rel, "internal/kinesistest") {
			continue // tools and test harness: no place in the picture
		}
		i := strings.Index(doc, "// Imports:")
		if i < 0 {
			t.Errorf("%s/doc.go has no Imports: paragraph", rel)
			continue
		}
		para := strings.ReplaceAll(doc[i:], "\n//", "")
		if strings.Contains(para, "every other package of the module") {
			continue
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			want := strings.TrimPrefix(imp, module+"/")
			if !namesPackage(para, want) {
				t.Errorf("%s imports %s, which its doc.go's Imports: paragraph does not name", rel, want)
			}
		}
	}
}

// namesPackage: the paragraph names the package by its path in the module
// (internal/kstream) or, for the top-level packages, by name (tail).
func namesPackage(para, rel string) bool {
	re := regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(rel) + `($|[^\w/])`)
	return re.MatchString(para)
}
