package dashboard

import (
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// shardSnap is one shard's live figures as of the last figure tick.
type shardSnap struct {
	recs, bytes float64
	behind      time.Duration
	ok          bool // the sampling reader has polled the shard
}

// tableData is what the table shows besides the listing.
type tableData struct {
	snap       map[string]shardSnap
	checkpoint map[string]tail.Position // nil without --checkpoint
	sampling   bool                     // a sampling reader runs
	// lag is the consumer's standing per shard (the LAG column), nil
	// until read; lagOn says the column is shown.
	lag   map[string]consumer.ShardLag
	lagOn bool
}

// shardTable lists the shards: open ones by hash range first (they carry
// the live figures), then closed ones in lineage order, then trimmed ones.
type shardTable struct {
	th             render.Theme
	keys           keyMap
	g              *lineage.Graph
	all            []*lineage.Shard
	shown          []*lineage.Shard // all, filtered
	filter         string
	cursor, offset int
	w, h           int
}

func newShardTable(th render.Theme, keys keyMap) shardTable {
	return shardTable{th: th, keys: keys}
}

// SetSize gives the table its area (title line excluded).
func (t *shardTable) SetSize(w, h int) {
	t.w, t.h = w, h
	t.scroll()
}

func (t *shardTable) bodyHeight() int { return max(t.h-1, 1) }

// setGraph shows another listing, keeping the selection on shard sel.
func (t *shardTable) setGraph(g *lineage.Graph, sel string) {
	t.g = g
	t.all = t.all[:0]
	t.all = append(t.all, g.Open()...)
	for _, s := range g.Shards() {
		if s.State == lineage.StateClosed {
			t.all = append(t.all, s)
		}
	}
	for _, s := range g.Shards() {
		if s.State == lineage.StateTrimmed {
			t.all = append(t.all, s)
		}
	}
	t.applyFilter(sel)
}

// setFilter keeps the shards whose id, number or state holds f.
func (t *shardTable) setFilter(f, sel string) {
	t.filter = f
	t.applyFilter(sel)
}

func (t *shardTable) applyFilter(sel string) {
	t.shown = t.shown[:0]
	f := strings.ToLower(t.filter)
	for _, s := range t.all {
		if f == "" || strings.Contains(strings.ToLower(s.ID), f) || lineage.ShortID(s.ID) == f || s.State.String() == f {
			t.shown = append(t.shown, s)
		}
	}
	t.selectID(sel)
}

func (t *shardTable) selected() string {
	if t.cursor < len(t.shown) {
		return t.shown[t.cursor].ID
	}
	return ""
}

func (t *shardTable) selectID(id string) {
	if i := slices.IndexFunc(t.shown, func(s *lineage.Shard) bool { return s.ID == id }); i >= 0 {
		t.cursor = i
	}
	t.cursor = clamp(t.cursor, 0, len(t.shown)-1)
	t.scroll()
}

func (t *shardTable) scroll() {
	t.offset = scrollTo(t.offset, t.cursor, t.bodyHeight(), len(t.shown))
}

// Update moves the cursor; it returns whether the selection changed.
func (t *shardTable) Update(k tea.KeyMsg) bool {
	cursor, ok := moveCursor(t.keys, k, t.cursor, t.bodyHeight(), len(t.shown))
	if !ok {
		return false
	}
	before := t.cursor
	t.cursor = cursor
	t.scroll()
	return t.cursor != before
}

// column is one column of the shard table, drawn from the listing and
// what tableData carries (the live figures, a checkpoint's positions). A
// new column, say a consumer's lag from another source of positions, is
// one more entry in tableColumns and, for its data, a field of tableData.
type column struct {
	header string
	right  bool // right-aligned
	// natural is the column's width in the side-by-side layout.
	natural int
	// cell is the shard's value; style, when set, draws it on a row that
	// is not selected.
	cell  func(s *lineage.Shard, d tableData) string
	style func(th render.Theme, s *lineage.Shard, v string) string
}

const checkpointWidth = 14

// tableColumns are SHARD STATE SHARE REC/S IN/S BEHIND, CHECKPOINT with
// --checkpoint, and LAG with a consumer's positions (--checkpoint,
// --lease-table, --kcl-table).
func tableColumns(checkpoint, lag bool) []column {
	dim := func(th render.Theme, _ *lineage.Shard, v string) string { return th.Dim.Render(v) }
	// figure is a live figure: for open shards the reader has polled; "…"
	// for open shards it has not polled yet.
	figure := func(f func(shardSnap) string) func(*lineage.Shard, tableData) string {
		return func(s *lineage.Shard, d tableData) string {
			if sn, ok := d.snap[s.ID]; ok && sn.ok && s.IsOpen() {
				return f(sn)
			}
			if s.IsOpen() && d.sampling {
				return "…"
			}
			return "-"
		}
	}
	cols := []column{
		{header: "SHARD", natural: 6, cell: func(s *lineage.Shard, _ tableData) string { return lineage.ShortID(s.ID) },
			style: func(th render.Theme, s *lineage.Shard, v string) string {
				if !s.IsOpen() {
					return th.Dim.Render(v)
				}
				return v
			}},
		{header: "STATE", natural: 6, cell: func(s *lineage.Shard, _ tableData) string { return s.State.String() },
			style: func(th render.Theme, s *lineage.Shard, v string) string { return stateStyle(th, s.State).Render(v) }},
		{header: "SHARE", right: true, natural: 6, style: dim, cell: func(s *lineage.Shard, _ tableData) string {
			if s.State == lineage.StateTrimmed {
				return "-"
			}
			return render.FormatShare(s.Range.Fraction())
		}},
		{header: "REC/S", right: true, natural: 5, cell: figure(func(sn shardSnap) string { return formatRate(sn.recs) })},
		{header: "IN/S", right: true, natural: 11, cell: figure(func(sn shardSnap) string { return text.Bytes(sn.bytes) + "/s" })},
		{header: "BEHIND", right: true, natural: 6, cell: figure(func(sn shardSnap) string { return render.FormatBehind(sn.behind) })},
	}
	if checkpoint {
		cols = append(cols, column{header: "CHECKPOINT", natural: checkpointWidth, style: dim,
			cell: func(s *lineage.Shard, d tableData) string { return formatPosition(d.checkpoint[s.ID]) }})
	}
	if lag {
		cols = append(cols, column{header: "LAG", right: true, natural: 7, cell: lagCell,
			style: func(th render.Theme, _ *lineage.Shard, v string) string {
				switch v {
				case "blocked", "trimmed", "?":
					return th.Warn.Render(v)
				case "done", "-", "…":
					return th.Dim.Render(v)
				}
				return v
			}})
	}
	return cols
}

// lagCell is how far behind the tip the consumer is on the shard, or its
// state when there is no figure: done (SHARD_END), blocked (by a parent
// not finished), trimmed, ? (the figure could not be read), - (not
// measured: the reader is paused), … (not read yet).
func lagCell(s *lineage.Shard, d tableData) string {
	sl, ok := d.lag[s.ID]
	switch {
	case !ok && d.lag == nil:
		return "…"
	case !ok:
		return "-"
	case sl.State == consumer.StateFinished:
		return "done"
	case sl.State == consumer.StateBlocked:
		return "blocked"
	case sl.State == consumer.StateTrimmed:
		return "trimmed"
	case sl.Error != "":
		return "?"
	case sl.MillisBehindLatest != nil:
		return render.FormatBehind(time.Duration(*sl.MillisBehindLatest) * time.Millisecond)
	}
	return "-"
}

// View draws the header and the visible rows.
func (t *shardTable) View(d tableData) []string {
	th := t.th
	if t.g == nil {
		return block([]string{th.Dim.Render("  listing shards…")}, t.w, t.h)
	}
	cols := tableColumns(d.checkpoint != nil, d.lagOn)
	cells := make([][]string, len(t.shown))
	width := make([]int, len(cols))
	for c, col := range cols {
		width[c] = len(col.header)
	}
	for i, s := range t.shown {
		row := make([]string, len(cols))
		for c, col := range cols {
			row[c] = col.cell(s, d)
			width[c] = max(width[c], ansi.StringWidth(row[c]))
		}
		cells[i] = row
	}
	line := func(row []string, style func(c int, s string) string) string {
		var b strings.Builder
		b.WriteString("  ")
		for c, v := range row {
			if c > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[c]-ansi.StringWidth(v))
			if cols[c].right {
				b.WriteString(pad + style(c, v))
			} else {
				b.WriteString(style(c, v) + pad)
			}
		}
		return b.String()
	}
	headers := make([]string, len(cols))
	for c, col := range cols {
		headers[c] = col.header
	}
	out := make([]string, 0, t.h)
	out = append(out, line(headers, func(_ int, s string) string { return th.Header.Render(s) }))
	sel := t.selected()
	end := min(t.offset+t.bodyHeight(), len(t.shown))
	for i := t.offset; i < end; i++ {
		s := t.shown[i]
		if s.ID == sel {
			plain := line(cells[i], func(_ int, v string) string { return v })
			out = append(out, th.Select.Render(fit("▸ "+plain[2:], t.w)))
			continue
		}
		out = append(out, line(cells[i], func(c int, v string) string {
			if cols[c].style == nil {
				return v
			}
			return cols[c].style(th, s, v)
		}))
	}
	if len(t.shown) == 0 && t.filter != "" {
		out = append(out, th.Dim.Render("  no shard matches the filter"))
	}
	return block(out, t.w, t.h)
}

// naturalWidth is the table's width with its widest usual cells (for the
// side-by-side layout).
func (t *shardTable) naturalWidth(checkpoint, lag bool) int {
	cols := tableColumns(checkpoint, lag)
	w := 2 + 2*(len(cols)-1)
	for _, c := range cols {
		w += c.natural
	}
	return w
}

// formatPosition shows a checkpoint position in a narrow column: SHARD_END,
// "-" for none, else the last digits of the sequence number (the leading
// digits of a shard's sequence numbers are all alike).
func formatPosition(p tail.Position) string {
	switch {
	case p.ShardEnd:
		return "SHARD_END"
	case p.SequenceNumber == "":
		return "-"
	}
	s := p.String()
	if len(s) > checkpointWidth {
		s = "…" + s[len(s)-checkpointWidth+1:]
	}
	return s
}

func stateStyle(th render.Theme, st lineage.State) interface{ Render(...string) string } {
	switch st {
	case lineage.StateOpen:
		return th.Open
	case lineage.StateTrimmed:
		return th.Trimmed
	}
	return th.Closed
}
