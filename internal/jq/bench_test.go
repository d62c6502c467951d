package jq

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/cpumeter"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// What --filter and --jq cost next to the plain JSON lines: one page of
// 10,000 records with JSON payloads of about 200 bytes, one in ten at
// level "error", from the record as the reader delivers it, through the
// Select that tail runs on each page (with a context that can end, as the
// readers' does: gojq then checks it at every step), to the lines written
// out. Run with -cpu 1: the figures are per core.
// docs/BENCHMARKS.md has the figures (internal/tools/bench writes them).

const benchPage = 10000

func benchRecords() (recs []tail.Record, payload int) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i := range benchPage {
		level, msg := "info", "payment authorised"
		if i%10 == 3 {
			level, msg = "error", "payment declined"
		}
		data := fmt.Sprintf(`{"time":"2026-11-30T10:%02d:%02d.%03dZ","level":%q,"service":"checkout","host":"ip-10-0-%d-%d","requestId":"8f5e3c1a-2b4d-4e6f-8a9b-%012d","msg":%q,"orderId":%d,"latencyMs":%d.%d}`,
			i/60%60, i%60, i%1000, level, i%256, i/256%256, i, msg, 1234567+i, i%500, i%10)
		recs = append(recs, tail.Record{ShardID: "shardId-000000000042", SequenceNumber: fmt.Sprintf("495903382714902566085596925383615710959215759891365%05d", i),
			PartitionKey: fmt.Sprintf("order-%d", i%977), ArrivalTime: at.Add(time.Duration(i) * time.Millisecond), Data: []byte(data)})
		payload += len(data) + len(recs[i].PartitionKey)
	}
	return recs, payload
}

func BenchmarkJQ(b *testing.B) {
	recs, payload := benchRecords()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(b *testing.B, page func() error) {
		b.ReportAllocs()
		b.SetBytes(int64(payload))
		m := cpumeter.Start()
		for b.Loop() {
			if err := page(); err != nil {
				b.Fatal(err)
			}
		}
		m.Report(b, len(recs), payload)
	}
	w := render.NewRecordWriter(io.Discard, render.RecordJSON, render.NewTheme(false))
	// The plain JSON lines (tail -o json): what the others are measured
	// against.
	b.Run("none", func(b *testing.B) {
		run(b, func() error { return w.Write(recs) })
	})
	// Building the inputs only: the objects and the payloads parsed.
	b.Run("input", func(b *testing.B) {
		run(b, func() error {
			for i := range recs {
				_ = RecordInput(&recs[i])
			}
			return nil
		})
	})
	selected := func(sel func(context.Context, []tail.Record) ([]tail.Record, int), want int) func() error {
		return func() error {
			out, decided := sel(ctx, recs)
			if decided != len(recs) || len(out) != want {
				return fmt.Errorf("kept %d records, decided %d", len(out), decided)
			}
			return w.Write(out)
		}
	}
	b.Run("filter", func(b *testing.B) {
		f := mustCompileB(b, "--filter", `.payload.level == "error"`).Filter(nil)
		run(b, selected(Select(f, nil), len(recs)/10))
	})
	b.Run("jq", func(b *testing.B) {
		tr := mustCompileB(b, "--jq", `{at: .arrivalTime, level: .payload.level, msg: .payload.msg}`).Transform(false, nil)
		run(b, selected(Select(nil, tr), len(recs)))
	})
}

func mustCompileB(b *testing.B, flag, expr string) *Program {
	p, err := Compile(flag, expr)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
