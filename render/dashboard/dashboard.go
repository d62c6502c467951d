package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// API is what the dashboard needs from the Kinesis client: ListStreams for
// the picker, DescribeStreamSummary and ListShards for the listing,
// GetShardIterator and GetRecords for the sampling reader, SplitShard and
// MergeShards (and, through reshard.API, UpdateShardCount, never called
// here) for the actions. *kinesis.Client and internal/kinesistest/fake satisfy it.
type API interface {
	kinesis.ListStreamsAPIClient
	tail.API
	reshard.API
}

// Options configure the dashboard. Zero durations take their defaults.
type Options struct {
	API API
	// Stream is the stream to open; a zero Ref starts with the picker.
	Stream kstream.Ref
	// ReadOnly hides every action (--read-only).
	ReadOnly bool
	// Theme gives every colour; render.NewTheme(false) draws plain text.
	Theme render.Theme
	// Checkpoint is a tail checkpoint file whose positions the table shows
	// (--checkpoint); "" shows no checkpoint column.
	Checkpoint string
	// ReadCheckpoint reads it without locking; nil means tail.ReadCheckpoint.
	ReadCheckpoint func(path string) (tail.StreamIdentity, map[string]tail.Position, error)
	// ListStreams lists the stream names for the picker; nil pages
	// API.ListStreams by NextToken.
	ListStreams func(ctx context.Context) ([]string, error)
	// DescribeError words an error for the status line (cmd passes the
	// wording the commands use); nil uses err.Error().
	DescribeError func(error) string
	// Leases, when set, reads a KCL lease table and lays it over the tree
	// at every listing (--kcl-table): owners, checkpoints, blocked children.
	Leases func(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error)

	// Now is the clock of the figures and the header; nil means time.Now.
	Now func() time.Time
	// Location is the time zone of displayed times; nil means time.Local.
	Location *time.Location

	RefreshInterval time.Duration // the listing is refreshed this often (5s)
	FigureInterval  time.Duration // figures are recomputed this often (1s)
	PollInterval    time.Duration // the sampling reader's poll of a caught-up shard (tail's default, 1s)
	Window          time.Duration // figures are averaged over this window (10s)
	CallTimeout     time.Duration // deadline of a listing (30s)

	// NoReader starts no sampling reader (tests, golden screens): records
	// and polls then come only from messages sent by the caller.
	NoReader bool
	// Paused starts with the sampling reader paused (--paused): no
	// GetRecords call until p is pressed.
	Paused bool
	// Wait tunes the wait for ACTIVE after a split or merge.
	Wait kstream.WaitOptions
	// Sample bounds the traffic sample of a balanced split.
	Sample reshard.SampleOptions
	// Context ends every call when done; nil means context.Background.
	Context context.Context
}

func (o *Options) defaults() {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 5 * time.Second
	}
	if o.FigureInterval <= 0 {
		o.FigureInterval = time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = tail.DefaultPollInterval
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.ReadCheckpoint == nil {
		o.ReadCheckpoint = tail.ReadCheckpoint
	}
	if o.DescribeError == nil {
		o.DescribeError = func(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
}

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

// Model is the root model. Create it with New; it is used by pointer.
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

	picker picker

	// The open stream.
	ref      kstream.Ref
	gen      int // bumped whenever another stream is opened
	sum      *kstream.Summary
	graph    *lineage.Graph
	loadedAt time.Time
	loading  bool
	selected string
	focus    pane
	tree     treePane
	table    shardTable
	records  recordPane
	checkpt  map[string]tail.Position
	// The account's shard quota for the planner, read with the listing
	// when quotaDue.
	quota     *reshard.Quota
	quotaErr  error
	quotaDue  bool
	filter    string
	filtering bool
	input     lineInput

	// The sampling reader.
	figs         *figures
	snap         map[string]shardSnap
	run          int
	reading      bool
	paused       bool
	readerCancel context.CancelFunc
	readerCh     chan tea.Msg

	// The action in progress.
	dialog       *dialog
	actionSeq    int
	actionCancel context.CancelFunc
	execCh       chan tea.Msg
	resumeReader bool // restart the reader when sampling ends

	status    status
	showHelp  bool
	quitArmed bool
}

// New returns the dashboard model.
func New(o Options) *Model {
	o.defaults()
	ctx, cancel := context.WithCancel(o.Context)
	keys := newKeyMap()
	m := &Model{opts: o, th: o.Theme, keys: keys, ctx: ctx, cancel: cancel,
		picker: newPicker(o.Theme, keys), tree: newTreePane(o.Theme, keys), table: newShardTable(o.Theme, keys),
		records: newRecordPane(o.Theme, keys, o.Location), figs: newFigures(o.Window), snap: map[string]shardSnap{},
		input: lineInput{prompt: "/", limit: 128}, paused: o.Paused}
	if o.Stream.Name != "" {
		m.screen, m.ref = screenStream, o.Stream
		m.loading, m.quotaDue = true, true
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

// Update routes a message.
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
	case refreshTickMsg:
		cmds := []tea.Cmd{refreshTick(m.opts.RefreshInterval)}
		switch {
		case m.screen == screenPicker:
			cmds = append(cmds, m.listStreamsCmd())
		case !m.loading && (m.dialog == nil || m.dialog.stage != stageRunning):
			m.loading = true
			cmds = append(cmds, m.loadStreamCmd())
		}
		return m, tea.Batch(cmds...)
	case figureTickMsg:
		m.computeFigures()
		return m, figureTick(m.opts.FigureInterval)
	case streamsMsg:
		if msg.err != nil {
			m.setStatus(statusError, "cannot list streams: "+m.opts.DescribeError(msg.err))
			m.status.refresh = true
			return m, nil
		}
		if m.status.refresh {
			m.status = status{}
		}
		m.picker.setNames(msg.names)
		return m, nil
	case streamMsg:
		return m, m.streamLoaded(msg)
	case checkpointMsg:
		m.checkpointRead(msg)
		return m, nil
	case leasesMsg:
		m.leasesRead(msg)
		return m, nil
	case recordsMsg:
		if !m.fromReader(msg.run) {
			return m, nil
		}
		m.records.add(msg.recs)
		return m, m.listenReader()
	case pollMsg:
		if !m.fromReader(msg.run) {
			return m, nil
		}
		if m.figs.since.IsZero() {
			m.figs.since = m.now()
		}
		m.figs.add(msg.stats, m.now())
		return m, m.listenReader()
	case readerDoneMsg:
		if msg.run != m.run {
			return m, nil
		}
		m.reading = false
		m.readerCancel = nil
		if msg.err != nil {
			m.setStatus(statusError, "the sampling reader stopped: "+m.opts.DescribeError(msg.err)+" (p starts it again)")
			m.paused = true
		}
		return m, nil
	case sampleMsg:
		return m, m.sampled(msg)
	case execEventMsg:
		if msg.seq != m.actionSeq || m.dialog == nil || m.dialog.stage != stageRunning {
			return m, nil
		}
		line := eventLine(msg.ev)
		// One line per wait: each poll replaces the last.
		if n := len(m.dialog.progress); msg.ev.Kind == reshard.EventWait && n > 0 && m.dialog.lastWait {
			m.dialog.progress[n-1] = line
		} else {
			m.dialog.progress = append(m.dialog.progress, line)
		}
		m.dialog.lastWait = msg.ev.Kind == reshard.EventWait
		if msg.ev.Kind == reshard.EventWait {
			m.dialog.busy = fmt.Sprintf("waiting for stream %s to be ACTIVE (%s, %.1fs)", m.ref.Name, orDash(string(msg.ev.Status)), msg.ev.Elapsed.Seconds())
		}
		return m, listen(m.execCh)
	case execDoneMsg:
		return m, m.executed(msg)
	case spinner.TickMsg:
		if m.dialog == nil || (m.dialog.stage != stageBusy && m.dialog.stage != stageRunning) {
			return m, nil
		}
		var cmd tea.Cmd
		m.dialog.spin, cmd = m.dialog.spin.Update(msg)
		return m, cmd
	}
	return m, nil
}

// typing reports whether keys go to a text field.
func (m *Model) typing() bool {
	return m.filtering || (m.dialog != nil && m.dialog.stage == stagePercent)
}

// fromReader reports whether a reader message comes from the current
// reader. With NoReader the caller feeds them (run 0) while not paused.
func (m *Model) fromReader(run int) bool {
	if m.opts.NoReader {
		return run == m.run && !m.paused
	}
	return run == m.run && m.reading
}

// listenReader waits for the reader's next message.
func (m *Model) listenReader() tea.Cmd {
	if m.readerCh == nil {
		return nil
	}
	return listen(m.readerCh)
}

// resize lays every component out for the window.
func (m *Model) resize() {
	bodyH := max(m.height-3, 1) // title, status, help
	m.picker.SetSize(m.width, bodyH)
	if m.dialog != nil {
		m.dialog.SetSize(m.width, bodyH)
	}
	l := m.layout()
	m.tree.SetSize(l.treeW, l.treeH)
	m.table.SetSize(l.tableW, l.tableH)
	m.records.SetSize(l.recW, l.recH)
}

// layoutSizes are the panes' areas without their title lines.
type layoutSizes struct {
	wide                   bool
	treeW, treeH           int
	tableW, tableH         int
	recW, recH             int
	topH                   int // wide: the rows of the tree and table panes
	bodyH                  int
	tableNatural, sepWidth int
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
	l.sepWidth = 1
	natural := m.table.naturalWidth(m.opts.Checkpoint != "")
	l.tableW = min(natural, m.width*3/5)
	l.treeW = m.width - 1 - l.tableW
	l.treeH, l.tableH = max(l.topH-1, 1), max(l.topH-1, 1)
	l.recW, l.recH = m.width, max(l.bodyH-l.topH-1, 1)
	return l
}

func (m *Model) setStatus(kind statusKind, text string) {
	m.status = status{text: text, kind: kind}
}

// key handles a key press.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQuit) {
		return m.quit()
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	if m.filtering {
		return m.filterKey(k)
	}
	if m.dialog != nil {
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
		m.filtering = true
		m.input.value = m.filter
		return nil
	}
	if m.screen == screenPicker {
		if key.Matches(k, m.keys.Back) && m.filter != "" {
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
	switch {
	case key.Matches(k, m.keys.Back):
		switch {
		case m.filter != "":
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
		if !m.loading {
			// r also reads the shard quota again (the timer's refreshes
			// do not: DescribeLimits allows one call a second).
			m.loading, m.quotaDue = true, true
			return m.loadStreamCmd()
		}
		return nil
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
	if m.dialog != nil && m.dialog.stage == stageRunning && !m.quitArmed {
		m.quitArmed = true
		m.setStatus(statusWarn, "a reshard is in progress: the service completes it even if you quit; press q again to quit")
		return nil
	}
	m.stopReader()
	if m.actionCancel != nil {
		m.actionCancel()
	}
	m.cancel()
	return tea.Quit
}

// filterKey edits the filter; the lists follow as it is typed.
func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	submit, cancel := m.input.update(k)
	switch {
	case cancel:
		m.filtering = false
		m.applyFilter("")
	case submit:
		m.filtering = false
		m.applyFilter(m.input.value)
	default:
		m.applyFilter(m.input.value)
	}
	return nil
}

func (m *Model) applyFilter(f string) {
	m.filter = f
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

// open shows a stream picked in the picker.
func (m *Model) open(ref kstream.Ref) tea.Cmd {
	m.screen, m.fromPicker, m.ref = screenStream, true, ref
	m.gen++
	m.sum, m.graph, m.selected, m.checkpt = nil, nil, "", nil
	m.quota, m.quotaErr, m.quotaDue = nil, nil, true
	m.tree = newTreePane(m.th, m.keys)
	m.table = newShardTable(m.th, m.keys)
	m.records.clear()
	m.snap = map[string]shardSnap{}
	m.filter, m.focus = "", paneTree
	m.records.setFilter("")
	m.resize()
	m.loading = true
	m.status = status{}
	return m.loadStreamCmd()
}

func (m *Model) backToPicker() tea.Cmd {
	m.stopReader()
	m.gen++
	m.screen, m.sum, m.graph, m.loading = screenPicker, nil, nil, false
	m.filter = ""
	m.picker.setFilter("")
	m.status = status{}
	return m.listStreamsCmd()
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

// streamLoaded takes a new listing.
func (m *Model) streamLoaded(msg streamMsg) tea.Cmd {
	if msg.gen != m.gen || m.screen != screenStream {
		return nil
	}
	m.loading = false
	if msg.err != nil {
		text := "cannot list stream " + m.ref.Name + ": " + m.opts.DescribeError(msg.err)
		if m.graph == nil && m.fromPicker {
			cmd := m.backToPicker()
			m.setStatus(statusError, text)
			return cmd
		}
		m.setStatus(statusError, text)
		m.status.refresh = true
		return nil
	}
	if m.status.refresh {
		m.status = status{}
	}
	first := m.graph == nil
	m.sum, m.loadedAt = msg.sum, m.now()
	if msg.quotaRead {
		m.quota, m.quotaErr, m.quotaDue = msg.quota, msg.quotaErr, false
	}
	m.setGraph(msg.graph)
	var cmds []tea.Cmd
	if m.opts.Checkpoint != "" {
		cmds = append(cmds, m.readCheckpointCmd())
	}
	if m.opts.Leases != nil {
		cmds = append(cmds, m.readLeasesCmd(msg.graph, msg.sum))
	}
	if first {
		switch {
		case m.opts.NoReader:
		case msg.sum.Status == "DELETING":
		case !m.paused:
			cmds = append(cmds, m.startReader())
		}
	}
	return tea.Batch(cmds...)
}

// setGraph shows a listing, keeping the selection (or, when the selected
// shard is gone, selecting the first open shard).
func (m *Model) setGraph(g *lineage.Graph) {
	m.graph = g
	sel := m.selected
	if sel == "" || g.Shard(sel) == nil {
		sel = ""
		if open := g.Open(); len(open) > 0 {
			sel = open[0].ID
		} else if all := g.Shards(); len(all) > 0 {
			sel = all[0].ID
		}
	}
	m.selected = sel
	m.tree.setGraph(g, sel)
	m.table.setGraph(g, sel)
}

// checkpointRead takes the checkpoint file's positions, if the file is this
// stream's.
func (m *Model) checkpointRead(msg checkpointMsg) {
	if msg.gen != m.gen || m.sum == nil {
		return
	}
	if msg.err != nil {
		m.checkpt = map[string]tail.Position{}
		m.setStatus(statusWarn, "checkpoint: "+m.opts.DescribeError(msg.err))
		return
	}
	if msg.id.ARN != m.sum.ARN || !msg.id.Created.Equal(m.sum.Created) {
		m.checkpt = map[string]tail.Position{}
		m.setStatus(statusWarn, fmt.Sprintf("checkpoint file %s is for %s, not for this stream: its positions are not shown", m.opts.Checkpoint, msg.id.ARN))
		return
	}
	m.checkpt = msg.pos
}

// leasesRead lays a lease table over the tree and says on the status line
// how many children are blocked.
func (m *Model) leasesRead(msg leasesMsg) {
	if msg.gen != m.gen {
		return
	}
	if msg.err != nil {
		m.setStatus(statusWarn, "lease table: "+m.opts.DescribeError(msg.err))
		m.status.refresh = true
		return
	}
	m.tree.setLeases(msg.marks)
	var blocked []string
	for id, mk := range msg.marks {
		if mk.Blocked {
			blocked = append(blocked, lineage.ShortID(id)+" "+mk.Reason)
		}
	}
	sort.Strings(blocked)
	if len(blocked) > 0 {
		m.setStatus(statusWarn, fmt.Sprintf("lease table: %d blocked: %s", len(blocked), strings.Join(blocked, "; ")))
		m.status.refresh = true
	}
}

// computeFigures snapshots the live figures (on the figure timer).
func (m *Model) computeFigures() {
	if m.graph == nil {
		return
	}
	now := m.now()
	snap := make(map[string]shardSnap, len(m.figs.shards))
	for id := range m.figs.shards {
		r, b, ok := m.figs.rate(id, now)
		beh, _ := m.figs.behind(id)
		snap[id] = shardSnap{recs: r, bytes: b, behind: beh, ok: ok}
	}
	m.snap = snap
}

// togglePause stops or restarts the sampling reader. Paused, the dashboard
// makes no GetRecords call at all; a restarted reader starts at the tip.
func (m *Model) togglePause() tea.Cmd {
	if m.dialog != nil || m.sum == nil {
		return nil
	}
	if m.reading {
		m.stopReader()
		m.paused = true
		m.setStatus(statusInfo, "paused: no GetRecords calls until p is pressed again")
		return nil
	}
	m.paused = false
	if m.opts.NoReader {
		return nil
	}
	m.setStatus(statusInfo, "sampling again from the tip")
	return m.startReader()
}

// planInput is what the planner checks the action against.
func (m *Model) planInput() reshard.Input {
	s := m.sum
	return reshard.Input{Stream: reshard.Stream{Name: s.Name, ARN: s.ARN, Status: s.Status, Mode: s.Mode}, Graph: m.graph, Quota: m.quota, QuotaErr: m.quotaErr}
}

// actionAllowed says why no action can start now ("" when one can).
func (m *Model) actionAllowed() string {
	switch {
	case m.opts.ReadOnly:
		return "read-only: split and merge are off (started with --read-only)"
	case m.graph == nil || m.sum == nil:
		return "the stream is still being listed"
	case m.selected == "":
		return "no shard is selected"
	}
	return ""
}

// startSplit opens the split dialog for the selected shard, after the
// planner's checks that need no key (open, big enough, ACTIVE, provisioned).
func (m *Model) startSplit() tea.Cmd {
	if why := m.actionAllowed(); why != "" {
		m.setStatus(statusWarn, why)
		return nil
	}
	if _, err := reshard.SampleShards(m.planInput(), reshard.SplitGoal{Shard: m.selected}); err != nil {
		m.refused(err)
		return nil
	}
	sh := m.graph.Shard(m.selected)
	title := fmt.Sprintf("Split shard %s (%s of the key space)", lineage.ShortID(sh.ID), render.FormatShare(sh.Range.Fraction()))
	m.openDialog(newDialog(m.th, m.keys, reshard.ActionSplit, sh.ID, title, splitChoices()))
	return nil
}

// startMerge opens the merge dialog: the selected shard with one of its
// open neighbours.
func (m *Model) startMerge() tea.Cmd {
	if why := m.actionAllowed(); why != "" {
		m.setStatus(statusWarn, why)
		return nil
	}
	sh := m.graph.Shard(m.selected)
	if !sh.IsOpen() {
		m.setStatus(statusError, fmt.Sprintf("shard %s is %s: only open shards can be merged", lineage.ShortID(sh.ID), sh.State))
		return nil
	}
	choices := mergeChoices(m.graph, sh.ID)
	if len(choices) == 0 {
		m.setStatus(statusError, fmt.Sprintf("shard %s is the only open shard: there is nothing to merge it with", lineage.ShortID(sh.ID)))
		return nil
	}
	if _, err := reshard.SampleShards(m.planInput(), reshard.MergeGoal{Shards: [2]string{sh.ID, choices[0].neighbor}}); err != nil {
		m.setStatus(statusError, m.opts.DescribeError(err))
		return nil
	}
	title := fmt.Sprintf("Merge shard %s (%s of the key space)", lineage.ShortID(sh.ID), render.FormatShare(sh.Range.Fraction()))
	m.openDialog(newDialog(m.th, m.keys, reshard.ActionMerge, sh.ID, title, choices))
	return nil
}

func (m *Model) openDialog(d *dialog) {
	m.actionSeq++
	m.dialog = d
	m.status = status{}
	m.resize()
}

// closeDialog ends the flow (cancelling a sample in progress).
func (m *Model) closeDialog() tea.Cmd {
	if m.actionCancel != nil {
		m.actionCancel()
		m.actionCancel = nil
	}
	m.dialog = nil
	m.actionSeq++
	return m.resume()
}

// resume restarts the reader a sample paused.
func (m *Model) resume() tea.Cmd {
	if !m.resumeReader {
		return nil
	}
	m.resumeReader = false
	if m.paused || m.opts.NoReader || m.sum == nil {
		return nil
	}
	return m.startReader()
}

// dialogKey drives the action flow.
func (m *Model) dialogKey(k tea.KeyMsg) tea.Cmd {
	d := m.dialog
	switch d.stage {
	case stageChoose:
		switch {
		case key.Matches(k, m.keys.Back), key.Matches(k, m.keys.Quit):
			m.closeDialog()
			m.setStatus(statusInfo, "cancelled: nothing was changed")
		case key.Matches(k, m.keys.Up):
			d.cursor = clamp(d.cursor-1, 0, len(d.choices)-1)
		case key.Matches(k, m.keys.Down):
			d.cursor = clamp(d.cursor+1, 0, len(d.choices)-1)
		case key.Matches(k, m.keys.Enter):
			return m.choose(d.choices[d.cursor])
		}
	case stagePercent:
		submit, cancel := d.input.update(k)
		switch {
		case cancel:
			m.closeDialog()
			m.setStatus(statusInfo, "cancelled: nothing was changed")
		case submit:
			p, err := lineage.ParsePercent(strings.TrimSpace(d.input.value))
			if err != nil {
				d.inErr = err.Error()
				return nil
			}
			return m.plan(reshard.SplitGoal{Shard: d.shard, Percent: p}, nil)
		default:
			d.inErr = ""
		}
	case stageBusy:
		if key.Matches(k, m.keys.Back) {
			cmd := m.closeDialog()
			m.setStatus(statusInfo, "cancelled: nothing was changed")
			return cmd
		}
	case stagePreview:
		switch {
		case key.Matches(k, m.keys.Yes):
			return m.execute()
		case key.Matches(k, m.keys.No), key.Matches(k, m.keys.Quit):
			m.closeDialog()
			m.setStatus(statusInfo, "cancelled: nothing was changed")
		default:
			d.scroll(k)
		}
	case stageRunning:
		if key.Matches(k, m.keys.Quit) {
			return m.quit()
		}
	}
	return nil
}

// choose acts on a choice of the first stage.
func (m *Model) choose(c choice) tea.Cmd {
	d := m.dialog
	switch c.kind {
	case "middle":
		return m.plan(reshard.SplitGoal{Shard: d.shard}, nil)
	case "percent":
		d.stage = stagePercent
		d.input = lineInput{prompt: "Percent: ", limit: 40}
		return nil
	case "balanced":
		shards, err := reshard.SampleShards(m.planInput(), reshard.SplitGoal{Shard: d.shard, Median: true})
		if err != nil {
			m.closeDialog()
			m.refused(err)
			return nil
		}
		d.stage = stageBusy
		d.busy = fmt.Sprintf("sampling the recent traffic of shard %s (the live reader waits meanwhile)…", lineage.ShortID(d.shard))
		if m.reading {
			m.stopReader()
			m.resumeReader = true
		}
		return tea.Batch(m.sampleCmd(shards), d.spin.Tick)
	case "merge":
		return m.plan(reshard.MergeGoal{Shards: [2]string{d.shard, c.neighbor}}, nil)
	}
	return nil
}

// plan makes the plan (pure) and shows its preview, or ends the flow with
// the refusal on the status line.
func (m *Model) plan(g reshard.Goal, sample *reshard.Sample) tea.Cmd {
	in := m.planInput()
	in.Sample = sample
	p, err := reshard.NewPlan(in, g)
	if err != nil {
		cmd := m.closeDialog()
		m.refused(err)
		return cmd
	}
	m.dialog.setPlan(p)
	return nil
}

// refused shows the planner's refusal. One for want of shard quota reads
// the quota again with the next listing: shards may be freed, or the quota
// raised, meanwhile.
func (m *Model) refused(err error) {
	text := m.opts.DescribeError(err)
	if errors.Is(err, reshard.ErrShardQuota) {
		m.quotaDue = true
		text += " (read again at the next refresh)"
	}
	m.setStatus(statusError, text)
}

// sampled takes the traffic sample of a balanced split.
func (m *Model) sampled(msg sampleMsg) tea.Cmd {
	if msg.seq != m.actionSeq || m.dialog == nil || m.dialog.stage != stageBusy {
		return nil
	}
	m.actionCancel = nil
	if msg.err != nil {
		cmd := m.closeDialog()
		m.setStatus(statusError, "sampling failed: "+m.opts.DescribeError(msg.err))
		return cmd
	}
	cmd := m.plan(reshard.SplitGoal{Shard: m.dialog.shard, Median: true}, msg.sample)
	return tea.Batch(cmd, m.resume())
}

// execute runs the confirmed plan.
func (m *Model) execute() tea.Cmd {
	d := m.dialog
	d.stage = stageRunning
	d.busy = "sending " + d.plan.Steps[0].String()
	return tea.Batch(m.execCmd(d.plan), d.spin.Tick)
}

// executed ends a run: the new tree on success, the error on the status line.
func (m *Model) executed(msg execDoneMsg) tea.Cmd {
	if msg.seq != m.actionSeq || m.dialog == nil {
		return nil
	}
	m.actionCancel = nil
	d := m.dialog
	m.dialog = nil
	m.actionSeq++
	m.resize()
	if msg.res != nil && msg.res.Graph != nil {
		m.setGraph(msg.res.Graph)
	}
	if msg.err != nil {
		text := m.opts.DescribeError(msg.err)
		var se *reshard.StepError
		if errors.As(msg.err, &se) {
			text = se.Context() + ": " + m.opts.DescribeError(se.Err)
		}
		m.setStatus(statusError, text)
	} else {
		var opened []string
		for _, s := range msg.res.Done {
			opened = append(opened, s.Opened...)
		}
		verb := "split " + lineage.ShortID(d.shard) + " into "
		if d.action == reshard.ActionMerge {
			a := d.plan.Steps[0].Args
			verb = "merged " + lineage.ShortID(a.ShardToMerge.ID) + " and " + lineage.ShortID(a.AdjacentShardToMerge.ID) + " into "
		}
		m.setStatus(statusInfo, verb+andList(opened)+"; the stream is ACTIVE")
		if len(opened) > 0 {
			m.selectShard(opened[0])
		}
	}
	// Describe again for the header (status, open count), and the quota
	// for the next action.
	m.loading, m.quotaDue = true, true
	return m.loadStreamCmd()
}
