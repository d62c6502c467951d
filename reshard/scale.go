package reshard

import (
	"fmt"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Scaling to N shards: by one UpdateShardCount call, or by SplitShard and
// MergeShards calls to the even layout (planLayout) or to a layout
// balanced by traffic (planBalanced).

// updateLimits are the targets UpdateShardCount accepts from open shards:
// half (rounded up) to double, at most MaxShards; from above MaxShards only
// below it.
func updateLimits(open int) (lo, hi int) {
	hi = min(2*open, MaxShards)
	if open > MaxShards {
		hi = MaxShards - 1
	}
	return (open + 1) / 2, hi
}

func checkTarget(in Input, open int, g ScaleGoal) error {
	if g.Target < 1 || g.Target > MaxShards {
		return refuse(ErrBadTarget, fmt.Sprintf("%d is not a shard count a stream can have: the target must be from 1 to %d", g.Target, MaxShards))
	}
	if (g.Even || g.Balanced) && g.method() != MethodSplits {
		return fmt.Errorf("reshard: evening out and balancing need the %s method", MethodSplits)
	}
	switch g.method() {
	case MethodUpdateShardCount:
		lo, hi := updateLimits(open)
		if g.Target == open {
			return nil
		}
		if open > MaxShards && g.Target > hi {
			return refuse(ErrTargetOutOfLimits, fmt.Sprintf("stream %s has %d open shards, more than the %d UpdateShardCount goes to: from there it can only go below %d (%d to %d), not to %d; use --method splits to get there with SplitShard and MergeShards calls", in.Stream.Name, open, MaxShards, MaxShards, lo, hi, g.Target))
		}
		if g.Target > hi {
			return refuse(ErrTargetOutOfLimits, fmt.Sprintf("UpdateShardCount can at most double the open shards of stream %s in one call: from %d it can reach %d to %d, not %d; use --method splits to get there with SplitShard and MergeShards calls", in.Stream.Name, open, lo, hi, g.Target))
		}
		if g.Target < lo {
			return refuse(ErrTargetOutOfLimits, fmt.Sprintf("UpdateShardCount can at most halve the open shards of stream %s in one call: from %d it can reach %d to %d, not %d; use --method splits to get there with SplitShard and MergeShards calls", in.Stream.Name, open, lo, hi, g.Target))
		}
	case MethodSplits:
	default:
		return fmt.Errorf("reshard: unknown scale method %q", g.Method)
	}

	return nil
}

func planScale(in Input, p *Plan, g ScaleGoal, open []*lineage.Shard) error {
	if err := checkTarget(in, len(open), g); err != nil {
		return err
	}
	g.Method = g.method()
	p.Method = g.Method
	if g.Balanced {
		return planBalanced(in, p, g)
	}
	targets, err := evenTargets(g.Target)
	if err != nil {
		return refuse(ErrBadTarget, err.Error())
	}
	m := matchTargets(p.Before, targets)
	even := len(m.missing) == 0 && len(m.extra) == 0
	n := len(open)
	if g.Method == MethodUpdateShardCount {
		if g.Target == n {
			p.Description = fmt.Sprintf("nothing to do: stream %s already has %d open shards", in.Stream.Name, n)
			if !even {
				steps, _, _ := planLayout(p.Before, targets)
				p.Notes = append(p.Notes, fmt.Sprintf("Their hash ranges are not the even layout; --method splits --even would even them out with %d SplitShard and MergeShards calls.", len(steps)))
			}
			return nil
		}
		return planUpdateShardCount(in, p, g)
	}
	if even {
		p.Description = fmt.Sprintf("nothing to do: stream %s already has %d open shards in the even layout", in.Stream.Name, n)
		return nil
	}
	if g.Target == n && !g.Even {
		p.Description = fmt.Sprintf("nothing to do: stream %s already has %d open shards", in.Stream.Name, n)
		if steps, _, err := planLayout(p.Before, targets); err == nil {
			p.Notes = append(p.Notes, fmt.Sprintf("Their hash ranges are not the even layout; --even would even them out with %d SplitShard and MergeShards calls.", len(steps)))
		}
		return nil
	}
	if err := p.planLayout(targets, "in the even layout", "a boundary within "+tolText+" keys of the even layout's counts as in place"); err != nil {
		return err
	}
	if m.near > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s within %s keys of the even layout's and %s where %s (at most %s off, of 2^128 keys): no shard's share of the key space changes at any printed precision.",
			pick(m.near, "1 boundary already lies", fmt.Sprintf("%d boundaries already lie", m.near)), tolText, pick(m.near, "stays", "stay"), pick(m.near, "it is", "they are"), plural(int(m.offset.Big().Int64()), "key")))
	}
	p.Notes = append(p.Notes, p.openRangeNote())
	return nil
}

// planLayout sets the plan's steps to reach the targets (planLayout), its
// description (what: how the layout is chosen) and the note on why that is
// the fewest calls (inPlace: when a boundary counts as in place).
func (p *Plan) planLayout(targets []target, what, inPlace string) error {
	steps, after, err := planLayout(p.Before, targets)
	if err != nil {
		return err
	}
	p.Steps, p.After = steps, after
	splits := p.splits()
	p.Description = fmt.Sprintf("scale from %d to %d open shards %s with %d SplitShard and %d MergeShards calls", len(p.Before), len(after), what, splits, len(steps)-splits)
	p.Notes = append(p.Notes, fmt.Sprintf("%d calls is the fewest possible: each call adds or removes one boundary between hash ranges, and %d boundaries are to be added and %d removed (%s).", len(steps), splits, len(steps)-splits, inPlace))
	return nil
}

// tolText is EvenTolerance for notes.
const tolText = "2^40"

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// splits counts the plan's SplitShard calls.
func (p *Plan) splits() int {
	n := 0
	for _, s := range p.Steps {
		if s.Call == SplitShard {
			n++
		}
	}
	return n
}

// openRangeNote says how a multi-step plan runs and how far the open
// count moves.
func (p *Plan) openRangeNote() string {
	lo, hi := len(p.Before), len(p.Before)
	for _, s := range p.Steps {
		lo, hi = min(lo, s.OpenShards), max(hi, s.OpenShards)
	}
	return fmt.Sprintf("The calls run one at a time; the tool waits for the stream to be ACTIVE after each (seconds to a minute on AWS). The open shard count stays between %d and %d.", lo, hi)
}

// planUpdateShardCount is the one-call plan; After is the even layout the
// service aims for.
func planUpdateShardCount(in Input, p *Plan, g ScaleGoal) error {
	target, err := lineage.EvenLayout(g.Target)
	if err != nil {
		return refuse(ErrBadTarget, err.Error())
	}
	n := len(p.Before)
	st := Step{Call: UpdateShardCount, Args: Args{TargetShardCount: g.Target, ScalingType: UniformScaling}, OpenShards: g.Target}
	keep := make(map[lineage.HashRange]bool, len(target))
	for _, r := range target {
		keep[r] = true
	}
	have := make(map[lineage.HashRange]bool, n)
	for _, s := range p.Before {
		have[s.Range] = true
		if !keep[s.Range] {
			st.Closes = append(st.Closes, s)
		}
	}
	for _, r := range target {
		if !have[r] {
			st.Opens = append(st.Opens, Slot{Range: r})
		}
	}
	p.Steps = append(p.Steps, st)
	p.ExactLayout = false
	p.Description = fmt.Sprintf("scale from %d to %d open shards with one UpdateShardCount call", n, g.Target)
	p.Notes = append(p.Notes,
		"UpdateShardCount makes the service split and merge shards by itself: it creates short-lived intermediate shards, which stay in the lineage as closed shards (and count toward the account's shard quota while open).",
		"Each stream allows 10 UpdateShardCount calls per rolling 24 hours; this call counts against that quota.",
		"The service chooses the final hash ranges: AWS aims for the even layout shown under After, some emulators make uneven ones. The actual layout is listed after the change.",
	)
	return nil
}
