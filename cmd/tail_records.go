package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kinesis-shards/kinesis-shards/internal/jq"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// What tail makes of each record before it is printed: --filter and --jq
// (jq expressions, evaluated in-process) and --cwlogs (CloudWatch Logs
// subscription batches, one line per log event).

// tailRecordFlags are the flags of this file.
type tailRecordFlags struct {
	Filter string
	JQ     string
	CWLogs bool

	// Compiled by validation, before any call.
	filter, jq *jq.Program
}

func (r *tailRecordFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&r.Filter, "filter", "", "print only the records for which this jq `EXPR` is true (on the -o json object, plus .payload: the payload's JSON)")
	fl.StringVar(&r.JQ, "jq", "", "print what this jq `EXPR` makes of each record, one JSON value per line (strings as they are with --format raw)")
	fl.BoolVar(&r.CWLogs, "cwlogs", false, "unpack CloudWatch Logs subscription batches: one line per log event")
}

// validateRecords compiles the expressions: a mistake is a usage error
// naming where it is, found before anything is sent.
func (o *TailOptions) validateRecords() error {
	for _, e := range []struct {
		flag string
		expr string
		dst  **jq.Program
	}{{"filter", o.Filter, &o.filter}, {"jq", o.JQ, &o.jq}} {
		if !o.given[e.flag] {
			continue
		}
		p, err := jq.Compile("--"+e.flag, e.expr)
		if err != nil {
			return usageError(err)
		}
		*e.dst = p
	}
	return nil
}

// recordSelect is the tail's Select for --filter and --jq (nil without
// them). Their warnings (one per distinct error) go to stderr; skipped
// reports how many records their errors skipped.
func (o *TailOptions) recordSelect(f *Factory) (sel func(context.Context, []tail.Record) ([]tail.Record, int), skipped func() int64) {
	var fl *jq.Filter
	var tr *jq.Transform
	warn := func(s string) { fmt.Fprintln(f.IO.ErrOut, "warning: "+s) }
	if o.filter != nil {
		fl = o.filter.Filter(warn)
	}
	if o.jq != nil {
		tr = o.jq.Transform(o.format == render.RecordRaw, warn)
	}
	skipped = func() int64 {
		var n int64
		if fl != nil {
			n += fl.Skipped()
		}
		if tr != nil {
			n += tr.Skipped()
		}
		return n
	}
	if fl == nil && tr == nil {
		return nil, skipped
	}
	return jq.Select(fl, tr), skipped
}

// selectSuffix names the default checkpoint file of a run with --filter
// or --jq: it moves past the records they drop, so a run with other
// expressions (or none) must not resume from it and silently skip them.
func (o *TailOptions) selectSuffix() string {
	if o.filter == nil && o.jq == nil {
		return ""
	}
	h := sha256.Sum256([]byte("filter\x00" + o.Filter + "\x00jq\x00" + o.JQ))
	return ".jq-" + hex.EncodeToString(h[:6])
}

// tailSummary is the line on stderr at the end of a run.
func (o *TailOptions) tailSummary(res tail.Result, skipped int64, path string) string {
	noun := "record"
	if o.CWLogs {
		noun = "log event"
	}
	msg := "read " + text.Plural(int(res.Records+res.Dropped), noun) + " from " + text.Plural(res.Readers, "shard")
	if o.filter != nil || o.jq != nil {
		var flags []string
		for _, f := range []struct {
			name string
			on   bool
		}{{"--filter", o.filter != nil}, {"--jq", o.jq != nil}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		msg += fmt.Sprintf(", printed %d (%s)", res.Records, strings.Join(flags, " and "))
		if skipped > 0 {
			msg += fmt.Sprintf(", %d skipped by expression errors", skipped)
		}
	}
	if path != "" {
		msg += "; checkpoint " + path
	}
	return msg
}
