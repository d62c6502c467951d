package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// benchResults maps a benchmark name (without the -N suffix) to its
// metrics by unit ("ns/op", "cpu-ns/op", "MiB/cpu-s", "allocs/op", ...),
// one value per run.
type benchResults map[string]map[string]sample

// goTest runs `go test -bench` with -json and collects the results.
func goTest(ctx context.Context, c *config, pkg, pattern string, extra ...string) (benchResults, error) {
	benchtime := "500ms"
	if c.quick {
		benchtime = "200ms"
	}
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-cpu", "1",
		"-count", strconv.Itoa(c.count), "-benchtime", benchtime, "-json"}, extra...)
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = c.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s%s", strings.Join(args, " "), err, tailOf(stderr.String(), 2000), tailOf(testOutput(out), 2000))
	}
	return parseBench(testOutput(out)), nil
}

// testOutput joins the "output" events of go test -json into the text
// go test would have printed (a result line can come in pieces).
func testOutput(jsonLines []byte) string {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(jsonLines))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Action == "output" {
			b.WriteString(ev.Output)
		}
	}
	return b.String()
}

func parseBench(text string) benchResults {
	res := benchResults{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := res[name]
		if m == nil {
			m = map[string]sample{}
			res[name] = m
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			m[f[i+1]] = append(m[f[i+1]], v)
		}
	}
	return res
}

func (r benchResults) get(name, unit string) sample { return r[name][unit] }

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// goBuild builds a package of the module like `make build`.
func goBuild(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// pprofTop profiles one benchmark and returns the top of its CPU profile.
func pprofTop(ctx context.Context, c *config, pkg, pattern string, nodes int) (string, error) {
	dir, err := os.MkdirTemp(c.tmp, "pprof-")
	if err != nil {
		return "", err
	}
	prof, testBin := filepath.Join(dir, "cpu.out"), filepath.Join(dir, "test.bin")
	benchtime := "3s"
	if c.quick {
		benchtime = "1s"
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", pattern, "-cpu", "1", "-benchtime", benchtime,
		"-cpuprofile", prof, "-o", testBin, pkg)
	cmd.Dir = c.root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("profile %s %s: %v\n%s", pkg, pattern, err, tailOf(string(b), 2000))
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount", strconv.Itoa(nodes), testBin, prof).Output()
	if err != nil {
		return "", fmt.Errorf("pprof: %v", err)
	}
	// From the column header on.
	s := string(out)
	if i := strings.Index(s, "      flat"); i >= 0 {
		s = s[i:]
	}
	return strings.TrimRight(s, "\n"), nil
}

// runGoBenchmarks: the tail hot path piece by piece, and `tree`.
func runGoBenchmarks(ctx context.Context, c *config, rep *report) error {
	c.log("go test -bench ./tail/ (hot path)")
	t0 := time.Now()
	tail, err := goTest(ctx, c, "./tail/", "^Benchmark(GetRecords|DecodeGetRecords|Convert|ReadPage)$")
	if err != nil {
		return err
	}
	c.log("go test -bench ./render/ (RecordWriter) (%s so far)", time.Since(t0).Round(time.Second))
	rw, err := goTest(ctx, c, "./render/", "^BenchmarkRecordWriter$")
	if err != nil {
		return err
	}
	hotPathSection(c, rep, tail, rw)

	c.log("go test -bench ./render/ (tree, 10,000 shards)")
	tree, err := goTest(ctx, c, "./render/", "^Benchmark(Build10000|Tree10000|Tree10000Color|Tree10000Wide)$")
	if err != nil {
		return err
	}
	treeSection(rep, tree)
	if err := leaseSection(ctx, c, rep); err != nil {
		return err
	}

	c.log("profiles")
	var prof strings.Builder
	for _, p := range []struct{ pkg, pattern, what string }{
		{"./tail/", "^BenchmarkReadPage$/^1KiB$", "tail: BenchmarkReadPage/1KiB (GetRecords answered from memory, decoded, converted, delivered)"},
		{"./render/", "^BenchmarkRecordWriter$/^json$/^1KiB$", "render: BenchmarkRecordWriter/json/1KiB (the JSON lines of a page, one flush)"},
		{"./tail/", "^BenchmarkReadPage$/^100B$", "tail: BenchmarkReadPage/100B"},
		{"./render/", "^BenchmarkRecordWriter$/^json$/^100B$", "render: BenchmarkRecordWriter/json/100B"},
	} {
		top, err := pprofTop(ctx, c, p.pkg, p.pattern, 14)
		if err != nil {
			return err
		}
		fmt.Fprintf(&prof, "%s:\n\n```\n%s\n```\n\n", p.what, top)
	}
	rep.add(90, "Profiles of the hot path (pprof -top)", "CPU profiles of the benchmarks above (`go test -cpuprofile`, GOMAXPROCS=1), regenerated by each run. "+
		"What remains is the base64 decoding of the payloads (`encoding/base64`), the JSON escaping of the output, "+
		"and the runtime's allocation and GC of each page's buffers.\n\n"+prof.String())
	return nil
}

// pageBenches are the hot-path benchmarks by row label.
var hotRows = []struct{ label, name string }{
	{"GetRecords call, SDK decoder (before)", "BenchmarkGetRecords/sdk/%s"},
	{"GetRecords call, tail's decoder (after)", "BenchmarkGetRecords/fast/%s"},
	{"… of which decoding", "BenchmarkDecodeGetRecords/%s"},
	{"convert (KPL check, records)", "BenchmarkConvert/%s"},
	{"reader per page: call + convert + deliverBatch", "BenchmarkReadPage/%s"},
	{"RecordWriter json (text payloads)", "BenchmarkRecordWriter/json/%s"},
	{"RecordWriter json (binary payloads: base64)", "BenchmarkRecordWriter/json-binary/%s"},
	{"RecordWriter raw", "BenchmarkRecordWriter/raw/%s"},
	{"RecordWriter text (terminal)", "BenchmarkRecordWriter/text/%s"},
}

func hotPathSection(c *config, rep *report, tail, rw benchResults) {
	all := benchResults{}
	for k, v := range tail {
		all[k] = v
	}
	for k, v := range rw {
		all[k] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Go benchmarks (`-cpu 1 -count %d`) on one full GetRecords page from internal/kinesistest/wirestub: 1 KiB records (10,000 a page, 10 MiB) "+
		"and 100 B records (10,000 a page, 1 MiB); text payloads are JSON-looking lines with quotes to escape. "+
		"MiB are payload + partition key bytes. The figures are per CPU-second of the benchmark process (so per core).\n\n", c.count)
	for _, sz := range []string{"1KiB", "100B"} {
		fmt.Fprintf(&b, "**%s records** (medians for the allocation columns)\n\n| Step | MiB / CPU-s | records / CPU-s | CPU ms / page | allocs / page | allocated / page |\n|---|---|---|---|---|---|\n", sizeLabel[sz])
		for _, row := range hotRows {
			name := fmt.Sprintf(row.name, sz)
			if all[name] == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row.label,
				all.get(name, "MiB/cpu-s").cell(), all.get(name, "records/cpu-s").cell(),
				scale(all.get(name, "cpu-ns/op"), 1e-6).cell(), num(all.get(name, "allocs/op").median()), sizeCell(all.get(name, "B/op")))
		}
		b.WriteString("\n")
	}
	// Decode and deliver per core: reader + writer CPU per page.
	b.WriteString("**Decode and deliver, per core** (the reader's page plus the writer's page, CPU time added run by run; " +
		"no network, no scheduler: the end-to-end figures below have those)\n\n" +
		"| Records | Format | MiB / CPU-s | records / CPU-s | shards at 2 MiB/s one core keeps up with |\n|---|---|---|---|---|\n")
	for _, sz := range []string{"1KiB", "100B"} {
		page := tail.get("BenchmarkReadPage/"+sz, "cpu-ns/op")
		mib := tail.get("BenchmarkReadPage/"+sz, "MiB/cpu-s")
		recs := tail.get("BenchmarkReadPage/"+sz, "records/cpu-s")
		for _, f := range []string{"json", "raw"} {
			w := rw.get("BenchmarkRecordWriter/"+f+"/"+sz, "cpu-ns/op")
			var m, r, sh sample
			for i := range min(len(page), len(w), len(mib), len(recs)) {
				// bytes/page and records/page from the reader's own figures.
				bytesPerPage := mib[i] * (1 << 20) * page[i] / 1e9
				recsPerPage := recs[i] * page[i] / 1e9
				sec := (page[i] + w[i]) / 1e9
				m = append(m, bytesPerPage/(1<<20)/sec)
				r = append(r, recsPerPage/sec)
				sh = append(sh, bytesPerPage/(1<<20)/sec/2)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", sizeLabel[sz], f, m.cell(), r.cell(), sh.cell())
			rep.inproc = append(rep.inproc, inprocFigure{sz, f, m})
		}
	}
	rep.add(20, "Tail hot path, piece by piece (in-process)", b.String())
}

// sizeCell is the median of a byte count, in a unit that suits it.
func sizeCell(s sample) string {
	if len(s) == 0 {
		return "–"
	}
	v := s.median()
	switch {
	case v >= 1<<20:
		return num(v/(1<<20)) + " MiB"
	case v >= 1<<10:
		return num(v/(1<<10)) + " KiB"
	}
	return num(v) + " B"
}

var sizeLabel = map[string]string{"1KiB": "1 KiB", "100B": "100 B"}

func scale(s sample, k float64) sample {
	out := make(sample, len(s))
	for i, v := range s {
		out[i] = v * k
	}
	return out
}

func treeSection(rep *report, tree benchResults) {
	var b strings.Builder
	b.WriteString("render/lineage_bench_test.go (the `tree` command's own benchmark; docs/PERFORMANCE.md, section \"tree\", explains it): " +
		"a synthetic 10,000-shard history listed as the service lists it, built into a graph (`lineage.Build`) and rendered to io.Discard, " +
		"with `-cpu 1 -count N` (GOMAXPROCS=1: one core does the work, the garbage collector's included), so the time per op is the CPU time of one core " +
		"when nothing else runs on it; on this shared machine the minimum is the least disturbed run.\n\n" +
		"| Benchmark | ms / op | allocs / op | allocated / op |\n|---|---|---|---|\n")
	for _, n := range []struct{ name, label string }{
		{"BenchmarkBuild10000", "Build only"},
		{"BenchmarkTree10000", "Build + tree (a pipe: plain)"},
		{"BenchmarkTree10000Color", "Build + tree (a terminal: colour, short ids)"},
		{"BenchmarkTree10000Wide", "Build + tree --wide"},
	} {
		if tree[n.name] == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", n.label, scale(tree.get(n.name, "ns/op"), 1e-6).cell(),
			num(tree.get(n.name, "allocs/op").median()), sizeCell(tree.get(n.name, "B/op")))
	}
	rep.add(60, "`tree` of a 10,000-shard history", b.String())
	worst := sample{}
	for _, n := range []string{"BenchmarkTree10000", "BenchmarkTree10000Color"} {
		s := tree.get(n, "ns/op")
		if len(s) > 0 && (len(worst) == 0 || s.median() > worst.median()) {
			worst = s
		}
	}
	if len(worst) > 0 {
		ms := worst.median() / 1e6
		rep.target(target{What: "`tree` of 10,000 shards: build + render", Goal: "< 200 ms of CPU",
			Measured: fmt.Sprintf("%s ms (the slower of plain and colour, -cpu 1; min %s ms)", num(ms), num(worst.min()/1e6)), Met: ms < 200})
	}
}
