package dashboard

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
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

// dialog is the split/merge dialog: choose, (percentage | sample), preview
// and confirmation, then progress. It is a component of its own: its
// Update moves it through the stages it can take alone (the cursor, the
// percentage typed, the preview's scroll, the spinner, the progress lines)
// and hands back, as a request, what only the root can do (plan, sample,
// run, cancel, quit). The request is returned rather than sent as a
// message so it takes effect within the same key press, before any later
// key or message.
type dialog struct {
	th      render.Theme
	keys    dialogKeys
	action  reshard.Action
	stream  string
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

// dialogKeys are the dialog's bindings: the root's, so the help bar names
// them as everywhere else.
type dialogKeys struct {
	Up, Down, PageUp, PageDown key.Binding
	Enter, Back, Quit, Yes, No key.Binding
}

func newDialogKeys(k keyMap) dialogKeys {
	return dialogKeys{Up: k.Up, Down: k.Down, PageUp: k.PageUp, PageDown: k.PageDown,
		Enter: k.Enter, Back: k.Back, Quit: k.Quit, Yes: k.Yes, No: k.No}
}

// requestKind is what the dialog asks the root to do.
type requestKind int

const (
	reqNone    requestKind = iota
	reqCancel              // close the dialog: nothing was changed
	reqChoose              // act on choice (middle, balanced, merge)
	reqPercent             // plan a split at percent
	reqConfirm             // run the previewed plan
	reqQuit                // q while the plan runs
)

type request struct {
	kind    requestKind
	choice  choice
	percent *big.Rat
}

func newDialog(th render.Theme, keys keyMap, action reshard.Action, stream, shard, title string, choices []choice) *dialog {
	sp := spinner.New(spinner.WithSpinner(spinner.MiniDot))
	sp.Style = th.Accent
	return &dialog{th: th, keys: newDialogKeys(keys), action: action, stream: stream, shard: shard, title: title, choices: choices, spin: sp}
}

// Update takes a key, a spinner frame or an executor event.
func (d *dialog) Update(msg tea.Msg) (request, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		return d.key(msg), nil
	case spinner.TickMsg:
		if d.stage != stageBusy && d.stage != stageRunning {
			return request{}, nil
		}
		var cmd tea.Cmd
		d.spin, cmd = d.spin.Update(msg)
		return request{}, cmd
	case reshard.Event:
		d.event(msg)
	}
	return request{}, nil
}

// key handles a key at the current stage.
func (d *dialog) key(k tea.KeyMsg) request {
	switch d.stage {
	case stageChoose:
		switch {
		case key.Matches(k, d.keys.Back), key.Matches(k, d.keys.Quit):
			return request{kind: reqCancel}
		case key.Matches(k, d.keys.Up):
			d.cursor = clamp(d.cursor-1, 0, len(d.choices)-1)
		case key.Matches(k, d.keys.Down):
			d.cursor = clamp(d.cursor+1, 0, len(d.choices)-1)
		case key.Matches(k, d.keys.Enter):
			c := d.choices[d.cursor]
			if c.kind == "percent" {
				d.stage = stagePercent
				d.input = lineInput{prompt: "Percent: ", limit: 40}
				return request{}
			}
			return request{kind: reqChoose, choice: c}
		}
	case stagePercent:
		submit, cancel := d.input.update(k)
		switch {
		case cancel:
			return request{kind: reqCancel}
		case submit:
			p, err := lineage.ParsePercent(strings.TrimSpace(d.input.value))
			if err != nil {
				d.inErr = err.Error()
				return request{}
			}
			return request{kind: reqPercent, percent: p}
		default:
			d.inErr = ""
		}
	case stageBusy:
		if key.Matches(k, d.keys.Back) {
			return request{kind: reqCancel}
		}
	case stagePreview:
		switch {
		case key.Matches(k, d.keys.Yes):
			return request{kind: reqConfirm}
		case key.Matches(k, d.keys.No), key.Matches(k, d.keys.Quit):
			return request{kind: reqCancel}
		default:
			d.scroll(k)
		}
	case stageRunning:
		if key.Matches(k, d.keys.Quit) {
			return request{kind: reqQuit}
		}
	}
	return request{}
}

// typing reports whether the dialog takes keys as text.
func (d *dialog) typing() bool { return d.stage == stagePercent }

// ShortHelp is the keys of the stage, for the help bar.
func (d *dialog) ShortHelp() []key.Binding {
	k := d.keys
	switch d.stage {
	case stageChoose:
		return []key.Binding{move, k.Enter, k.Back}
	case stagePercent:
		return []key.Binding{k.Enter, k.Back}
	case stagePreview:
		return []key.Binding{k.Yes, k.No, move}
	case stageBusy:
		return []key.Binding{k.Back}
	case stageRunning:
		return []key.Binding{k.Quit}
	}
	return nil
}

// setBusy shows the spinner with what is being done (sampling).
func (d *dialog) setBusy(text string) {
	d.stage, d.busy = stageBusy, text
}

// setRunning shows the progress of the plan being run.
func (d *dialog) setRunning(text string) {
	d.stage, d.busy = stageRunning, text
}

// note adds a progress line and says what is being done now.
func (d *dialog) note(line, busy string) {
	d.progress = append(d.progress, line)
	d.lastWait = false
	d.busy = busy
}

// event adds the executor's progress: one line per event, one per wait
// (each poll replaces the last).
func (d *dialog) event(e reshard.Event) {
	line := eventLine(e)
	if n := len(d.progress); e.Kind == reshard.EventWait && n > 0 && d.lastWait {
		d.progress[n-1] = line
	} else {
		d.progress = append(d.progress, line)
	}
	d.lastWait = e.Kind == reshard.EventWait
	if e.Kind == reshard.EventWait {
		d.busy = fmt.Sprintf("waiting for stream %s to be ACTIVE (%s, %.1fs)", d.stream, text.OrDash(string(e.Status)), e.Elapsed.Seconds())
	}
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

// eventLine describes an executor event.
func eventLine(e reshard.Event) string {
	switch e.Kind {
	case reshard.EventSend:
		return fmt.Sprintf("step %d of %d: %s", e.Step, e.Total, e.Desc)
	case reshard.EventWait:
		return fmt.Sprintf("waiting for ACTIVE: %s after %.1fs", text.OrDash(string(e.Status)), e.Elapsed.Seconds())
	case reshard.EventDone:
		s := fmt.Sprintf("step %d of %d done in %.1fs", e.Step, e.Total, e.Elapsed.Seconds())
		if e.Done != nil && len(e.Done.Opened) > 0 {
			s += ": opened " + shortList(e.Done.Opened)
		}
		return s
	}
	return e.Desc
}

// shortList joins shard ids as short numbers: "3, 4".
func shortList(ids []string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = lineage.ShortID(id)
	}
	return strings.Join(s, ", ")
}
