package dashboard

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// treePane shows the lineage with render.TreeLines (the renderer of
// `tree`), scrolls it, and moves a cursor over the shard lines.
type treePane struct {
	th     render.Theme
	keys   keyMap
	g      *lineage.Graph
	leases map[string]*render.LeaseMark // a KCL lease table's overlay, or nil
	lines  []render.TreeLine            // lines[0] is the header
	rows   []int                        // indexes of the TreeShard lines
	// cursor indexes rows; offset is the first body line shown (lines[1:]).
	cursor, offset int
	w, h           int
}

func newTreePane(th render.Theme, keys keyMap) treePane { return treePane{th: th, keys: keys} }

// SetSize gives the pane its area (title line excluded) and lays the tree
// out again for the new width.
func (t *treePane) SetSize(w, h int) {
	t.w, t.h = w, h
	t.layout()
}

// setGraph shows another listing, keeping the selection on shard sel.
func (t *treePane) setGraph(g *lineage.Graph, sel string) {
	t.g = g
	t.layout()
	t.selectID(sel)
}

// setLeases shows a lease table's overlay (nil: none).
func (t *treePane) setLeases(l map[string]*render.LeaseMark) {
	t.leases = l
	t.layout()
}

func (t *treePane) layout() {
	if t.g == nil {
		t.lines, t.rows = nil, nil
		return
	}
	sel := t.selected()
	// Two cells go to the selection mark.
	t.lines = render.TreeLines(t.g, render.TreeOptions{Theme: t.th, ShortIDs: true, Width: max(t.w-2, 10), Leases: t.leases})
	t.rows = t.rows[:0]
	for i, l := range t.lines {
		if l.Kind == render.TreeShard {
			t.rows = append(t.rows, i)
		}
	}
	t.selectID(sel)
}

func (t *treePane) bodyHeight() int { return max(t.h-1, 1) }

// selected is the shard id under the cursor ("" with no tree).
func (t *treePane) selected() string {
	if t.cursor < len(t.rows) && t.rows[t.cursor] < len(t.lines) {
		return t.lines[t.rows[t.cursor]].ShardID
	}
	return ""
}

// selectID moves the cursor to the shard's line (no change if absent).
func (t *treePane) selectID(id string) {
	for i, r := range t.rows {
		if t.lines[r].ShardID == id {
			t.cursor = i
			break
		}
	}
	t.cursor = clamp(t.cursor, 0, len(t.rows)-1)
	t.scroll()
}

func (t *treePane) scroll() {
	if len(t.rows) == 0 {
		t.offset = 0
		return
	}
	// Body line numbers are line indexes minus the header.
	t.offset = scrollTo(t.offset, t.rows[t.cursor]-1, t.bodyHeight(), len(t.lines)-1)
}

// Update moves the cursor; it returns whether the selection changed.
func (t *treePane) Update(k tea.KeyMsg) bool {
	cursor, ok := moveCursor(t.keys, k, t.cursor, t.bodyHeight(), len(t.rows))
	if !ok {
		return false
	}
	before := t.cursor
	t.cursor = cursor
	t.scroll()
	return t.cursor != before
}

// View draws the header and the visible part of the tree; every line of
// the selected shard carries the mark ▸ and the Select style.
func (t *treePane) View() []string {
	if len(t.lines) == 0 {
		return block([]string{t.th.Dim.Render("  listing shards…")}, t.w, t.h)
	}
	sel := t.selected()
	out := make([]string, 0, t.h)
	out = append(out, "  "+t.lines[0].Text)
	body := t.lines[1:]
	end := min(t.offset+t.bodyHeight(), len(body))
	for _, l := range body[t.offset:end] {
		if l.Kind == render.TreeShard && l.ShardID == sel {
			out = append(out, t.th.Select.Render(fit("▸ "+ansi.Strip(l.Text), t.w)))
			continue
		}
		out = append(out, "  "+l.Text)
	}
	return block(out, t.w, t.h)
}
