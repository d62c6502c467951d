package dashboard

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Messages the commands send back to Update.
type (
	streamsMsg struct {
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
		// quotaRead: quota and quotaErr are a fresh DescribeLimits.
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
	refreshTickMsg struct{}
	figureTickMsg  struct{}
	// Sampling reader messages; run tells the current reader from an
	// earlier one.
	recordsMsg struct {
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
	sampleMsg struct {
		seq    int
		sample *reshard.Sample
		err    error
	}
	execEventMsg struct {
		seq int
		ev  reshard.Event
	}
	execDoneMsg struct {
		seq int
		res *reshard.Result
		err error
	}
)

// listStreamsCmd lists the stream names.
func (m *Model) listStreamsCmd() tea.Cmd {
	ctx, list, timeout := m.ctx, m.opts.ListStreams, m.opts.CallTimeout
	api := m.opts.API
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if list != nil {
			names, err := list(ctx)
			return streamsMsg{names: names, err: err}
		}
		names, err := pageStreams(ctx, api)
		return streamsMsg{names: names, err: err}
	}
}

// pageStreams pages ListStreams by NextToken (cmd passes its own lister,
// which also handles backends without tokens).
func pageStreams(ctx context.Context, api kinesis.ListStreamsAPIClient) ([]string, error) {
	var names []string
	in := &kinesis.ListStreamsInput{}
	for range 10000 {
		out, err := api.ListStreams(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, s := range out.StreamSummaries {
			names = append(names, aws.ToString(s.StreamName))
		}
		if len(out.StreamSummaries) == 0 {
			names = append(names, out.StreamNames...)
		}
		if out.NextToken == nil || *out.NextToken == "" {
			break
		}
		in = &kinesis.ListStreamsInput{NextToken: out.NextToken}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// loadStreamCmd describes the stream and lists its shards, and reads the
// account's shard quota for the split preview when it is due (when the
// stream is opened and after each action: DescribeLimits allows one call
// per second per account, so not on every refresh).
func (m *Model) loadStreamCmd() tea.Cmd {
	ctx, api, ref, gen, timeout := m.ctx, m.opts.API, m.ref, m.gen, m.opts.CallTimeout
	withQuota := m.quotaDue && !m.opts.ReadOnly
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		sum, err := kstream.Describe(ctx, api, ref)
		if err != nil {
			return streamMsg{gen: gen, err: err}
		}
		g, err := lineage.Load(ctx, api, lineage.ListOptions{StreamName: ref.Name, StreamARN: ref.ARN})
		msg := streamMsg{gen: gen, sum: sum, graph: g, err: err}
		if err == nil && withQuota {
			msg.quotaRead = true
			msg.quota, msg.quotaErr = reshard.LoadQuota(ctx, api)
		}
		return msg
	}
}

// readLeasesCmd reads the lease table for the overlay.
func (m *Model) readLeasesCmd(g *lineage.Graph, sum *kstream.Summary) tea.Cmd {
	ctx, read, gen, timeout := m.ctx, m.opts.Leases, m.gen, m.opts.CallTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		marks, err := read(ctx, g, sum)
		return leasesMsg{gen: gen, marks: marks, err: err}
	}
}

// readCheckpointCmd reads the checkpoint file without locking it.
func (m *Model) readCheckpointCmd() tea.Cmd {
	path, read, gen := m.opts.Checkpoint, m.opts.ReadCheckpoint, m.gen
	return func() tea.Msg {
		id, pos, err := read(path)
		return checkpointMsg{gen: gen, id: id, pos: pos, err: err}
	}
}

func refreshTick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return refreshTickMsg{} })
}

func figureTick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return figureTickMsg{} })
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

// startReader starts the sampling reader: a tail from the tip of every open
// shard with tail's own pacing, its records and polls forwarded as
// messages. A full channel drops what does not fit: the reader never waits
// for the screen.
func (m *Model) startReader() tea.Cmd {
	m.stopReader()
	m.run++
	run := m.run
	ctx, cancel := context.WithCancel(m.ctx)
	m.readerCancel = cancel
	m.reading = true
	m.figs.reset(m.now())
	ch := make(chan tea.Msg, 4096)
	m.readerCh = ch
	opts := tail.Options{
		StreamName:   m.ref.Name,
		StreamARN:    m.ref.ARN,
		Start:        tail.StartLatest,
		PollInterval: m.opts.PollInterval,
		OnPoll: func(s tail.PollStats) {
			select {
			case ch <- pollMsg{run: run, stats: s}:
			default:
			}
		},
	}
	deliver := func(batch []tail.Record) error {
		select {
		case ch <- recordsMsg{run: run, recs: slices.Clone(batch)}:
		default:
		}
		return nil
	}
	api := m.opts.API
	runCmd := func() tea.Msg {
		_, err := tail.New(api, tail.NewMemoryStore(nil), opts, deliver).Run(ctx)
		close(ch)
		if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
			err = nil
		}
		return readerDoneMsg{run: run, err: err}
	}
	return tea.Batch(runCmd, listen(ch))
}

// stopReader cancels the sampling reader, if one runs.
func (m *Model) stopReader() {
	if m.readerCancel != nil {
		m.readerCancel()
		m.readerCancel = nil
	}
	m.reading = false
}

// sampleCmd samples the shard's recent traffic for a balanced split, with
// the sampler's own pacing (the live reader is paused meanwhile, so the
// two never add up past the shard's five calls a second).
func (m *Model) sampleCmd(shards []*lineage.Shard) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.actionCancel = cancel
	api, ref, seq := m.opts.API, m.ref, m.actionSeq
	o := m.opts.Sample
	return func() tea.Msg {
		defer cancel()
		s, err := reshard.SampleTraffic(ctx, api, ref, shards, o)
		return sampleMsg{seq: seq, sample: s, err: err}
	}
}

// execCmd runs the plan; its progress events come as messages.
func (m *Model) execCmd(p *reshard.Plan) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.actionCancel = cancel
	seq := m.actionSeq
	ch := make(chan tea.Msg, 256)
	m.execCh = ch
	x := &reshard.Executor{API: m.opts.API, Stream: m.ref, Wait: m.opts.Wait,
		OnEvent: func(e reshard.Event) {
			select {
			case ch <- execEventMsg{seq: seq, ev: e}:
			default:
			}
		}}
	run := func() tea.Msg {
		defer cancel()
		res, err := x.Run(ctx, p)
		close(ch)
		return execDoneMsg{seq: seq, res: res, err: err}
	}
	return tea.Batch(run, listen(ch))
}
