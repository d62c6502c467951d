package jq

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/itchyny/gojq"
)

// maxOutputPerRecord bounds what --jq keeps of one record before printing
// it (outputs are printed only once the record is known not to fail): an
// endless generator such as repeat(.) is an error on that record, not a
// process that grows without end.
const maxOutputPerRecord = 16 << 20

// maxDistinctErrors bounds the warnings: an error that quotes each record's
// value would otherwise warn once per record.
const maxDistinctErrors = 20

// Filter keeps the records for which a program's first output is true.
// Calls may come from several goroutines.
type Filter struct {
	p    *Program
	errs *errorLog
}

// Filter returns a filter that reports each distinct error once through
// warn (one line, without a trailing newline).
func (p *Program) Filter(warn func(string)) *Filter {
	return &Filter{p: p, errs: newErrorLog(p.flag, warn)}
}

// Keep reports whether the record whose input is in is kept: the first
// output is anything but false or null. No output, or an error before the
// first output, drops it (an error is warned about). err is non-nil only
// when ctx ended during the evaluation: the record was not decided.
func (f *Filter) Keep(ctx context.Context, in map[string]any) (keep bool, err error) {
	v, ok := f.p.code.RunWithContext(ctx, in).Next()
	if !ok {
		return false, nil
	}
	if e, isErr := v.(error); isErr {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		f.errs.note(in, e)
		return false, nil
	}
	return v != nil && v != false, nil
}

// Skipped counts the records dropped because the expression failed.
func (f *Filter) Skipped() int64 { return f.errs.count() }

// Transform prints every output of a program.
type Transform struct {
	p    *Program
	raw  bool
	errs *errorLog
}

// Transform returns a transform; with raw, string outputs are printed as
// they are (jq -r), other values as JSON.
func (p *Program) Transform(raw bool, warn func(string)) *Transform {
	return &Transform{p: p, raw: raw, errs: newErrorLog(p.flag, warn)}
}

// Append appends the lines of every output for the record whose input is
// in, and says how many it appended. A record whose evaluation fails
// appends nothing (n = 0; the error is warned about). err is non-nil only
// when ctx ended during the evaluation.
func (t *Transform) Append(ctx context.Context, b []byte, in map[string]any) (out []byte, n int, err error) {
	start := len(b)
	iter := t.p.code.RunWithContext(ctx, in)
	for {
		v, ok := iter.Next()
		if !ok {
			return b, n, nil
		}
		if e, isErr := v.(error); isErr {
			if ctx.Err() != nil {
				return b[:start], 0, ctx.Err()
			}
			t.errs.note(in, e)
			return b[:start], 0, nil
		}
		b = t.appendValue(b, v)
		n++
		if len(b)-start > maxOutputPerRecord {
			t.errs.note(in, fmt.Errorf("more than %d MiB of output for one record", maxOutputPerRecord>>20))
			return b[:start], 0, nil
		}
	}
}

// Skipped counts the records dropped because the expression failed.
func (t *Transform) Skipped() int64 { return t.errs.count() }

func (t *Transform) appendValue(b []byte, v any) []byte {
	if s, ok := v.(string); ok && t.raw {
		return append(append(b, s...), '\n')
	}
	j, _ := gojq.Marshal(v) // fails only on types gojq never yields
	return append(append(b, j...), '\n')
}

// errorLog warns once per distinct error message and counts the records
// skipped.
type errorLog struct {
	mu      sync.Mutex
	flag    string
	warn    func(string)
	seen    map[string]bool
	skipped int64
}

func newErrorLog(flag string, warn func(string)) *errorLog {
	if warn == nil {
		warn = func(string) {}
	}
	return &errorLog{flag: flag, warn: warn, seen: map[string]bool{}}
}

func (l *errorLog) note(in map[string]any, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skipped++
	msg := oneLine(err.Error(), 300)
	if l.seen[msg] {
		return
	}
	switch {
	case len(l.seen) < maxDistinctErrors:
		l.warn(fmt.Sprintf("%s failed on %s and skipped it: %s (shown once; every record it fails on is skipped)", l.flag, where(in), msg))
	case len(l.seen) == maxDistinctErrors:
		l.warn(fmt.Sprintf("%s failed with %d different errors; further ones are not shown (the records are skipped)", l.flag, maxDistinctErrors))
	default:
		return
	}
	l.seen[msg] = true
}

func (l *errorLog) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skipped
}

// where names the record of an input: shard, sequence number, and the
// sub-sequence number and log event index where there are.
func where(in map[string]any) string {
	s := fmt.Sprintf("the record %v %v", in["shardId"], in["sequenceNumber"])
	if sub, ok := in["subSequenceNumber"].(int); ok {
		s += "/" + strconv.Itoa(sub)
	}
	if i, ok := in["logEventIndex"].(int); ok {
		s = fmt.Sprintf("log event %d of %s", i, s)
	}
	return s
}
