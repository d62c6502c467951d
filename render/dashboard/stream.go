package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// streamState is the open stream as last listed, with what is read along
// with each listing: the checkpoint file's positions and the account's
// shard quota.
type streamState struct {
	ref      kstream.Ref
	gen      int // bumped whenever another stream is opened
	sum      *kstream.Summary
	graph    *lineage.Graph
	loadedAt time.Time
	loading  bool
	checkpt  map[string]tail.Position
	// lag is the LAG column's figures as last read (nil: not yet), and
	// lagLoading says a read is under way (one at a time: measuring every
	// shard can take longer than a refresh).
	lag        map[string]consumer.ShardLag
	lagLoading bool
	// The account's shard quota for the planner, read with the listing
	// when quotaDue.
	quota    *reshard.Quota
	quotaErr error
	quotaDue bool
}

// Messages of the listings.
type (
	refreshTickMsg struct{}
	streamsMsg     struct {
		names []string
		err   error
	}
	// streamMsg is one listing of the open stream; gen tells a listing of
	// the stream shown now from one of a stream left since.
	streamMsg struct {
		gen   int
		sum   *kstream.Summary
		graph *lineage.Graph
		err   error
		// quotaRead: quota and quotaErr are a fresh read of the quota.
		quotaRead bool
		quota     *reshard.Quota
		quotaErr  error
	}
	checkpointMsg struct {
		gen int
		id  tail.StreamIdentity
		pos map[string]tail.Position
		err error
	}
	leasesMsg struct {
		gen   int
		marks map[string]*render.LeaseMark
		err   error
	}
	lagMsg struct {
		gen    int
		report *consumer.Report
		err    error
	}
)

// updateStream takes the timer's tick and what the listings read.
func (m *Model) updateStream(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case refreshTickMsg:
		cmds := []tea.Cmd{refreshTick(m.opts.RefreshInterval)}
		switch {
		case m.screen == screenPicker:
			cmds = append(cmds, m.listStreamsCmd())
		case !m.stream.loading && !m.action.running():
			m.stream.loading = true
			cmds = append(cmds, m.loadStreamCmd())
		}
		return tea.Batch(cmds...)
	case streamsMsg:
		if msg.err != nil {
			m.setStatus(statusError, "cannot list streams: "+m.opts.DescribeError(msg.err))
			m.status.refresh = true
			return nil
		}
		if m.status.refresh {
			m.status = status{}
		}
		m.picker.setNames(msg.names)
	case streamMsg:
		return m.streamLoaded(msg)
	case checkpointMsg:
		m.checkpointRead(msg)
	case leasesMsg:
		m.leasesRead(msg)
	case lagMsg:
		m.lagRead(msg)
	}
	return nil
}

func refreshTick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return refreshTickMsg{} })
}

// refreshNow lists the stream now (r). It also reads the shard quota
// again; the timer's refreshes do not, as the service allows one
// DescribeLimits call a second per account.
func (m *Model) refreshNow() tea.Cmd {
	if m.stream.loading {
		return nil
	}
	m.stream.loading, m.stream.quotaDue = true, true
	return m.loadStreamCmd()
}

// listStreamsCmd lists the stream names for the picker.
func (m *Model) listStreamsCmd() tea.Cmd {
	ctx, b, timeout := m.ctx, m.opts.Backend, m.opts.CallTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		names, err := b.ListStreams(ctx)
		return streamsMsg{names: names, err: err}
	}
}

// loadStreamCmd describes the stream and lists its shards, and reads the
// account's shard quota for the split preview when it is due (when the
// stream is opened and after each action: DescribeLimits allows one call
// per second per account, so not on every refresh).
func (m *Model) loadStreamCmd() tea.Cmd {
	ctx, b, ref, gen, timeout := m.ctx, m.opts.Backend, m.stream.ref, m.stream.gen, m.opts.CallTimeout
	withQuota := m.stream.quotaDue && !m.opts.ReadOnly
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		sum, err := b.Describe(ctx, ref)
		if err != nil {
			return streamMsg{gen: gen, err: err}
		}
		g, err := b.ListShards(ctx, ref)
		msg := streamMsg{gen: gen, sum: sum, graph: g, err: err}
		if err == nil && withQuota {
			msg.quotaRead = true
			msg.quota, msg.quotaErr = b.Quota(ctx)
		}
		return msg
	}
}

// readLeasesCmd reads the lease table for the overlay.
func (m *Model) readLeasesCmd(g *lineage.Graph, sum *kstream.Summary) tea.Cmd {
	ctx, b, gen, timeout := m.ctx, m.opts.Backend, m.stream.gen, m.opts.CallTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		marks, err := b.Leases(ctx, g, sum)
		return leasesMsg{gen: gen, marks: marks, err: err}
	}
}

// readLagCmd reads the consumer's positions and, unless the reader is
// paused, measures how far behind each shard is.
func (m *Model) readLagCmd(g *lineage.Graph, sum *kstream.Summary) tea.Cmd {
	ctx, b, ref, gen, timeout, measure := m.ctx, m.opts.Backend, m.stream.ref, m.stream.gen, m.opts.CallTimeout, !m.reader.paused
	m.stream.lagLoading = true
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r, err := b.Lag(ctx, ref, g, sum, measure)
		return lagMsg{gen: gen, report: r, err: err}
	}
}

// readCheckpointCmd reads the checkpoint file without locking it.
func (m *Model) readCheckpointCmd() tea.Cmd {
	path, b, gen := m.opts.Checkpoint, m.opts.Backend, m.stream.gen
	return func() tea.Msg {
		id, pos, err := b.ReadCheckpoint(path)
		return checkpointMsg{gen: gen, id: id, pos: pos, err: err}
	}
}

// open shows a stream picked in the picker.
func (m *Model) open(ref kstream.Ref) tea.Cmd {
	m.screen, m.fromPicker = screenStream, true
	m.stream = streamState{ref: ref, gen: m.stream.gen + 1, loadedAt: m.stream.loadedAt, loading: true, quotaDue: true}
	m.selected = ""
	m.tree = newTreePane(m.th, m.keys)
	m.table = newShardTable(m.th, m.keys)
	m.records.clear()
	m.reader.snap = map[string]shardSnap{}
	m.filter.value, m.focus = "", paneTree
	m.records.setFilter("")
	m.resize()
	m.status = status{}
	return m.loadStreamCmd()
}

func (m *Model) backToPicker() tea.Cmd {
	m.stopReader()
	m.stream.gen++
	m.screen, m.stream.sum, m.stream.graph, m.stream.loading = screenPicker, nil, nil, false
	m.filter.value = ""
	m.picker.setFilter("")
	m.status = status{}
	return m.listStreamsCmd()
}

// streamLoaded takes a new listing.
func (m *Model) streamLoaded(msg streamMsg) tea.Cmd {
	s := &m.stream
	if msg.gen != s.gen || m.screen != screenStream {
		return nil
	}
	s.loading = false
	if msg.err != nil {
		text := "cannot list stream " + s.ref.Name + ": " + m.opts.DescribeError(msg.err)
		if s.graph == nil && m.fromPicker {
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
	first := s.graph == nil
	s.sum, s.loadedAt = msg.sum, m.now()
	if msg.quotaRead {
		s.quota, s.quotaErr, s.quotaDue = msg.quota, msg.quotaErr, false
	}
	m.setGraph(msg.graph)
	var cmds []tea.Cmd
	if m.opts.Checkpoint != "" {
		cmds = append(cmds, m.readCheckpointCmd())
	}
	if m.opts.LeaseOverlay {
		cmds = append(cmds, m.readLeasesCmd(msg.graph, msg.sum))
	}
	if m.opts.Lag && !s.lagLoading {
		cmds = append(cmds, m.readLagCmd(msg.graph, msg.sum))
	}
	if first {
		switch {
		case m.opts.NoReader:
		case msg.sum.Status == "DELETING":
		case !m.reader.paused:
			cmds = append(cmds, m.startReader())
		}
	}
	return tea.Batch(cmds...)
}

// setGraph shows a listing, keeping the selection (or, when the selected
// shard is gone, selecting the first open shard).
func (m *Model) setGraph(g *lineage.Graph) {
	m.stream.graph = g
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
	s := &m.stream
	if msg.gen != s.gen || s.sum == nil {
		return
	}
	if msg.err != nil {
		s.checkpt = map[string]tail.Position{}
		m.setStatus(statusWarn, "checkpoint: "+m.opts.DescribeError(msg.err))
		return
	}
	if msg.id.ARN != s.sum.ARN || !msg.id.Created.Equal(s.sum.Created) {
		s.checkpt = map[string]tail.Position{}
		m.setStatus(statusWarn, fmt.Sprintf("checkpoint file %s is for %s, not for this stream: its positions are not shown", m.opts.Checkpoint, msg.id.ARN))
		return
	}
	s.checkpt = msg.pos
}

// leasesRead lays a lease table over the tree and says on the status line
// how many children are blocked.
func (m *Model) leasesRead(msg leasesMsg) {
	if msg.gen != m.stream.gen {
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

// lagRead takes the LAG column's figures; a failure keeps the last ones
// and says so on the status line.
func (m *Model) lagRead(msg lagMsg) {
	if msg.gen != m.stream.gen {
		return
	}
	m.stream.lagLoading = false
	if msg.err != nil {
		m.setStatus(statusWarn, "lag: "+m.opts.DescribeError(msg.err))
		m.status.refresh = true
		return
	}
	lag := make(map[string]consumer.ShardLag, len(msg.report.Shards))
	for _, s := range msg.report.Shards {
		lag[s.ShardID] = s
	}
	m.stream.lag = lag
	if failed := msg.report.Failed(); len(failed) > 0 {
		m.setStatus(statusWarn, fmt.Sprintf("lag: %d shard(s) not measured: %s %s", len(failed), lineage.ShortID(failed[0].ShardID), failed[0].Error))
		m.status.refresh = true
	}
}
