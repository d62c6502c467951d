package reshard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// A previewed plan, run later. A dry run's -o json document is the plan
// it showed; given back (--plan FILE), the real run executes exactly that
// plan instead of planning again from a new listing and a new sample, so
// what runs is what was previewed. It is refused, changing nothing, when
// it is not a dry run's plan, when it does not do what the command line
// asks, or when the stream is no longer the one it was made from: another
// stream (or the same name deleted and re-created), or open shards other
// than those it starts from.

// ErrPlanFile: the plan file cannot be used.
var ErrPlanFile = errors.New("plan file refused")

// planDoc is the -o json document of split, merge and scale.
type planDoc struct {
	*Plan
	DryRun *bool           `json:"dryRun"`
	Result json.RawMessage `json:"result"`
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Slot) UnmarshalJSON(b []byte) error {
	var j slotJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.HashKeyRange.Start.Cmp(j.HashKeyRange.End) > 0 {
		return fmt.Errorf("hash key range %s..%s ends before it starts", j.HashKeyRange.Start, j.HashKeyRange.End)
	}
	*s = Slot{ID: j.ShardID, Range: j.HashKeyRange, Traffic: j.TrafficFraction}
	return nil
}

// ReadPlan reads a dry run's plan document and checks that it holds
// together: its steps, replayed on its layout before, end on its layout
// after. name is the file, for messages.
func ReadPlan(name string, b []byte) (*Plan, error) {
	bad := func(why string) error {
		return refuse(ErrPlanFile, fmt.Sprintf("%s is not a plan a dry run wrote (%s): write one with --dry-run -o json", name, why))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d planDoc
	if err := dec.Decode(&d); err != nil {
		return nil, bad(fmt.Sprintf("not JSON of a plan: %v", err))
	}
	p := d.Plan
	switch {
	case p == nil || p.Stream == "" || p.Action == "":
		return nil, bad("no stream or action")
	case d.DryRun == nil:
		return nil, bad(`no "dryRun"`)
	case !*d.DryRun || len(d.Result) > 0 && string(d.Result) != "null":
		return nil, refuse(ErrPlanFile, fmt.Sprintf("%s is the record of a run that was sent, not a dry run's plan: preview again with --dry-run -o json", name))
	case p.Action != ActionSplit && p.Action != ActionMerge && p.Action != ActionScale:
		return nil, bad(fmt.Sprintf("unknown action %q", p.Action))
	case len(p.Before) == 0:
		return nil, bad("no layout before")
	}
	for _, s := range p.Before {
		if s.ID == "" {
			return nil, bad("a shard of the layout before has no id")
		}
	}
	for i, s := range p.Steps {
		if s.Call != SplitShard && s.Call != MergeShards && s.Call != UpdateShardCount {
			return nil, bad(fmt.Sprintf("step %d calls %q", i+1, s.Call))
		}
	}
	if !p.ExactLayout {
		return p, nil // UpdateShardCount: the service picks the layout
	}
	after, err := p.LayoutAfter(len(p.Steps) - 1)
	if err != nil {
		return nil, bad(err.Error())
	}
	if !sameLayout(after, p.After, true) {
		return nil, bad("its steps do not end on its layout after")
	}
	return p, nil
}

// CheckGoal refuses a plan that does not do what g asks: another command,
// another shard, another target.
func (p *Plan) CheckGoal(name string, g Goal) error {
	differs := func(what string) error {
		return refuse(ErrPlanFile, fmt.Sprintf("%s %s than this command line asks for: run the command the plan was previewed with, or preview again", name, what))
	}
	if p.Action != g.action() {
		return differs(fmt.Sprintf("is a plan of %s, not of %s, and so does other things", p.Action, g.action()))
	}
	switch g := g.(type) {
	case SplitGoal:
		if len(p.Steps) != 1 || p.Steps[0].Args.ShardToSplit == nil || p.Steps[0].Args.ShardToSplit.ID != g.Shard {
			return differs("splits another shard")
		}
		if g.At != nil && (p.Steps[0].Args.NewStartingHashKey == nil || *p.Steps[0].Args.NewStartingHashKey != *g.At) {
			return differs("splits at another hash key")
		}
	case MergeGoal:
		if len(p.Steps) != 1 || p.Steps[0].Args.ShardToMerge == nil || p.Steps[0].Args.AdjacentShardToMerge == nil {
			return differs("merges other shards")
		}
		got := []string{p.Steps[0].Args.ShardToMerge.ID, p.Steps[0].Args.AdjacentShardToMerge.ID}
		want := []string{g.Shards[0], g.Shards[1]}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return differs("merges other shards")
		}
	case ScaleGoal:
		if len(p.After) != g.Target {
			return differs(fmt.Sprintf("ends with %d open shards, not %d,", len(p.After), g.Target))
		}
	}
	return nil
}

// CheckStillApplies refuses a plan made from another stream or from open
// shards other than in's: the stream was resharded (or re-created) since
// the preview, and the plan would do something nobody saw.
func (p *Plan) CheckStillApplies(name string, in Input) error {
	open, err := checkInput(in)
	if err != nil {
		return err
	}
	switch {
	case p.Stream != in.Stream.Name:
		return refuse(ErrPlanFile, fmt.Sprintf("%s is a plan for stream %s, not %s", name, p.Stream, in.Stream.Name))
	case p.StreamARN != "" && in.Stream.ARN != "" && p.StreamARN != in.Stream.ARN:
		return refuse(ErrPlanFile, fmt.Sprintf("%s was made for %s, and stream %s is now %s (deleted and created again?): preview again", name, p.StreamARN, in.Stream.Name, in.Stream.ARN))
	}
	now := make([]Slot, len(open))
	for i, s := range open {
		now[i] = Slot{ID: s.ID, Range: s.Range}
	}
	if !sameLayout(now, p.Before, true) {
		return refuse(ErrLayoutChanged, fmt.Sprintf("the open shards of stream %s are no longer those %s was made from (%s then, %s now): the stream was resharded since the preview; preview again",
			in.Stream.Name, name, layoutIDs(p.Before), layoutIDs(now)))
	}
	return nil
}

// layoutIDs names a layout's shards briefly: "shardId-…0 … shardId-…5 (4)".
func layoutIDs(l []Slot) string {
	names := make([]string, len(l))
	for i, s := range l {
		names[i] = lineage.ShortID(s.ID)
	}
	if len(names) > 6 {
		names = append(names[:3], "…", names[len(names)-1])
	}
	return fmt.Sprintf("%d open: %v", len(l), names)
}
