package dashboard

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// dialogStage is where an action flow is.
type dialogStage int

const (
	stageChoose  dialogStage = iota // pick how to split / which neighbour
	stagePercent                    // type a percentage
	stageBusy                       // sampling traffic for a balanced split
	stagePreview                    // the plan and the y/N question
	stageRunning                    // the executor runs; progress until ACTIVE
)

// choice is one line of the choose stage.
type choice struct {
	label string
	// kind: "middle", "percent", "balanced" or "merge".
	kind     string
	neighbor string // merge: the other shard
}

// dialog is the split/merge flow: choose, (percentage | sample), preview
// and confirmation, then progress. The root model does the planning and
// the calls; the dialog holds the state and draws it.
type dialog struct {
	th      render.Theme
	keys    keyMap
	action  reshard.Action
	shard   string
	title   string
	choices []choice
	cursor  int
	stage   dialogStage
	input   lineInput
	inErr   string
	busy    string
	plan    *reshard.Plan
	// preview is the plan's lines; wrapped is them wrapped to the width.
	preview []string
	wrapped []string
	offset  int
	// progress lines of the running plan, newest last.
	progress []string
	lastWait bool // the last progress line is a wait
	spin     spinner.Model
	w, h     int
}

func newDialog(th render.Theme, keys keyMap, action reshard.Action, shard, title string, choices []choice) *dialog {
	sp := spinner.New(spinner.WithSpinner(spinner.MiniDot))
	sp.Style = th.Accent
	return &dialog{th: th, keys: keys, action: action, shard: shard, title: title, choices: choices, spin: sp}
}

// SetSize gives the dialog the body area.
func (d *dialog) SetSize(w, h int) {
	d.w, d.h = w, h
	d.wrap()
}

// wrap fits the preview to the width: long lines (a description, hash
// ranges) continue on the next line, indented.
func (d *dialog) wrap() {
	d.wrapped = d.wrapped[:0]
	for _, l := range d.preview {
		if d.w <= 8 || ansi.StringWidth(l) <= d.w {
			d.wrapped = append(d.wrapped, l)
			continue
		}
		parts := strings.Split(ansi.Wrap(l, d.w-4, " "), "\n")
		d.wrapped = append(d.wrapped, parts[0])
		for _, p := range parts[1:] {
			d.wrapped = append(d.wrapped, "    "+p)
		}
	}
	d.offset = clamp(d.offset, 0, max(len(d.wrapped)-d.previewHeight(), 0))
}

// question is the confirmation asked under the preview, as the commands
// ask it.
func (d *dialog) question() string { return confirmQuestion(d.plan) }

// previewHeight is the preview's share of the dialog: all but a blank line
// and the question, and a line saying how to scroll when it does not fit.
func (d *dialog) previewHeight() int {
	h := d.h - 2
	if len(d.wrapped) > h {
		h--
	}
	return max(h, 1)
}

// setPlan shows the preview and asks.
func (d *dialog) setPlan(p *reshard.Plan) {
	d.plan, d.stage, d.offset = p, stagePreview, 0
	d.preview = previewLines(p, d.th)
	d.wrap()
}

// scroll moves the preview.
func (d *dialog) scroll(k tea.KeyMsg) {
	switch {
	case key.Matches(k, d.keys.Up):
		d.offset--
	case key.Matches(k, d.keys.Down):
		d.offset++
	case key.Matches(k, d.keys.PageUp):
		d.offset -= d.previewHeight()
	case key.Matches(k, d.keys.PageDown):
		d.offset += d.previewHeight()
	}
	d.offset = clamp(d.offset, 0, max(len(d.wrapped)-d.previewHeight(), 0))
}

// View draws the stage in the body area.
func (d *dialog) View() []string {
	th := d.th
	out := []string{th.Header.Render(d.title), ""}
	switch d.stage {
	case stageChoose:
		for i, c := range d.choices {
			if i == d.cursor {
				out = append(out, th.Select.Render(fit("▸ "+c.label, min(d.w, len(c.label)+4))))
			} else {
				out = append(out, "  "+c.label)
			}
		}
		out = append(out, "", th.Dim.Render("↑/↓ choose · enter select · esc cancel"))
	case stagePercent:
		out = append(out, "  Split at this percentage of the shard's hash range (0 < P < 100, e.g. 50 or 33.5):", "",
			"  "+d.input.view(th))
		if d.inErr != "" {
			out = append(out, "", "  "+th.Err.Render(d.inErr))
		}
		out = append(out, "", th.Dim.Render("enter preview · esc cancel"))
	case stageBusy:
		out = append(out, "  "+d.spin.View()+" "+d.busy, "", th.Dim.Render("esc cancel"))
	case stagePreview:
		h := d.previewHeight()
		end := min(d.offset+h, len(d.wrapped))
		out = append([]string{}, d.wrapped[d.offset:end]...)
		for len(out) < h {
			out = append(out, "")
		}
		if len(d.wrapped) > h {
			out = append(out, th.Dim.Render(fmt.Sprintf("  (↑/↓ scroll: lines %d-%d of %d)", d.offset+1, end, len(d.wrapped))))
		}
		out = append(out, "", th.Warn.Render(d.question())+" [y/N]  "+th.Dim.Render("y confirm · n/esc cancel"))
	case stageRunning:
		out = append(out, "  "+d.spin.View()+" "+d.busy, "")
		start := max(len(d.progress)-(d.h-5), 0)
		for _, p := range d.progress[start:] {
			out = append(out, "  "+th.Dim.Render(p))
		}
	}
	return block(out, d.w, d.h)
}

// splitChoices are the three ways to split a shard.
func splitChoices() []choice {
	return []choice{
		{label: "at the middle (50% of its hash range)", kind: "middle"},
		{label: "at a percentage of its hash range…", kind: "percent"},
		{label: "balanced: at the median hash of sampled traffic", kind: "balanced"},
	}
}

// mergeChoices are the open neighbours of shard id, lower range first.
func mergeChoices(g *lineage.Graph, id string) []choice {
	open := g.Open()
	var out []choice
	for i, s := range open {
		if s.ID != id {
			continue
		}
		if i > 0 {
			n := open[i-1]
			out = append(out, choice{kind: "merge", neighbor: n.ID,
				label: fmt.Sprintf("with the lower neighbour %s (%s of the key space)", lineage.ShortID(n.ID), render.FormatShare(n.Range.Fraction()))})
		}
		if i+1 < len(open) {
			n := open[i+1]
			out = append(out, choice{kind: "merge", neighbor: n.ID,
				label: fmt.Sprintf("with the upper neighbour %s (%s of the key space)", lineage.ShortID(n.ID), render.FormatShare(n.Range.Fraction()))})
		}
	}
	return out
}

// eventLine describes an executor event.
func eventLine(e reshard.Event) string {
	switch e.Kind {
	case reshard.EventSend:
		return fmt.Sprintf("step %d of %d: %s", e.Step, e.Total, e.Desc)
	case reshard.EventWait:
		return fmt.Sprintf("waiting for ACTIVE: %s after %.1fs", orDash(string(e.Status)), e.Elapsed.Seconds())
	case reshard.EventDone:
		s := fmt.Sprintf("step %d of %d done in %.1fs", e.Step, e.Total, e.Elapsed.Seconds())
		if e.Done != nil && len(e.Done.Opened) > 0 {
			s += ": opened " + shortList(e.Done.Opened)
		}
		return s
	}
	return e.Desc
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortList joins shard ids as short numbers: "3, 4".
func shortList(ids []string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = lineage.ShortID(id)
	}
	return strings.Join(s, ", ")
}

// andList names shard ids as short numbers: "3", "3 and 4", "3, 4 and 5".
func andList(ids []string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = lineage.ShortID(id)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
