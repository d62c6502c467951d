package dashboard

import (
	"context"
	"errors"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// readerState is the sampling reader (Backend.Read) and the live figures
// it feeds.
type readerState struct {
	figs *figures
	snap map[string]shardSnap // the figures as of the last figure tick
	// run is bumped at every start: it tells this reader's messages from
	// an earlier one's.
	run     int
	reading bool
	paused  bool
	cancel  context.CancelFunc
	ch      chan tea.Msg
}

// Messages of the sampling reader; run tells the current reader from an
// earlier one.
type (
	figureTickMsg struct{}
	recordsMsg    struct {
		run  int
		recs []tail.Record
	}
	pollMsg struct {
		run   int
		stats tail.PollStats
	}
	readerDoneMsg struct {
		run int
		err error
	}
)

// updateReader takes the reader's reports and the figure timer's tick.
func (m *Model) updateReader(msg tea.Msg) tea.Cmd {
	r := &m.reader
	switch msg := msg.(type) {
	case figureTickMsg:
		m.computeFigures()
		return figureTick(m.opts.FigureInterval)
	case recordsMsg:
		if !m.fromReader(msg.run) {
			return nil
		}
		m.records.add(msg.recs)
		return m.listenReader()
	case pollMsg:
		if !m.fromReader(msg.run) {
			return nil
		}
		if r.figs.since.IsZero() {
			r.figs.since = m.now()
		}
		r.figs.add(msg.stats, m.now())
		return m.listenReader()
	case readerDoneMsg:
		if msg.run != r.run {
			return nil
		}
		r.reading = false
		r.cancel = nil
		if msg.err != nil {
			m.setStatus(statusError, "the sampling reader stopped: "+m.opts.DescribeError(msg.err)+" (p starts it again)")
			r.paused = true
		}
	}
	return nil
}

func figureTick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return figureTickMsg{} })
}

// fromReader reports whether a reader message comes from the current
// reader. With NoReader the caller feeds them (run 0) while not paused.
func (m *Model) fromReader(run int) bool {
	if m.opts.NoReader {
		return run == m.reader.run && !m.reader.paused
	}
	return run == m.reader.run && m.reader.reading
}

// listenReader waits for the reader's next message.
func (m *Model) listenReader() tea.Cmd {
	if m.reader.ch == nil {
		return nil
	}
	return listen(m.reader.ch)
}

// startReader starts the sampling reader from the tip of every open shard,
// its records and polls forwarded as messages. A full channel drops what
// does not fit: the reader never waits for the screen.
func (m *Model) startReader() tea.Cmd {
	m.stopReader()
	r := &m.reader
	r.run++
	run := r.run
	ctx, cancel := context.WithCancel(m.ctx)
	r.cancel, r.reading = cancel, true
	r.figs.reset(m.now())
	ch := make(chan tea.Msg, 4096)
	r.ch = ch
	send := func(msg tea.Msg) {
		select {
		case ch <- msg:
		default:
		}
	}
	o := ReadOptions{
		PollInterval: m.opts.PollInterval,
		OnPoll:       func(s tail.PollStats) { send(pollMsg{run: run, stats: s}) },
		OnRecords:    func(batch []tail.Record) { send(recordsMsg{run: run, recs: slices.Clone(batch)}) },
	}
	b, ref := m.opts.Backend, m.stream.ref
	read := func() tea.Msg {
		err := b.Read(ctx, ref, o)
		close(ch)
		if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
			err = nil
		}
		return readerDoneMsg{run: run, err: err}
	}
	return tea.Batch(read, listen(ch))
}

// stopReader cancels the sampling reader, if one runs.
func (m *Model) stopReader() {
	if m.reader.cancel != nil {
		m.reader.cancel()
		m.reader.cancel = nil
	}
	m.reader.reading = false
}

// togglePause stops or restarts the sampling reader. Paused, the dashboard
// makes no GetRecords call at all; a restarted reader starts at the tip.
func (m *Model) togglePause() tea.Cmd {
	if m.action.dialog != nil || m.stream.sum == nil {
		return nil
	}
	if m.reader.reading {
		m.stopReader()
		m.reader.paused = true
		m.setStatus(statusInfo, "paused: the sampling reader reads nothing until p is pressed again")
		return nil
	}
	m.reader.paused = false
	if m.opts.NoReader {
		return nil
	}
	m.setStatus(statusInfo, "sampling again from the tip")
	return m.startReader()
}

// computeFigures snapshots the live figures (on the figure timer).
func (m *Model) computeFigures() {
	if m.stream.graph == nil {
		return
	}
	r := &m.reader
	now := m.now()
	snap := make(map[string]shardSnap, len(r.figs.shards))
	for id := range r.figs.shards {
		recs, bytes, ok := r.figs.rate(id, now)
		beh, _ := r.figs.behind(id)
		snap[id] = shardSnap{recs: recs, bytes: bytes, behind: beh, ok: ok}
	}
	r.snap = snap
}
