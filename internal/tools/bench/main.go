package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// config is what every section needs.
type config struct {
	root  string // repository root
	bin   string // the kinesis-shards binary under test
	quick bool
	count int // runs per figure
	tmp   string
	log   func(format string, args ...any)
}

// maxShards (-max-shards) skips the bigger throughput runs.
var maxShards int

// sections in the order they run; -only picks some.
var sections = []struct {
	name string
	run  func(context.Context, *config, *report) error
}{
	{"gobench", runGoBenchmarks},
	{"jq", runJQBenchmarks},
	{"tail", runTailThroughput},
	{"rss", runTailMemory},
	{"efo", runEFOCost},
	{"latency", runLatency},
	{"cli", runCLIComparisons},
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "stub" {
		if err := stubMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench stub:", err)
			os.Exit(1)
		}
		return
	}
	var (
		quick = flag.Bool("quick", false, "one short run of each figure (a smoke test, ~3 min; the file says so)")
		out   = flag.String("out", "docs/BENCHMARKS.md", "the report to write")
		count = flag.Int("count", 0, "runs per figure (default 5, or 1 with -quick)")
		only  = flag.String("only", "", "comma-separated sections to run: "+sectionNames())
		bin   = flag.String("bin", "", "the kinesis-shards binary (default: build one)")
	)
	flag.IntVar(&maxShards, "max-shards", 0, "skip throughput runs over more shards than this (0: none skipped)")
	flag.Parse()
	if err := run(*quick, *out, *count, *only, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func sectionNames() string {
	var names []string
	for _, s := range sections {
		names = append(names, s.name)
	}
	return strings.Join(names, ",")
}

func run(quick bool, out string, count int, only, bin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	if count <= 0 {
		count = 5
		if quick {
			count = 1
		}
	}
	tmp, err := os.MkdirTemp("", "kinesis-shards-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	c := &config{root: root, quick: quick, count: count, tmp: tmp, log: func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.0fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}}
	if bin == "" {
		c.log("building kinesis-shards")
		bin = filepath.Join(tmp, "kinesis-shards")
		if err := goBuild(ctx, root, bin, "."); err != nil {
			return err
		}
	}
	if c.bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("taskset (util-linux) is not on PATH: the throughput runs pin the tail and the stub to a core each")
	}
	want := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.ContainsFunc(sections, func(x struct {
				name string
				run  func(context.Context, *config, *report) error
			}) bool {
				return x.name == s
			}) {
				return fmt.Errorf("-only: no section %q (have %s)", s, sectionNames())
			}
			want[s] = true
		}
	}
	rep := newReport(c)
	for _, s := range sections {
		if len(want) > 0 && !want[s.name] {
			continue
		}
		c.log("== %s", s.name)
		if err := s.run(ctx, c, rep); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.log("%s failed: %v", s.name, err)
			rep.failed(s.name, err)
		}
	}
	rep.elapsed = time.Since(start)
	path := out
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	c.log("wrote %s", path)
	if n := rep.failures(); n > 0 {
		return fmt.Errorf("%d section(s) failed; the report says which", n)
	}
	return nil
}
