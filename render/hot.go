package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// HotOptions tune HotTable.
type HotOptions struct {
	Theme Theme
	// ShortIDs shows shard numbers (on a terminal) instead of full ids.
	ShortIDs bool
	// Command is how the tool was invoked ("kinesis-shards"), for the
	// split each many-keys verdict suggests.
	Command string
	// HotShare is the share of the write quota from which a shard was
	// called hot (0: reshard's default).
	HotShare float64
}

// HotTable writes `kinesis-shards hot`: the window, one row per shard
// (records, bytes and their rates, the share of the write quota, the
// verdict's kind), each shard's top partition keys, the one-sentence
// verdict of every hot shard with what to do next, and, when shards were
// sampled, that the figures are estimates.
func HotTable(w io.Writer, r *reshard.HotReport, o HotOptions) error {
	th := o.Theme
	var b strings.Builder
	span := r.WindowEnd.Sub(r.WindowStart)
	fmt.Fprintf(&b, "Stream %s: %s, records that arrived from %s to %s (%s)\n\n", r.Stream, text.Plural(len(r.Shards), "open shard"),
		r.WindowStart.UTC().Format(time.RFC3339), r.WindowEnd.UTC().Format(time.RFC3339), span.Round(time.Millisecond))
	if err := writeTo(w, &b); err != nil {
		return err
	}
	header := []string{"SHARD", "RECORDS", "BYTES", "RECORDS/S", "BYTES/S", "WRITE QUOTA", "VERDICT"}
	rows := make([][]string, 0, len(r.Shards))
	for _, s := range r.Shards {
		est := ""
		if s.Sampled {
			est = "~"
		}
		rows = append(rows, []string{displayID(s.ShardID, o.ShortIDs), est + strconv.FormatInt(s.Records, 10), est + text.Bytes(float64(s.Bytes)),
			hotRate(s.RecordsPerSecond), text.Bytes(s.BytesPerSecond) + "/s", quotaCell(s), string(s.Verdict.Kind)})
	}
	if err := Table(w, header, rows); err != nil {
		return err
	}

	b.WriteString("\nTop partition keys (each key's share of its shard's bytes or records, whichever WRITE QUOTA counts):\n")
	for _, s := range r.Shards {
		keys := make([]string, 0, len(s.TopKeys))
		for _, k := range s.TopKeys {
			keys = append(keys, th.Accent.Render(k.PartitionKey)+" "+reshard.PercentText(k.Share))
		}
		fmt.Fprintf(&b, "  %s  %s\n", displayID(s.ShardID, o.ShortIDs), text.OrDash(strings.Join(keys, ", ")))
	}
	hot := 0
	for _, s := range r.Shards {
		if s.Verdict.Kind == reshard.VerdictCold {
			continue
		}
		if hot == 0 {
			b.WriteString("\nHot shards:\n")
		}
		hot++
		fmt.Fprintf(&b, "  %s  %s\n", displayID(s.ShardID, o.ShortIDs), verdictStyle(th, s.Verdict.Kind)(s.Verdict.Text))
		if next := nextStep(r.Stream, s, o); next != "" {
			fmt.Fprintf(&b, "  %s  %s\n", strings.Repeat(" ", len(displayID(s.ShardID, o.ShortIDs))), th.Dim.Render(next))
		}
	}
	if hot == 0 {
		share := o.HotShare
		if share <= 0 {
			share = reshard.DefaultHotShare
		}
		fmt.Fprintf(&b, "\nNo shard is hot: each carried less than %s of its write quota over the window.\n", reshard.PercentText(share))
	}
	if note := estimates(r, o.ShortIDs); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	return writeTo(w, &b)
}

// nextStep is what the verdict suggests doing.
func nextStep(stream string, s reshard.ShardTraffic, o HotOptions) string {
	switch s.Verdict.Kind {
	case reshard.VerdictManyKeys:
		if s.Verdict.SplitAt == nil {
			return ""
		}
		return fmt.Sprintf("preview that split: %s split %s %s --at %s --dry-run", o.Command, stream, s.ShardID, s.Verdict.SplitAt)
	case reshard.VerdictOneKey:
		return "a split cannot help: spread that key's writes over several keys (a suffix), or slow its writer"
	case reshard.VerdictExplicit:
		return "a split point read from partition keys would be a guess: find where the producer's explicit hash keys fall, then split there with --at"
	case reshard.VerdictUncertain:
		return fmt.Sprintf("read more of the window: %s hot %s --max-records N (more than %d), or a shorter window", o.Command, stream, s.RecordsRead)
	}
	return ""
}

// estimates says which shards' figures come from a sample, and how much
// of their records was read; and which reads stopped early.
func estimates(r *reshard.HotReport, short bool) string {
	var sampled, stopped []string
	for _, s := range r.Shards {
		if s.Sampled {
			sampled = append(sampled, fmt.Sprintf("%s (%s of its records read)", displayID(s.ShardID, short), reshard.PercentText(s.SampledShare)))
		}
		if s.Stopped != "" {
			stopped = append(stopped, fmt.Sprintf("%s stopped early: %s", displayID(s.ShardID, short), s.Stopped))
		}
	}
	var parts []string
	if len(sampled) > 0 {
		parts = append(parts, "Figures marked ~ are estimates: the window held more records than --max-records, so these shards were sampled evenly across it: "+
			text.List(sampled, 0)+".")
	}
	if len(stopped) > 0 {
		parts = append(parts, "Figures cover part of the window: "+text.List(stopped, 0)+".")
	}
	return strings.Join(parts, "\n")
}

func quotaCell(s reshard.ShardTraffic) string {
	return reshard.PercentText(s.WriteQuotaShare) + " " + string(s.WriteQuotaBy)
}

// hotRate prints records per second: "0", "0.4", "12", "1200".
func hotRate(v float64) string {
	if v > 0 && v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func verdictStyle(th Theme, k reshard.VerdictKind) func(...string) string {
	switch k {
	case reshard.VerdictOneKey:
		return th.Err.Render
	case reshard.VerdictManyKeys, reshard.VerdictExplicit, reshard.VerdictUncertain:
		return th.Warn.Render
	}
	return th.Dim.Render
}
