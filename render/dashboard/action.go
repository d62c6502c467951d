package dashboard

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// actionState is the split/merge flow in progress: its dialog, and the
// calls it has under way.
type actionState struct {
	dialog *dialog
	// seq is bumped whenever a flow opens or ends: it tells this flow's
	// messages from an earlier one's.
	seq    int
	cancel context.CancelFunc
	ch     chan tea.Msg // the executor's progress
	// resumeReader: restart the sampling reader when the sample is taken.
	resumeReader bool
}

// running reports whether a plan is being run.
func (a *actionState) running() bool { return a.dialog != nil && a.dialog.stage == stageRunning }

// Messages of the action flow; seq tells the current flow from an earlier
// one.
type (
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

// updateAction takes what the flow's calls report, and the dialog's
// spinner frames.
func (m *Model) updateAction(msg tea.Msg) tea.Cmd {
	a := &m.action
	switch msg := msg.(type) {
	case sampleMsg:
		return m.sampled(msg)
	case execEventMsg:
		if msg.seq != a.seq || !a.running() {
			return nil
		}
		if e := msg.ev; e.Kind == reshard.EventCheck {
			// The executor looks whether the call took effect all the same.
			a.dialog.note(fmt.Sprintf("step %d of %d: no answer came (%s)", e.Step, e.Total, m.opts.DescribeError(e.Err)),
				fmt.Sprintf("waiting for stream %s to be ACTIVE to see whether step %d took effect", m.stream.ref.Name, e.Step))
		} else {
			a.dialog.Update(e)
		}
		return listen(a.ch)
	case execDoneMsg:
		return m.executed(msg)
	case spinner.TickMsg:
		if a.dialog == nil {
			return nil
		}
		_, cmd := a.dialog.Update(msg)
		return cmd
	}
	return nil
}

// dialogKey gives the key to the dialog and does what it asks.
func (m *Model) dialogKey(k tea.KeyMsg) tea.Cmd {
	d := m.action.dialog
	req, cmd := d.Update(k)
	switch req.kind {
	case reqCancel:
		resume := m.closeDialog()
		m.setStatus(statusInfo, "cancelled: nothing was changed")
		return tea.Batch(cmd, resume)
	case reqChoose:
		return m.choose(req.choice)
	case reqPercent:
		return m.plan(reshard.SplitGoal{Shard: d.shard, Percent: req.percent}, nil)
	case reqConfirm:
		return m.execute()
	case reqQuit:
		return m.quit()
	}
	return cmd
}

// planInput is what the planner checks the action against.
func (m *Model) planInput() reshard.Input {
	s := m.stream.sum
	return reshard.Input{Stream: reshard.Stream{Name: s.Name, ARN: s.ARN, Status: s.Status, Mode: s.Mode},
		Graph: m.stream.graph, Quota: m.stream.quota, QuotaErr: m.stream.quotaErr}
}

// actionAllowed says why no action can start now ("" when one can).
func (m *Model) actionAllowed() string {
	switch {
	case m.opts.ReadOnly:
		return "read-only: split and merge are off (started with --read-only)"
	case m.stream.graph == nil || m.stream.sum == nil:
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
	sh := m.stream.graph.Shard(m.selected)
	title := fmt.Sprintf("Split shard %s (%s of the key space)", lineage.ShortID(sh.ID), render.FormatShare(sh.Range.Fraction()))
	m.openDialog(newDialog(m.th, m.keys, reshard.ActionSplit, m.stream.ref.Name, sh.ID, title, splitChoices()))
	return nil
}

// startMerge opens the merge dialog: the selected shard with one of its
// open neighbours.
func (m *Model) startMerge() tea.Cmd {
	if why := m.actionAllowed(); why != "" {
		m.setStatus(statusWarn, why)
		return nil
	}
	sh := m.stream.graph.Shard(m.selected)
	if !sh.IsOpen() {
		m.setStatus(statusError, fmt.Sprintf("shard %s is %s: only open shards can be merged", lineage.ShortID(sh.ID), sh.State))
		return nil
	}
	choices := mergeChoices(m.stream.graph, sh.ID)
	if len(choices) == 0 {
		m.setStatus(statusError, fmt.Sprintf("shard %s is the only open shard: there is nothing to merge it with", lineage.ShortID(sh.ID)))
		return nil
	}
	if _, err := reshard.SampleShards(m.planInput(), reshard.MergeGoal{Shards: [2]string{sh.ID, choices[0].neighbor}}); err != nil {
		m.setStatus(statusError, m.opts.DescribeError(err))
		return nil
	}
	title := fmt.Sprintf("Merge shard %s (%s of the key space)", lineage.ShortID(sh.ID), render.FormatShare(sh.Range.Fraction()))
	m.openDialog(newDialog(m.th, m.keys, reshard.ActionMerge, m.stream.ref.Name, sh.ID, title, choices))
	return nil
}

func (m *Model) openDialog(d *dialog) {
	m.action.seq++
	m.action.dialog = d
	m.status = status{}
	m.resize()
}

// closeDialog ends the flow (cancelling a sample in progress).
func (m *Model) closeDialog() tea.Cmd {
	a := &m.action
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	a.dialog = nil
	a.seq++
	return m.resume()
}

// resume restarts the reader a sample paused.
func (m *Model) resume() tea.Cmd {
	if !m.action.resumeReader {
		return nil
	}
	m.action.resumeReader = false
	if m.reader.paused || m.opts.NoReader || m.stream.sum == nil {
		return nil
	}
	return m.startReader()
}

// choose acts on a choice of the first stage.
func (m *Model) choose(c choice) tea.Cmd {
	d := m.action.dialog
	switch c.kind {
	case "middle":
		return m.plan(reshard.SplitGoal{Shard: d.shard}, nil)
	case "balanced":
		shards, err := reshard.SampleShards(m.planInput(), reshard.SplitGoal{Shard: d.shard, Median: true})
		if err != nil {
			m.closeDialog()
			m.refused(err)
			return nil
		}
		d.setBusy(fmt.Sprintf("sampling the recent traffic of shard %s (the live reader waits meanwhile)…", lineage.ShortID(d.shard)))
		if m.reader.reading {
			m.stopReader()
			m.action.resumeReader = true
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
	m.action.dialog.setPlan(p)
	return nil
}

// refused shows the planner's refusal. One for want of shard quota reads
// the quota again with the next listing: shards may be freed, or the quota
// raised, meanwhile.
func (m *Model) refused(err error) {
	text := m.opts.DescribeError(err)
	if errors.Is(err, reshard.ErrShardQuota) {
		m.stream.quotaDue = true
		text += " (read again at the next refresh)"
	}
	m.setStatus(statusError, text)
}

// sampleCmd samples the shard's recent traffic for a balanced split, with
// the sampler's own pacing (the live reader is paused meanwhile, so the
// two never add up past the shard's five calls a second).
func (m *Model) sampleCmd(shards []*lineage.Shard) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.action.cancel = cancel
	b, ref, seq, o := m.opts.Backend, m.stream.ref, m.action.seq, m.opts.Sample
	return func() tea.Msg {
		defer cancel()
		s, err := b.Sample(ctx, ref, shards, o)
		return sampleMsg{seq: seq, sample: s, err: err}
	}
}

// sampled takes the traffic sample of a balanced split.
func (m *Model) sampled(msg sampleMsg) tea.Cmd {
	d := m.action.dialog
	if msg.seq != m.action.seq || d == nil || d.stage != stageBusy {
		return nil
	}
	m.action.cancel = nil
	if msg.err != nil {
		cmd := m.closeDialog()
		m.setStatus(statusError, "sampling failed: "+m.opts.DescribeError(msg.err))
		return cmd
	}
	cmd := m.plan(reshard.SplitGoal{Shard: d.shard, Median: true}, msg.sample)
	return tea.Batch(cmd, m.resume())
}

// execute runs the confirmed plan.
func (m *Model) execute() tea.Cmd {
	d := m.action.dialog
	d.setRunning("sending " + d.plan.Steps[0].String())
	return tea.Batch(m.execCmd(d.plan), d.spin.Tick)
}

// execCmd runs the plan; its progress events come as messages.
func (m *Model) execCmd(p *reshard.Plan) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.action.cancel = cancel
	seq := m.action.seq
	ch := make(chan tea.Msg, 256)
	m.action.ch = ch
	b, ref := m.opts.Backend, m.stream.ref
	o := ReshardOptions{Wait: m.opts.Wait, OnEvent: func(e reshard.Event) {
		select {
		case ch <- execEventMsg{seq: seq, ev: e}:
		default:
		}
	}}
	run := func() tea.Msg {
		defer cancel()
		res, err := b.Reshard(ctx, ref, p, o)
		close(ch)
		return execDoneMsg{seq: seq, res: res, err: err}
	}
	return tea.Batch(run, listen(ch))
}

// executed ends a run: done (with a warning when the last step's answer
// was lost but the listing shows it done, Result.Lost), or failed.
func (m *Model) executed(msg execDoneMsg) tea.Cmd {
	if msg.seq != m.action.seq || m.action.dialog == nil {
		return nil
	}
	m.action.cancel = nil
	var lost *reshard.StepError
	if msg.err == nil && msg.res != nil {
		lost = msg.res.Lost
	}
	return m.finish(msg.res, msg.err, lost)
}

// finish closes the dialog and says how the run ended: the new tree on
// success (with a warning when the answer to the call was lost but the
// listing shows it done), the error on the status line.
func (m *Model) finish(res *reshard.Result, err error, lost *reshard.StepError) tea.Cmd {
	d := m.action.dialog
	m.action.dialog = nil
	m.action.seq++
	m.resize()
	if res != nil && res.Graph != nil {
		m.setGraph(res.Graph)
	}
	if err != nil {
		msg := m.opts.DescribeError(err)
		var se *reshard.StepError
		if errors.As(err, &se) {
			msg = se.Context() + ": " + m.opts.DescribeError(se.Err)
		}
		m.setStatus(statusError, msg)
	} else {
		var opened []string
		for _, s := range res.Done {
			opened = append(opened, s.Opened...)
		}
		verb := "split " + lineage.ShortID(d.shard) + " into "
		if d.action == reshard.ActionMerge {
			a := d.plan.Steps[0].Args
			verb = "merged " + lineage.ShortID(a.ShardToMerge.ID) + " and " + lineage.ShortID(a.AdjacentShardToMerge.ID) + " into "
		}
		short := make([]string, len(opened))
		for i, id := range opened {
			short[i] = lineage.ShortID(id)
		}
		done := verb + text.List(short, 0) + "; the stream is ACTIVE"
		if lost == nil {
			m.setStatus(statusInfo, done)
		} else {
			call := d.plan.Steps[lost.Step-1].Call
			m.setStatus(statusWarn, fmt.Sprintf("%s (%s took effect although no answer came: %s)", done, call, m.opts.DescribeError(lost.Err)))
		}
		if len(opened) > 0 {
			m.selectShard(opened[0])
		}
	}
	// Describe again for the header (status, open count), and the quota
	// for the next action.
	m.stream.loading, m.stream.quotaDue = true, true
	return m.loadStreamCmd()
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
