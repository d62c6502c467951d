package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// PreviewOptions shape a reshard preview.
type PreviewOptions struct {
	// Theme colours it; without Color the text is plain.
	Theme Theme
	// Wide shows hash keys in full (RANGE START and RANGE END columns, full
	// keys in the API calls) instead of the short "170141…5728" form.
	Wide bool
}

// Preview writes a reshard plan for a person to read before saying yes:
// what it does, the open shards before and after (hash range, share of the
// key space, share of the sampled traffic when there is a sample), marked
// "-" where a shard closes and "+" where one opens, the API calls in
// order, and the notes.
func Preview(w io.Writer, p *reshard.Plan, o PreviewOptions) error {
	th := o.Theme
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s\n", th.Header.Render("Stream"), p.Stream, p.Description)
	if s := p.Sample; s != nil {
		b.WriteString(th.Dim.Render(sampleLine(s)) + "\n")
	}

	closing := map[lineage.HashRange]bool{}
	for _, st := range p.Steps {
		for _, c := range st.Closes {
			if c.ID != "" {
				closing[c.Range] = true
			}
		}
	}
	b.WriteString("\n" + th.Header.Render(fmt.Sprintf("Before (%s):", text.Plural(len(p.Before), "open shard"))) + "\n")
	if err := writeTo(w, &b); err != nil {
		return err
	}
	if err := slotTable(w, p.Before, p.Sample != nil, o, func(s reshard.Slot) string {
		if closing[s.Range] {
			return "-"
		}
		return ""
	}); err != nil {
		return err
	}

	after := fmt.Sprintf("After (%s):", text.Plural(len(p.After), "open shard"))
	if !p.ExactLayout {
		after = fmt.Sprintf("After (%s, the even layout the service aims for):", text.Plural(len(p.After), "open shard"))
	}
	b.WriteString("\n" + th.Header.Render(after) + "\n")
	if err := writeTo(w, &b); err != nil {
		return err
	}
	if err := slotTable(w, p.After, p.Sample != nil, o, func(s reshard.Slot) string {
		if s.IsNew() {
			return "+"
		}
		return ""
	}); err != nil {
		return err
	}

	calls := fmt.Sprintf("API calls (%d):", len(p.Steps))
	if len(p.Steps) > 1 {
		calls = fmt.Sprintf("API calls (%d, one at a time, waiting for the stream to be ACTIVE after each):", len(p.Steps))
	}
	b.WriteString("\n" + th.Header.Render(calls) + "\n")
	width := len(strconv.Itoa(len(p.Steps)))
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "  %*d. %s", width, i+1, CallText(st.Call, st.Args, o))
		if len(p.Steps) > 1 {
			b.WriteString(th.Dim.Render(fmt.Sprintf("  -> %s", text.Plural(st.OpenShards, "open shard"))))
		}
		b.WriteString("\n")
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range p.Notes {
			b.WriteString(th.Warn.Render("Note: ") + n + "\n")
		}
	}
	return writeTo(w, &b)
}

// CallText is one API call with its arguments: "SplitShard
// ShardToSplit=shardId-000000000001 NewStartingHashKey=...". A shard the
// plan creates has no id yet and is shown by its range: "(new 0 – 850705…2863)".
func CallText(call reshard.Call, a reshard.Args, o PreviewOptions) string {
	th := o.Theme
	ref := func(s *reshard.Slot) string {
		if s.ID != "" {
			return s.ID
		}
		return th.Added.Render("(new " + rangeText(s.Range, o.Wide) + ")")
	}
	var b strings.Builder
	b.WriteString(th.Accent.Render(string(call)))
	switch call {
	case reshard.SplitShard:
		fmt.Fprintf(&b, " ShardToSplit=%s NewStartingHashKey=%s", ref(a.ShardToSplit), a.NewStartingHashKey)
	case reshard.MergeShards:
		fmt.Fprintf(&b, " ShardToMerge=%s AdjacentShardToMerge=%s", ref(a.ShardToMerge), ref(a.AdjacentShardToMerge))
	case reshard.UpdateShardCount:
		fmt.Fprintf(&b, " TargetShardCount=%d ScalingType=%s", a.TargetShardCount, a.ScalingType)
	}
	return b.String()
}

// LayoutOptions shape Layout.
type LayoutOptions struct {
	PreviewOptions
	// Before, when set, marks with "+" the shards that are not in it (by id).
	Before []reshard.Slot
}

// Layout writes the open shards of a stream as a table, marking new ones:
// what the commands print after a change.
func Layout(w io.Writer, slots []reshard.Slot, o LayoutOptions) error {
	old := map[string]bool{}
	for _, s := range o.Before {
		old[s.ID] = true
	}
	return slotTable(w, slots, false, o.PreviewOptions, func(s reshard.Slot) string {
		if o.Before != nil && !old[s.ID] {
			return "+"
		}
		return ""
	})
}

// slotTable writes one layout. mark gives the first column: "-" (closes),
// "+" (opens) or "".
func slotTable(w io.Writer, slots []reshard.Slot, traffic bool, o PreviewOptions, mark func(reshard.Slot) string) error {
	th := o.Theme
	header := []string{"", "SHARD"}
	if o.Wide {
		header = append(header, "RANGE START", "RANGE END")
	} else {
		header = append(header, "HASH RANGE")
	}
	header = append(header, "SHARE")
	if traffic {
		header = append(header, "TRAFFIC")
	}
	rows := make([][]string, 0, len(slots))
	for _, s := range slots {
		m := mark(s)
		id := s.ID
		if id == "" {
			id = "(new)"
		}
		switch m {
		case "+":
			m, id = th.Added.Render(m), th.Added.Render(id)
		case "-":
			m, id = th.Removed.Render(m), th.Removed.Render(id)
		}
		row := []string{m, id}
		if o.Wide {
			row = append(row, s.Range.Start.String(), s.Range.End.String())
		} else {
			row = append(row, th.Dim.Render(rangeText(s.Range, false)))
		}
		row = append(row, FormatShare(s.Range.Fraction()))
		if traffic {
			t := "-"
			if s.Traffic != nil {
				t = FormatShare(*s.Traffic)
			}
			row = append(row, t)
		}
		rows = append(rows, row)
	}
	return Table(w, header, rows)
}

// rangeText is "start – end", each key in full when wide, else shortened
// to its first six and last four digits.
func rangeText(r lineage.HashRange, wide bool) string {
	if wide {
		return r.Start.String() + " – " + r.End.String()
	}
	return ShortKey(r.Start) + " – " + ShortKey(r.End)
}

// ShortKey shortens a hash key of more than 12 digits to its first six and
// last four ("170141…5728"): enough to tell neighbouring boundaries apart
// (they differ at the end) and to see roughly where in the space a key is.
func ShortKey(k lineage.HashKey) string {
	s := k.String()
	if len(s) <= 12 {
		return s
	}
	return s[:6] + "…" + s[len(s)-4:]
}

func sampleLine(s *reshard.Sample) string {
	var ids []string
	outside, truncated := 0, false
	for _, sh := range s.Shards {
		ids = append(ids, sh.ShardID)
		outside += sh.Outside
		truncated = truncated || sh.Truncated
	}
	shards := ids[0]
	if len(ids) > 1 {
		shards = text.Plural(len(ids), "shard")
	}
	line := fmt.Sprintf("Traffic: %s sampled from %s over the last %s", text.Plural(s.Records, "record"), shards, s.Window)
	if truncated {
		line += " (spread evenly over the window)"
	}
	if outside > 0 {
		line += fmt.Sprintf("; %s written with an explicit hash key left out", text.Plural(outside, "record"))
	}
	return line + "."
}

func writeTo(w io.Writer, b *strings.Builder) error {
	_, err := io.WriteString(w, b.String())
	b.Reset()
	return err
}
