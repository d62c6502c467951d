package dashboard

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// pane is one of the stream screen's panes.
type pane int

const (
	paneTree pane = iota
	paneTable
	paneRecords
	numPanes
)

var paneNames = [numPanes]string{"Lineage", "Shards", "Records"}

type screen int

const (
	screenPicker screen = iota
	screenStream
)

type statusKind int

const (
	statusInfo statusKind = iota
	statusWarn
	statusError
)

// status is the status line: the last thing worth saying.
type status struct {
	text string
	kind statusKind
	// refresh marks a failed refresh, cleared by the next good one.
	refresh bool
}

// filterState is the / filter: typed into input, applied as value to the
// picker, or to the shard table and the record pane.
type filterState struct {
	value  string
	typing bool
	input  lineInput
}

// Model is the root model. It owns the components (the picker, the tree,
// the shard table, the record pane and, through the action flow, the
// dialog), lays them out, routes keys to the one in focus, and hands every
// other message to the part of the dashboard it belongs to: the open
// stream's listing (stream.go), the sampling reader (reader.go) or the
// split/merge flow (action.go). Create it with New; it is used by pointer.
type Model struct {
	opts   Options
	th     render.Theme
	keys   keyMap
	ctx    context.Context
	cancel context.CancelFunc

	width, height int
	screen        screen
	// fromPicker: esc goes back to the picker.
	fromPicker bool
	status     status
	showHelp   bool
	quitArmed  bool
	filter     filterState

	picker   picker
	focus    pane
	selected string // the shard selected in both the tree and the table
	tree     treePane
	table    shardTable
	records  recordPane

	stream streamState
	reader readerState
	action actionState
}

// New returns the dashboard model.
func New(o Options) *Model {
	o.defaults()
	ctx, cancel := context.WithCancel(o.Context)
	keys := newKeyMap()
	m := &Model{opts: o, th: o.Theme, keys: keys, ctx: ctx, cancel: cancel,
		picker: newPicker(o.Theme, keys), tree: newTreePane(o.Theme, keys), table: newShardTable(o.Theme, keys),
		records: newRecordPane(o.Theme, keys, o.Location),
		filter:  filterState{input: lineInput{prompt: "/", limit: 128}},
		reader:  readerState{figs: newFigures(o.Window), snap: map[string]shardSnap{}, paused: o.Paused}}
	if o.Stream.Name != "" {
		m.screen, m.stream.ref = screenStream, o.Stream
		m.stream.loading, m.stream.quotaDue = true, true
	}
	return m
}

func (m *Model) now() time.Time { return m.opts.Now() }

// Init starts the first listing and the timers.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{refreshTick(m.opts.RefreshInterval), figureTick(m.opts.FigureInterval)}
	if m.screen == screenStream {
		cmds = append(cmds, m.loadStreamCmd())
	} else {
		cmds = append(cmds, m.listStreamsCmd())
	}
	return tea.Batch(cmds...)
}

// Update routes a message: window sizes and keys here, the rest to the
// part that sent for it.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
		return m, nil
	case tea.KeyMsg:
		// Keys typed faster than they are read arrive as one message ("jj");
		// outside a text field each is a key of its own.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste && !m.typing() {
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return m, tea.Batch(cmds...)
		}
		return m, m.key(msg)
	case refreshTickMsg, streamsMsg, streamMsg, checkpointMsg, leasesMsg, lagMsg:
		return m, m.updateStream(msg)
	case figureTickMsg, recordsMsg, pollMsg, readerDoneMsg:
		return m, m.updateReader(msg)
	case sampleMsg, execEventMsg, execDoneMsg, spinner.TickMsg:
		return m, m.updateAction(msg)
	}
	return m, nil
}

// typing reports whether keys go to a text field.
func (m *Model) typing() bool {
	return m.filter.typing || (m.action.dialog != nil && m.action.dialog.typing())
}

// resize lays every component out for the window.
func (m *Model) resize() {
	bodyH := max(m.height-3, 1) // title, status, help
	m.picker.SetSize(m.width, bodyH)
	if m.action.dialog != nil {
		m.action.dialog.SetSize(m.width, bodyH)
	}
	l := m.layout()
	m.tree.SetSize(l.treeW, l.treeH)
	m.table.SetSize(l.tableW, l.tableH)
	m.records.SetSize(l.recW, l.recH)
}

// layoutSizes are the panes' areas without their title lines.
type layoutSizes struct {
	wide           bool
	treeW, treeH   int
	tableW, tableH int
	recW, recH     int
	topH           int // wide: the rows of the tree and table panes
	bodyH          int
}

// wide reports whether the window takes the side-by-side layout: the tree
// and the table beside each other above the records. Smaller windows show
// one pane at a time under a tab bar.
func (m *Model) wide() bool { return m.width >= 100 && m.height >= 28 }

func (m *Model) layout() layoutSizes {
	l := layoutSizes{bodyH: max(m.height-3, 1)}
	if !m.wide() {
		h := max(l.bodyH-2, 1) // tab bar and the pane's title
		l.treeW, l.treeH = m.width, h
		l.tableW, l.tableH = m.width, h
		l.recW, l.recH = m.width, h
		return l
	}
	l.wide = true
	l.topH = l.bodyH * 3 / 5
	natural := m.table.naturalWidth(m.opts.Checkpoint != "", m.opts.Lag)
	l.tableW = min(natural, m.width*3/5)
	l.treeW = m.width - 1 - l.tableW
	l.treeH, l.tableH = max(l.topH-1, 1), max(l.topH-1, 1)
	l.recW, l.recH = m.width, max(l.bodyH-l.topH-1, 1)
	return l
}

func (m *Model) setStatus(kind statusKind, text string) {
	m.status = status{text: text, kind: kind}
}

// key handles a key press: the help, the filter being typed and an open
// dialog take every key; otherwise the screen's keys, then the focused
// component's.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQuit) {
		return m.quit()
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	if m.filter.typing {
		return m.filterKey(k)
	}
	if m.action.dialog != nil {
		return m.dialogKey(k)
	}
	if key.Matches(k, m.keys.Quit) {
		return m.quit()
	}
	m.quitArmed = false
	switch {
	case key.Matches(k, m.keys.Help):
		m.showHelp = true
		return nil
	case key.Matches(k, m.keys.Filter):
		m.filter.typing = true
		m.filter.input.value = m.filter.value
		return nil
	}
	if m.screen == screenPicker {
		return m.pickerKey(k)
	}
	return m.streamKey(k)
}

func (m *Model) pickerKey(k tea.KeyMsg) tea.Cmd {
	if key.Matches(k, m.keys.Back) && m.filter.value != "" {
		m.applyFilter("")
		return nil
	}
	if key.Matches(k, m.keys.Refresh) {
		return m.listStreamsCmd()
	}
	if name := m.picker.Update(k); name != "" {
		return m.open(kstream.Ref{Name: name})
	}
	return nil
}

func (m *Model) streamKey(k tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Back):
		switch {
		case m.filter.value != "":
			m.applyFilter("")
		case m.fromPicker:
			return m.backToPicker()
		}
		return nil
	case key.Matches(k, m.keys.NextPane):
		m.focus = (m.focus + 1) % numPanes
		return nil
	case key.Matches(k, m.keys.PrevPane):
		m.focus = (m.focus + numPanes - 1) % numPanes
		return nil
	case key.Matches(k, m.keys.Refresh):
		return m.refreshNow()
	case key.Matches(k, m.keys.Pause):
		return m.togglePause()
	case key.Matches(k, m.keys.Split):
		return m.startSplit()
	case key.Matches(k, m.keys.Merge):
		return m.startMerge()
	}
	switch m.focus {
	case paneTree:
		if m.tree.Update(k) {
			m.selectShard(m.tree.selected())
		}
	case paneTable:
		if m.table.Update(k) {
			m.selectShard(m.table.selected())
		}
	case paneRecords:
		m.records.Update(k)
	}
	return nil
}

// quit stops everything. While a reshard runs the first q only warns: the
// service finishes the change anyway, but its progress would be lost.
func (m *Model) quit() tea.Cmd {
	if m.action.running() && !m.quitArmed {
		m.quitArmed = true
		m.setStatus(statusWarn, "a reshard is in progress: the service completes it even if you quit; press q again to quit")
		return nil
	}
	m.stopReader()
	if m.action.cancel != nil {
		m.action.cancel()
	}
	m.cancel()
	return tea.Quit
}

// filterKey edits the filter; the lists follow as it is typed.
func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	f := &m.filter
	submit, cancel := f.input.update(k)
	switch {
	case cancel:
		f.typing = false
		m.applyFilter("")
	case submit:
		f.typing = false
		m.applyFilter(f.input.value)
	default:
		m.applyFilter(f.input.value)
	}
	return nil
}

func (m *Model) applyFilter(f string) {
	m.filter.value = f
	if m.screen == screenPicker {
		m.picker.setFilter(f)
		return
	}
	m.table.setFilter(f, m.selected)
	m.records.setFilter(f)
	if s := m.table.selected(); s != "" && f != "" {
		m.selectShard(s)
	}
}

// selectShard makes id the selected shard of both the tree and the table.
func (m *Model) selectShard(id string) {
	if id == "" {
		return
	}
	m.selected = id
	m.tree.selectID(id)
	m.table.selectID(id)
}

// listen turns what a goroutine puts on ch into messages, one per call; it
// gives nil (no message) once ch is closed.
func listen(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}
