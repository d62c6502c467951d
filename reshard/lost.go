package reshard

import (
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// tookEffect reports whether a step the executor saw fail before it was
// sent (se.Sent false) took effect all the same: its call reached the
// service and only the answer was lost (a dropped connection, a timeout),
// and the SDK's retry of it was then refused (the stream is UPDATING, the
// shard is closed) or failed too. The executor cannot tell; a listing can.
// g must be taken once the stream is ACTIVE again.
//
// The step took effect when the open shards of g have the ranges the plan
// expects after it (for UpdateShardCount, whose ranges the service picks:
// the planned count of shards, covering the key space, and not the layout
// before the step). Then the step is added to res.Done, naming the shards
// it closed and opened, and res takes g as its layout; otherwise res is
// left alone.
func tookEffect(p *Plan, res *Result, se *StepError, g *lineage.Graph) bool {
	i := se.Step - 1
	if se.Sent || g == nil || i < 0 || i >= len(p.Steps) || len(res.Done) != i {
		return false
	}
	before, err := p.LayoutAfter(i - 1)
	if err != nil {
		return false
	}
	want, err := p.LayoutAfter(i)
	if err != nil {
		return false
	}
	now := layoutOf(g)
	st := p.Steps[i]
	counted := st.Call == UpdateShardCount && len(now) == st.Args.TargetShardCount &&
		!sameLayout(now, before, false) && lineage.CheckCoverage(ranges(now)) == nil
	if !sameLayout(now, want, false) && !counted {
		return false
	}
	d := DoneStep{Step: se.Step, Call: st.Call, Args: st.Args}
	d.Closed, d.Opened = diffSlots(before, now, g)
	res.Done = append(res.Done, d)
	res.Graph, res.Layout = g, now
	return true
}

// diffSlots names the shards a step closed and opened: the ranges of before
// no longer open (a shard the plan made has no id there: the graph's
// closed shard of that range names it), and the open ranges that are new.
func diffSlots(before, now []Slot, g *lineage.Graph) (closed, opened []string) {
	open := map[lineage.HashRange]bool{}
	for _, s := range now {
		open[s.Range] = true
	}
	was := map[lineage.HashRange]bool{}
	closed, opened = []string{}, []string{}
	for _, s := range before {
		was[s.Range] = true
		if open[s.Range] {
			continue
		}
		id := s.ID
		for _, sh := range g.Shards() {
			if id == "" && !sh.IsOpen() && !sh.IsTrimmed() && sh.Range == s.Range {
				id = sh.ID
			}
		}
		if id != "" {
			closed = append(closed, id)
		}
	}
	for _, s := range now {
		if !was[s.Range] {
			opened = append(opened, s.ID)
		}
	}
	return closed, opened
}
