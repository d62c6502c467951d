package render

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// TreeOptions shape the lineage tree.
type TreeOptions struct {
	// Theme colours the tree; a theme without Color (NewTheme(false) or the
	// zero value) gives plain text.
	Theme Theme
	// ShortIDs shows "7" for shardId-000000000007 (on a terminal).
	ShortIDs bool
	// Wide adds the decimal hash range and the sequence number range.
	Wide bool
	// Width, the terminal's, cuts longer lines with "…" and keeps the
	// aligned tree column narrow enough for STATE and SHARE to fit; 0 never
	// cuts (the tree column is then aligned up to 60 cells).
	Width int
	// Only, when non-nil, draws only these shard ids (--open, --at): edges
	// between them are drawn, and a shard whose parents are hidden says
	// where it came from.
	Only map[string]bool
	// KeyPath, when non-nil, adds a KEY column marking these ids with ◆.
	KeyPath map[string]bool
	// Leases, when non-nil, adds a LEASE column: a KCL lease table's owner
	// and checkpoint per shard, ⛔ on a blocked child, ⚠ on the parent
	// that blocks it.
	Leases map[string]*LeaseMark
}

// TreeLineKind says what a line of the tree shows.
type TreeLineKind int

const (
	// TreeHeader is the column header; ShardID is "".
	TreeHeader TreeLineKind = iota
	// TreeShard draws a shard.
	TreeShard
	// TreeMergeRef points at a merge child drawn under its other parent;
	// ShardID is the child's.
	TreeMergeRef
)

// TreeLine is one line of the tree: what it shows and its text (with ANSI
// colour when the theme has colour, without a line ending).
type TreeLine struct {
	Kind    TreeLineKind
	ShardID string
	Text    string
}

// Marks of the tree. Every state has a text mark, so nothing depends on colour.
const (
	markOpen    = "●"
	markClosed  = "○"
	markTrimmed = "✂"
	markRef     = "╌▷"
	markKey     = "◆"
)

func stateMark(st lineage.State) string {
	switch st {
	case lineage.StateOpen:
		return markOpen
	case lineage.StateTrimmed:
		return markTrimmed
	}
	return markClosed
}

// treeRow is one line before layout.
type treeRow struct {
	kind   TreeLineKind
	shard  *lineage.Shard
	guides string // tree guides before the mark: "│ ├─"
	note   string
}

// TreeLines lays out the lineage as an indented tree, one line per shard,
// plus a header line first and one line per merge back reference.
//
// Parents are always above their children. A shard is drawn under the
// parent that comes last in the drawing, so a merge child appears under
// its second parent, marked "merge of A + B", and its first parent gets a
// back reference line (╌▷ child, "merge of A + B, drawn under B"): both
// edges of a merge are visible where they start. Roots come in topological
// order (by hash range when Only is set), children by hash range.
//
// Columns: the tree (state mark ● open, ○ closed, ✂ trimmed, and the id),
// STATE, SHARE of the key space, with Wide HASH RANGE and SEQUENCE RANGE
// (start..end, "start.." while open), with KeyPath KEY (◆), and a note
// naming splits and merges.
func TreeLines(g *lineage.Graph, o TreeOptions) []TreeLine {
	rows := treeRows(g, o)
	return layoutTree(rows, o)
}

// Tree writes TreeLines, one per line.
func Tree(w io.Writer, g *lineage.Graph, o TreeOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, l := range TreeLines(g, o) {
		bw.WriteString(l.Text)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// treeRows walks the graph depth first. A shard is drawn once the last of
// its shown parents has been drawn (remaining[] counts down), which keeps
// every parent above its children.
func treeRows(g *lineage.Graph, o TreeOptions) []treeRow {
	shards := g.Shards()
	shown := func(id string) bool { return o.Only == nil || o.Only[id] }
	remaining := make(map[string]int, len(shards))
	var roots []*lineage.Shard
	for _, s := range shards {
		if !shown(s.ID) {
			continue
		}
		n := 0
		for _, p := range s.Parents {
			if shown(p) {
				n++
			}
		}
		remaining[s.ID] = n
		if n == 0 {
			roots = append(roots, s)
		}
	}
	if o.Only != nil {
		// A selection (open shards, shards open at T) reads best by range.
		slices.SortStableFunc(roots, func(a, b *lineage.Shard) int {
			return cmp.Or(a.Range.Start.Cmp(b.Range.Start), lineage.CompareShardIDs(a.ID, b.ID))
		})
	}
	w := treeWalk{g: g, o: o, shown: shown, remaining: remaining, rows: make([]treeRow, 0, len(remaining)+len(remaining)/8+1)}
	for _, r := range roots {
		w.draw(r, "", "")
	}
	return w.rows
}

type treeWalk struct {
	g         *lineage.Graph
	o         TreeOptions
	shown     func(string) bool
	remaining map[string]int
	rows      []treeRow
	kids      []string // scratch
}

// draw adds s and, below it, its children. lead is the guides of the
// ancestors' columns, branch s's own connector ("├─", "└─", "" for a root).
func (w *treeWalk) draw(s *lineage.Shard, lead, branch string) {
	w.rows = append(w.rows, treeRow{kind: TreeShard, shard: s, guides: lead + branch, note: w.note(s)})
	next := lead
	switch branch {
	case "├─":
		next += "│ "
	case "└─":
		next += "  "
	}
	start := len(w.kids)
	for _, c := range s.Children {
		if w.shown(c) {
			w.kids = append(w.kids, c)
		}
	}
	kids := w.kids[start:]
	for i, id := range kids {
		br := "├─"
		if i == len(kids)-1 {
			br = "└─"
		}
		c := w.g.Shard(id)
		w.remaining[id]--
		if w.remaining[id] > 0 {
			w.rows = append(w.rows, treeRow{kind: TreeMergeRef, shard: c, guides: next + br,
				note: "merge of " + joinIDs(c.Parents, w.o.ShortIDs, " + ") + ", drawn under " + displayID(otherParent(c, s.ID), w.o.ShortIDs)})
			continue
		}
		w.draw(c, next, br)
	}
	w.kids = w.kids[:start]
}

func otherParent(c *lineage.Shard, p string) string {
	for _, q := range c.Parents {
		if q != p {
			return q
		}
	}
	return p
}

// note names how a shard came to be and what became of it, where the
// tree does not already show it.
func (w *treeWalk) note(s *lineage.Shard) string {
	short := w.o.ShortIDs
	var parts []string
	switch {
	case len(s.Parents) == 2:
		parts = append(parts, "merge of "+joinIDs(s.Parents, short, " + "))
	case len(s.Parents) == 1 && !w.shown(s.Parents[0]):
		parts = append(parts, "child of "+displayID(s.Parents[0], short))
	}
	switch {
	case len(s.Children) >= 2:
		parts = append(parts, "split into "+joinIDs(s.Children, short, " + "))
	case len(s.Children) == 1 && !w.shown(s.Children[0]):
		c := w.g.Shard(s.Children[0])
		if c != nil && len(c.Parents) == 2 {
			parts = append(parts, "merged into "+displayID(c.ID, short))
		} else {
			parts = append(parts, "parent of "+displayID(s.Children[0], short))
		}
	}
	return strings.Join(parts, "; ")
}

// Column indexes of a laid-out line.
const (
	colTree = iota
	colState
	colShare
	colRange
	colSeq
	colKey
	colLease
	colNote
	numCols
)

var treeHeaders = [numCols]string{"SHARD", "STATE", "SHARE", "HASH RANGE", "SEQUENCE RANGE", "KEY", "LEASE", ""}

// Bounds of the aligned tree column: without a terminal width, and at
// least on a narrow terminal.
const (
	maxTreeColumn = 60
	minTreeColumn = 24
)

// layoutTree turns rows into aligned columns (two spaces apart, SHARE
// right-aligned, no trailing blanks), colours them and cuts them to Width.
// The tree column is aligned up to maxTreeColumn cells, or on a terminal
// up to what leaves room for the state, share and key columns.
func layoutTree(rows []treeRow, o TreeOptions) []TreeLine {
	cols := []int{colTree, colState, colShare}
	if o.Wide {
		cols = append(cols, colRange, colSeq)
	}
	if o.KeyPath != nil {
		cols = append(cols, colKey)
	}
	if o.Leases != nil {
		cols = append(cols, colLease)
	}
	cols = append(cols, colNote)

	header := make([]string, len(cols))
	for k, c := range cols {
		header[k] = treeHeaders[c]
	}
	layout := newColumnLayout(header)
	layout.right[slices.Index(cols, colShare)] = true

	// Plain cells first, to measure.
	cells := make([]string, len(rows)*len(cols))
	for i := range rows {
		r := &rows[i]
		s := r.shard
		var cl [numCols]string
		id := displayID(s.ID, o.ShortIDs)
		if r.kind == TreeMergeRef {
			cl[colTree] = r.guides + markRef + " " + id
		} else {
			cl[colTree] = r.guides + stateMark(s.State) + " " + id
			cl[colState] = s.State.String()
			cl[colShare], cl[colRange], cl[colSeq] = "-", "-", "-"
			if s.State != lineage.StateTrimmed {
				cl[colShare] = FormatShare(s.Range.Fraction())
				if o.Wide {
					cl[colRange] = s.Range.String()
					cl[colSeq] = seqRange(s)
				}
			}
			if o.KeyPath[s.ID] {
				cl[colKey] = markKey
			}
			if o.Leases != nil {
				cl[colLease] = leaseText(o.Leases[s.ID], o.ShortIDs)
			}
		}
		cl[colNote] = r.note
		row := cells[i*len(cols) : (i+1)*len(cols)]
		for k, c := range cols {
			row[k] = cl[c]
		}
		layout.measure(row)
	}

	// A deep history would push every column far right of shallow lines
	// (and off a terminal): the tree column is aligned up to a cap, and
	// lines deeper than that push their own cells right.
	treeCap := maxTreeColumn
	if o.Width > 0 {
		rest := 0
		for k, c := range cols[1:] {
			if c != colNote {
				rest += 2 + layout.width[k+1]
			}
		}
		treeCap = max(o.Width-rest, minTreeColumn)
	}
	layout.width[0] = min(layout.width[0], treeCap)

	out := make([]TreeLine, 0, len(rows)+1)
	var b strings.Builder
	emit := func(kind TreeLineKind, id string, row []string, style func(k int, text string) string) {
		line := layout.line(&b, row, style)
		if o.Width > 0 && ansi.StringWidth(line) > o.Width {
			line = ansi.Truncate(line, o.Width, "…")
		}
		out = append(out, TreeLine{Kind: kind, ShardID: id, Text: line})
	}
	var p painter
	if o.Theme.Color {
		p = newPainter(o.Theme)
		emit(TreeHeader, "", header, func(_ int, text string) string { return p.header(text) })
	} else {
		emit(TreeHeader, "", header, nil)
	}
	for i := range rows {
		r := &rows[i]
		var style func(int, string) string
		if o.Theme.Color {
			style = treeStyler(&p, r, cols, o.KeyPath[r.shard.ID] && r.kind == TreeShard, o.Leases[r.shard.ID])
		}
		emit(r.kind, r.shard.ID, cells[i*len(cols):(i+1)*len(cols)], style)
	}
	return out
}

// columnLayout aligns cells in columns two spaces apart, with no trailing
// blanks (the look of Table). Widths are measured on the plain text, so
// colour added by a style does not count; a cell wider than its column
// pushes the rest of its line right.
type columnLayout struct {
	width []int
	right []bool // right-aligned columns
}

func newColumnLayout(header []string) *columnLayout {
	l := &columnLayout{width: make([]int, len(header)), right: make([]bool, len(header))}
	l.measure(header)
	return l
}

// measure widens the columns to fit cells.
func (l *columnLayout) measure(cells []string) {
	for k, text := range cells {
		if n := utf8.RuneCountInString(text); n > l.width[k] {
			l.width[k] = n
		}
	}
}

// line lays out one line; style, when not nil, colours each non-empty cell.
func (l *columnLayout) line(b *strings.Builder, cells []string, style func(k int, text string) string) string {
	b.Reset()
	pad := 0 // blanks owed before the next cell: written only if one follows
	for k, text := range cells {
		if k > 0 {
			pad += 2
		}
		if text == "" {
			pad += l.width[k]
			continue
		}
		n := utf8.RuneCountInString(text)
		if l.right[k] {
			pad += max(l.width[k]-n, 0)
			n = max(n, l.width[k])
		}
		for ; pad > 0; pad-- {
			b.WriteByte(' ')
		}
		if style != nil {
			text = style(k, text)
		}
		b.WriteString(text)
		pad = max(l.width[k]-n, 0)
	}
	return b.String()
}

// painter holds the theme's styles as plain prefix/suffix wrappers:
// lipgloss's Render re-parses the style for every call, which was most of
// the cost of a coloured 10,000-shard tree.
type painter struct {
	header, dim, key, warn, err func(string) string
	state                       [3]func(string) string
}

// lease colours a LEASE cell: blocked red, blocking amber, finished dim.
func (p *painter) lease(m *LeaseMark) func(string) string {
	switch {
	case m == nil:
		return p.dim
	case m.Blocked:
		return p.err
	case len(m.Blocking) > 0:
		return p.warn
	case m.ShardEnd || !m.Lease:
		return p.dim
	}
	return func(s string) string { return s }
}

func newPainter(th Theme) painter {
	return painter{
		header: wrapper(th.Header), dim: wrapper(th.Dim), key: wrapper(th.Key), warn: wrapper(th.Warn), err: wrapper(th.Err),
		state: [3]func(string) string{lineage.StateOpen: wrapper(th.Open), lineage.StateClosed: wrapper(th.Closed), lineage.StateTrimmed: wrapper(th.Trimmed)},
	}
}

// wrapper returns a function giving what st.Render gives for one line of
// text without tabs (the only text the tree styles): the style's escape
// sequence, the text, the reset.
func wrapper(st lipgloss.Style) func(string) string {
	const probe = "x"
	out := st.Render(probe)
	i := strings.Index(out, probe)
	if i < 0 {
		return func(s string) string { return st.Render(s) }
	}
	pre, post := out[:i], out[i+len(probe):]
	return func(s string) string { return pre + s + post }
}

func (p *painter) forState(st lineage.State) func(string) string {
	if st >= 0 && int(st) < len(p.state) {
		return p.state[st]
	}
	return p.state[lineage.StateClosed]
}

// treeStyler colours the cells of one row: guides dim, the mark and the
// state word in the state's colour, the id and ◆ in the key colour on the
// key's path, ranges and notes dim.
func treeStyler(p *painter, r *treeRow, cols []int, onKey bool, lease *LeaseMark) func(k int, text string) string {
	state := p.forState(r.shard.State)
	return func(k int, text string) string {
		switch cols[k] {
		case colTree:
			g := len(r.guides)
			mark, id, _ := strings.Cut(text[g:], " ")
			if r.kind == TreeMergeRef {
				mark = p.dim(mark)
			} else {
				mark = state(mark)
			}
			if onKey {
				id = p.key(id)
			}
			if g > 0 {
				return p.dim(text[:g]) + mark + " " + id
			}
			return mark + " " + id
		case colState:
			return state(text)
		case colKey:
			return p.key(text)
		case colLease:
			return p.lease(lease)(text)
		case colRange, colSeq, colNote:
			return p.dim(text)
		}
		return text
	}
}
