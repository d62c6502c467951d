package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// LagOptions tune LagTable.
type LagOptions struct {
	Theme Theme
	// ShortIDs shows shard numbers and the last digits of sequence
	// numbers (on a terminal); otherwise both are shown in full.
	ShortIDs bool
}

// LagTable writes `kinesis-shards lag`: a line naming the consumer's
// source, one row per shard (SHARD STATE POSITION BEHIND OWNER NOTE, no
// OWNER for a checkpoint file) in lineage order, and a summary line with
// the worst shard.
func LagTable(w io.Writer, r *consumer.Report, o LagOptions) error {
	th := o.Theme
	var b strings.Builder
	fmt.Fprintf(&b, "Stream %s, consumer positions from %s\n\n", r.Stream, r.Source)
	if err := writeTo(w, &b); err != nil {
		return err
	}
	// A checkpoint file has no owners: one tail keeps it.
	owners := r.Source.Kind != consumer.SourceCheckpoint
	header := []string{"SHARD", "STATE", "POSITION", "BEHIND", "OWNER", "NOTE"}
	if !owners {
		header = slices.Delete(header, 4, 5)
	}
	rows := make([][]string, 0, len(r.Shards))
	for _, s := range r.Shards {
		behind := "-"
		if s.MillisBehindLatest != nil {
			behind = FormatBehind(time.Duration(*s.MillisBehindLatest) * time.Millisecond)
		}
		row := []string{displayID(s.ShardID, o.ShortIDs), lagStateStyle(th, s.State)(string(s.State)),
			text.OrDash(lagPosition(s, o.ShortIDs)), behind, text.OrDash(lagOwner(s)), lagNote(s, o.ShortIDs)}
		if !owners {
			row = slices.Delete(row, 4, 5)
		}
		rows = append(rows, row)
	}
	if err := Table(w, header, rows); err != nil {
		return err
	}
	b.WriteString("\n" + LagSummary(r, o.ShortIDs) + "\n")
	if r.Note != "" {
		b.WriteString("Note: " + r.Note + ".\n")
	}
	return writeTo(w, &b)
}

// LagSummary is the one line that answers "how far behind?": the worst
// shard, and how many shards are in each state.
func LagSummary(r *consumer.Report, short bool) string {
	var counts []string
	for _, st := range []consumer.State{consumer.StateReading, consumer.StateBlocked, consumer.StateNotStarted, consumer.StateFinished, consumer.StateTrimmed} {
		if n := r.Count(st); n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(string(st), "-", " ")))
		}
	}
	of := text.Plural(len(r.Shards), "shard") + ": " + strings.Join(counts, ", ")
	if r.MaxMillisBehindLatest == nil {
		if n := len(r.Failed()); n > 0 {
			return fmt.Sprintf("No figure could be read (%s failed); %s", text.Plural(n, "shard"), of)
		}
		return "Nothing to measure; " + of
	}
	worst := ""
	for _, s := range r.Shards {
		if s.ShardID == r.WorstShard {
			worst = string(s.State)
		}
	}
	d := time.Duration(*r.MaxMillisBehindLatest) * time.Millisecond
	name := r.WorstShard
	if short {
		name = "shard " + lineage.ShortID(name)
	}
	line := fmt.Sprintf("Worst: %s is %s behind the tip (%s); %s", name, FormatBehind(d), strings.ReplaceAll(worst, "-", " "), of)
	if *r.MaxMillisBehindLatest == 0 {
		line = "Every measured shard is at the tip; " + of
	}
	if n := len(r.Failed()); n > 0 {
		line += fmt.Sprintf("; %s could not be measured", text.Plural(n, "shard"))
	}
	return line
}

// lagPosition shows a sequence number in full, or its last digits on a
// terminal (a shard's sequence numbers share their leading digits).
func lagPosition(s consumer.ShardLag, short bool) string {
	p := s.Position
	if short && len(p) > 14 && p[0] >= '0' && p[0] <= '9' {
		p = "…" + p[len(p)-12:]
	}
	if s.SubSequenceNumber != nil && p != "" {
		p += fmt.Sprintf("/%d", *s.SubSequenceNumber)
	}
	if s.LogEventIndex != nil && p != "" {
		p += fmt.Sprintf("#%d", *s.LogEventIndex)
	}
	return p
}

// lagNote is the NOTE cell: what blocks the shard, why it has no figure.
// It is the last column, which carries no colour (the table would pad
// after the colour's reset, where trailing blanks cannot be trimmed).
func lagNote(s consumer.ShardLag, short bool) string {
	var parts []string
	if len(s.BlockedBy) > 0 {
		parts = append(parts, "waits for "+joinIDs(s.BlockedBy, short, ", ")+" (not finished)")
	}
	if s.State == consumer.StateTrimmed && s.Position != "" {
		parts = append(parts, "trimmed before it was finished: its unread records are gone")
	}
	if s.Error != "" {
		parts = append(parts, "not measured: "+s.Error)
	}
	if s.Note != "" {
		parts = append(parts, s.Note)
	}
	return text.OrDash(strings.Join(parts, "; "))
}

func lagStateStyle(th Theme, st consumer.State) func(...string) string {
	switch st {
	case consumer.StateReading:
		return th.Open.Render
	case consumer.StateBlocked:
		return th.Warn.Render
	case consumer.StateTrimmed:
		return th.Trimmed.Render
	}
	return th.Dim.Render
}

// FormatBehind prints how far behind the tip a reader is: "0s", "850ms",
// "12s", "3m20s", "5h02m".
func FormatBehind(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// lagOwner is the lease's owner, or "a → b" while a hands it over to b.
func lagOwner(s consumer.ShardLag) string {
	if s.HandingOver != "" {
		return s.HandingOver + " → " + s.Owner
	}
	return s.Owner
}
