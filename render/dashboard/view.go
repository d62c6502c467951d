package dashboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// View draws the whole screen: the title bar, the body, the status line and
// the help bar, exactly height lines of at most width cells.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if m.width < 40 || m.height < 10 {
		return fit("too small (40x10 at least)", m.width)
	}
	lines := make([]string, 0, m.height)
	lines = append(lines, m.titleBar())
	bodyH := m.height - 3
	var body []string
	switch {
	case m.showHelp:
		body = m.helpView(bodyH)
	case m.action.dialog != nil:
		body = m.action.dialog.View()
	case m.screen == screenPicker:
		body = m.picker.View()
	default:
		body = m.streamView()
	}
	lines = append(lines, block(body, m.width, bodyH)...)
	lines = append(lines, m.statusLine(), m.helpBar())
	for i, l := range lines {
		lines[i] = trimRight(fit(l, m.width))
	}
	return strings.Join(lines, "\n")
}

// titleBar: the tool, the stream and what the listing says.
func (m *Model) titleBar() string {
	th := m.th
	name := "kinesis-shards dashboard"
	if m.width < 100 {
		name = "kinesis-shards"
	}
	parts := []string{th.Header.Render(name)}
	if m.screen == screenStream {
		parts = append(parts, th.Accent.Render(m.stream.ref.Name))
		if s := m.stream.sum; s != nil {
			st := string(s.Status)
			if s.Status == "ACTIVE" {
				st = th.Open.Render(st)
			} else {
				st = th.Warn.Render(st)
			}
			parts = append(parts, st, s.ModeName())
		}
		if g := m.stream.graph; g != nil {
			parts = append(parts, fmt.Sprintf("%d open / %d shards", len(g.Open()), g.Len()))
		}
		if !m.stream.loadedAt.IsZero() {
			listed := "listed "
			if m.width < 100 {
				listed = ""
			}
			parts = append(parts, th.Dim.Render(listed+m.stream.loadedAt.In(m.opts.Location).Format("15:04:05")))
		}
		if m.opts.ReadOnly {
			parts = append(parts, th.Warn.Render("read-only"))
		}
	}
	return strings.Join(parts, th.Dim.Render(" · "))
}

// streamView is the body of the stream screen.
func (m *Model) streamView() []string {
	l := m.layout()
	if !l.wide {
		return append([]string{m.tabBar()}, m.paneView(m.focus, m.width)...)
	}
	top := besides(
		m.paneView(paneTree, l.treeW),
		m.th.Border.Render("│"),
		m.paneView(paneTable, l.tableW),
	)
	return append(top, m.paneView(paneRecords, m.width)...)
}

// paneView is a pane with its title line.
func (m *Model) paneView(p pane, w int) []string {
	var body []string
	switch p {
	case paneTree:
		body = m.tree.View()
	case paneTable:
		body = m.table.View(tableData{snap: m.reader.snap, checkpoint: m.checkpointView(), sampling: m.reader.reading, lag: m.stream.lag, lagOn: m.opts.Lag})
	case paneRecords:
		body = m.records.View(m.recordsEmpty())
	}
	return append([]string{m.paneTitle(p, w)}, body...)
}

func (m *Model) checkpointView() map[string]tail.Position {
	if m.opts.Checkpoint == "" {
		return nil
	}
	if m.stream.checkpt == nil {
		return map[string]tail.Position{}
	}
	return m.stream.checkpt
}

// paneTitle is "▌Lineage · 9 shards ───": the focused pane's in the
// header style with a mark, the others dim.
func (m *Model) paneTitle(p pane, w int) string {
	th := m.th
	var info string
	switch p {
	case paneTree:
		if m.stream.graph != nil {
			info = fmt.Sprintf("%d shards, %d open", m.stream.graph.Len(), len(m.stream.graph.Open()))
		}
	case paneTable:
		info = m.figuresNote()
	case paneRecords:
		info = m.recordsNote()
	}
	mark, name := "  ", paneNames[p]
	if p == m.focus {
		mark, name = "▌ ", th.Header.Render(name)
		mark = th.Accent.Render(mark)
	}
	title := mark + name
	if info != "" {
		title += th.Dim.Render(" · " + info)
	}
	if m.filter.value != "" && (p == paneTable || p == paneRecords) {
		title += th.Warn.Render(fmt.Sprintf(" · filter %q", m.filter.value))
	}
	title += " "
	if n := w - ansi.StringWidth(title); n > 0 {
		title += th.Border.Render(strings.Repeat("─", n))
	}
	return title
}

// figuresNote says where the table's figures come from.
func (m *Model) figuresNote() string {
	switch {
	case m.opts.NoReader && !m.reader.reading && len(m.reader.snap) == 0:
		return "no live figures"
	case m.reader.paused:
		return "paused (p resumes)"
	}
	return fmt.Sprintf("in: sampled from the tip, last %s", shortDuration(m.opts.Window))
}

func (m *Model) recordsNote() string {
	n := fmt.Sprintf("%d seen", m.records.seen)
	switch {
	case m.reader.paused:
		return "paused · " + n
	case m.records.back > 0:
		return fmt.Sprintf("scrolled up %d (G follows) · %s", m.records.back, n)
	}
	return "live from the tip · " + n
}

func (m *Model) recordsEmpty() string {
	switch {
	case m.reader.paused:
		return "paused: p reads again from the tip"
	case m.reader.reading:
		return fmt.Sprintf("waiting for records (every open shard is polled about every %s)…", shortDuration(m.opts.PollInterval))
	}
	return "no records"
}

// tabBar names the panes of the small layout, the shown one marked.
func (m *Model) tabBar() string {
	th := m.th
	var parts []string
	for p := range numPanes {
		name := paneNames[p]
		if p == m.focus {
			parts = append(parts, th.Select.Render("["+name+"]"))
		} else {
			parts = append(parts, th.Dim.Render(" "+name+" "))
		}
	}
	return strings.Join(parts, " ") + th.Dim.Render("   tab switches")
}

// statusLine: the filter being typed, else the last message.
func (m *Model) statusLine() string {
	th := m.th
	if m.filter.typing {
		return m.filter.input.view(th) + th.Dim.Render("   enter keeps · esc clears")
	}
	s := m.status
	switch s.kind {
	case statusError:
		return th.Err.Render("error: ") + s.text
	case statusWarn:
		return th.Warn.Render(s.text)
	}
	if s.text == "" && m.screen == screenStream && m.selected != "" && m.stream.graph != nil && m.action.dialog == nil {
		return th.Dim.Render(m.selectionInfo())
	}
	return s.text
}

// selectionInfo describes the selected shard in one line.
func (m *Model) selectionInfo() string {
	s := m.stream.graph.Shard(m.selected)
	if s == nil {
		return ""
	}
	out := "shard " + s.ID + " " + s.State.String()
	if s.State != lineage.StateTrimmed {
		out += " · hash keys " + s.Range.Start.String() + " .. " + s.Range.End.String()
	}
	return out
}

// helpBar lists the keys of what is on screen, as many as fit.
func (m *Model) helpBar() string {
	k := m.keys
	var binds []key.Binding
	switch {
	case m.showHelp:
		return m.th.Dim.Render("any key closes the help")
	case m.filter.typing:
		return ""
	case m.action.dialog != nil:
		binds = m.action.dialog.ShortHelp()
	case m.screen == screenPicker:
		binds = []key.Binding{move, k.Enter, k.Filter, k.Refresh, k.Help, k.Quit}
	default:
		binds = []key.Binding{move, tabPane, k.Filter}
		if !m.opts.ReadOnly {
			binds = append(binds, k.Split, k.Merge)
		}
		pause := k.Pause
		if m.reader.paused {
			pause.SetHelp("p", "resume")
		}
		binds = append(binds, pause, k.Help, k.Quit)
	}
	return m.renderBindings(binds, m.width)
}

// Compact help of the bar (the full names are in the ? help).
var (
	move    = key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓/jk", "move"))
	tabPane = key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "pane"))
)

// renderBindings writes "key desc" pairs that fit in w cells; when not all
// fit, the ones in the middle go first, so ? help and q quit always show.
func (m *Model) renderBindings(binds []key.Binding, w int) string {
	th := m.th
	width := func(bs []key.Binding) int {
		n := 0
		for i, bd := range bs {
			h := bd.Help()
			if i > 0 {
				n += 2
			}
			n += ansi.StringWidth(h.Key) + 1 + ansi.StringWidth(h.Desc)
		}
		return n
	}
	for len(binds) > 2 && width(binds) > w {
		binds = append(binds[:len(binds)-3], binds[len(binds)-2:]...)
	}
	var b strings.Builder
	for i, bd := range binds {
		h := bd.Help()
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(th.Key.Render(h.Key) + " " + th.Dim.Render(h.Desc))
	}
	return b.String()
}

// helpView is the full list of keys (?).
func (m *Model) helpView(h int) []string {
	th := m.th
	rows := [][2]string{
		{"↑ ↓  k j", "move the selection (tree, table), scroll (records, preview)"},
		{"pgup pgdn  g G", "page up and down, first and last"},
		{"tab  shift+tab", "next and previous pane (← → h l too)"},
		{"/", "filter streams, or shards (id, state) and records (key, data)"},
		{"esc", "clear the filter; back to the stream list; cancel a dialog"},
		{"enter", "open the stream; choose in a dialog"},
	}
	if !m.opts.ReadOnly {
		rows = append(rows,
			[2]string{"s", "split the selected shard: middle, percentage or balanced"},
			[2]string{"m", "merge the selected shard with its lower or upper neighbour"},
			[2]string{"y / n", "confirm or cancel the previewed change"},
		)
	}
	rows = append(rows,
		[2]string{"p", "pause/resume the sampling reader (paused: no GetRecords)"},
		[2]string{"r", "list the shards now (they are listed every " + shortDuration(m.opts.RefreshInterval) + ")"},
		[2]string{"?", "this help"},
		[2]string{"q  ctrl+c", "quit"},
	)
	out := []string{th.Header.Render("Keys"), ""}
	for _, r := range rows {
		out = append(out, "  "+th.Key.Render(fmt.Sprintf("%-16s", r[0]))+r[1])
	}
	note := "Figures: records/s and bytes/s in are what a reader from the tip of every open shard sees, averaged over " +
		shortDuration(m.opts.Window) + "; BEHIND is its MillisBehindLatest. It polls like `tail`: about once per " +
		shortDuration(m.opts.PollInterval) + " per shard when caught up, never more than 5 calls per second."
	out = append(out, "")
	for _, l := range strings.Split(ansi.Wordwrap(note, max(m.width-2, 20), ""), "\n") {
		out = append(out, th.Dim.Render(l))
	}
	return block(out, m.width, h)
}

// shortDuration prints 10s, 1s, 500ms, 2m.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return d.String()
}
