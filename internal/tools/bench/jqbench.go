package main

import (
	"context"
	"fmt"
	"strings"
)

// jqRows are internal/jq's BenchmarkJQ cases by row label.
var jqRows = []struct{ label, name string }{
	{"no filter: the JSON lines (`tail -o json`)", "BenchmarkJQ/none"},
	{"building the inputs only (the line as an object, the payload parsed)", "BenchmarkJQ/input"},
	{"`--filter '.payload.level == \"error\"'` (keeps 1 in 10), then the kept lines", "BenchmarkJQ/filter"},
	{"`--jq '{at: .arrivalTime, level: .payload.level, msg: .payload.msg}'`", "BenchmarkJQ/jq"},
}

// runJQBenchmarks: what tail --filter and --jq cost per core, next to no
// filter.
func runJQBenchmarks(ctx context.Context, c *config, rep *report) error {
	c.log("go test -bench ./internal/jq/ (--filter, --jq)")
	res, err := goTest(ctx, c, "./internal/jq/", "^BenchmarkJQ$")
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "internal/jq/bench_test.go (`-cpu 1 -count %d`): one page of 10,000 records with JSON payloads of about 200 bytes "+
		"(one in ten at level \"error\"), from the records as the reader delivers them, through the Select that tail runs on each page "+
		"(internal/jq.Select, with a context that can end, as the readers' does), to the lines written out by tail's RecordWriter (to io.Discard). "+
		"The figures are per CPU-second of the benchmark process, so per core; \"shards\" is how many shards at their full read quota "+
		"(2 MiB/s of these records) one core keeps up with, for this step alone.\n\n"+
		"| Step | records / CPU-s | MiB / CPU-s | shards at 2 MiB/s | allocs / record | cost next to no filter |\n|---|---|---|---|---|---|\n", c.count)
	base := res.get("BenchmarkJQ/none", "records/cpu-s").median()
	for _, row := range jqRows {
		if res[row.name] == nil {
			continue
		}
		recs := res.get(row.name, "records/cpu-s")
		times := "1×"
		if row.name != "BenchmarkJQ/none" {
			times = num(base/recs.median()) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row.label, recs.cell(), res.get(row.name, "MiB/cpu-s").cell(),
			scale(res.get(row.name, "MiB/cpu-s"), 0.5).cell(), num(res.get(row.name, "allocs/op").median()/10000), times)
	}
	b.WriteString("\nMost of a filter's cost is the input, not the expression: the record made into an object and its payload " +
		"parsed (encoding/json, numbers kept exact as json.Number) for every record, kept or not. tail evaluates in each shard's " +
		"reader before the delivery lock, so the shards of a stream share the machine's cores; only the writing is serialised.\n")
	rep.add(25, "jq filters and transforms (`tail --filter`, `--jq`), in-process", b.String())
	return nil
}
