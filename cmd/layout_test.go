package cmd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestArchitectureLayers: the layers drawn in docs/ARCHITECTURE.md hold.
// Every package of the binary is in one layer, or is a helper; a package
// imports only packages of layers below its own, and helpers; a helper
// imports only helpers.
func TestArchitectureLayers(t *testing.T) {
	t.Parallel()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	layer := map[string]int{}
	helper := map[string]bool{}
	layerRE := regexp.MustCompile(`^ layer (\d+)\s+(.+)$`)
	inHelpers := false
	for _, line := range strings.Split(string(b), "\n") {
		if m := layerRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			for _, p := range strings.Split(m[2], " · ") {
				layer[strings.TrimSpace(p)] = n
			}
			continue
		}
		if strings.HasPrefix(line, " helpers of any layer:") {
			inHelpers = true
		} else if !strings.HasPrefix(line, "   ") {
			inHelpers = false
		}
		if inHelpers {
			for _, m := range regexp.MustCompile(`internal/\w+`).FindAllString(line, -1) {
				helper[m] = true
			}
		}
	}
	if len(layer) < 10 || len(helper) == 0 {
		t.Fatalf("docs/ARCHITECTURE.md: found %d layered packages and %d helpers; is the picture still there?", len(layer), len(helper))
	}
	c := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", ".")
	c.Dir = root
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, "|")
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if rel == "" {
			rel = "main.go"
		}
		seen[rel] = true
		own, isLayered := layer[rel]
		if !isLayered && !helper[rel] {
			t.Errorf("%s is in no layer of docs/ARCHITECTURE.md", rel)
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			switch {
			case helper[dep]:
			case helper[rel]:
				t.Errorf("the helper %s imports %s, which is not a helper", rel, dep)
			case layer[dep] <= own:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go to lower layers only", rel, own, dep, layer[dep])
			}
		}
	}
	for p := range layer {
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md draws %s, which the binary does not link", p)
		}
	}
	for p := range helper {
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md names the helper %s, which the binary does not link", p)
		}
	}
}
