package jq

import (
	"context"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Select is tail.Options.Select for --filter (f) and --jq (tr), either of
// which may be nil. Each record (or, with --cwlogs, log event) is made into
// its input once; the filter decides whether it is kept, and the
// transform's outputs become its Out. A record the transform makes nothing
// of (no output, or an error) is dropped like one the filter drops: it is
// read, not printed. The context ending mid-batch stops it there, with the
// records before decided. Calls may come from several goroutines.
func Select(f *Filter, tr *Transform) func(ctx context.Context, batch []tail.Record) ([]tail.Record, int) {
	return func(ctx context.Context, batch []tail.Record) ([]tail.Record, int) {
		out := make([]tail.Record, 0, len(batch))
		var buf []byte // every Out of the batch, back to back
		var ends []int // where each kept record's Out ends in buf
		for i := range batch {
			r := &batch[i]
			var in map[string]any
			if r.Log != nil {
				in = LogEventInput(r, r.Log)
			} else {
				in = RecordInput(r)
			}
			if f != nil {
				keep, err := f.Keep(ctx, in)
				if err != nil {
					return withOut(out, buf, ends), i
				}
				if !keep {
					continue
				}
			}
			if tr != nil {
				var n int
				var err error
				if buf, n, err = tr.Append(ctx, buf, in); err != nil {
					return withOut(out, buf, ends), i
				}
				if n == 0 {
					continue
				}
				ends = append(ends, len(buf))
			}
			out = append(out, *r)
		}
		return withOut(out, buf, ends), len(batch)
	}
}

// withOut gives each kept record its part of buf (once buf no longer
// grows, so the parts stay valid).
func withOut(out []tail.Record, buf []byte, ends []int) []tail.Record {
	if ends == nil {
		return out
	}
	start := 0
	for i, end := range ends {
		out[i].Out = buf[start:end:end]
		start = end
	}
	return out
}
