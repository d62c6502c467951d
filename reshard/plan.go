package reshard

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Call is a reshard operation of the Kinesis API.
type Call string

// The three calls a plan is made of.
const (
	SplitShard       Call = "SplitShard"
	MergeShards      Call = "MergeShards"
	UpdateShardCount Call = "UpdateShardCount"
)

// Action is what the user asked for.
type Action string

// Actions, one per command.
const (
	ActionSplit Action = "split"
	ActionMerge Action = "merge"
	ActionScale Action = "scale"
)

// Method is how scale reaches its target.
type Method string

// Methods of scale.
const (
	// MethodUpdateShardCount: one UpdateShardCount call (half to double the
	// open shards; the service picks the intermediate steps and the ranges).
	MethodUpdateShardCount Method = "update-shard-count"
	// MethodSplits: SplitShard and MergeShards calls chosen by the planner,
	// ending exactly on the even layout.
	MethodSplits Method = "splits"
)

const (
	// MaxShards is the most shards UpdateShardCount (and EvenLayout) goes to.
	MaxShards = 10000
	// MinMedianSample is the fewest usable sampled records a split at their
	// median accepts: below it the median says little about the traffic
	// (with 100 records each child's share is 50% ± about 5%).
	MinMedianSample = 100
	// UniformScaling is UpdateShardCount's only ScalingType.
	UniformScaling = "UNIFORM_SCALING"
)

// Slot is one open shard of a layout: one that exists (ID set) or one the
// plan creates (ID "": the service assigns ids, so later steps name such a
// shard by its range and the executor finds its id in a fresh listing).
type Slot struct {
	ID    string
	Range lineage.HashRange
	// Traffic is the share of the sampled traffic the range took, when the
	// plan was made with a sample that covers it; nil otherwise.
	Traffic *float64
}

// IsNew reports whether the plan creates this shard.
func (s Slot) IsNew() bool { return s.ID == "" }

// Name is the shard id, or for a shard the plan creates "the new shard
// START..END".
func (s Slot) Name() string {
	if s.ID != "" {
		return s.ID
	}
	return "the new shard " + s.Range.String()
}

type slotJSON struct {
	ShardID          string            `json:"shardId,omitempty"`
	New              bool              `json:"new,omitempty"`
	HashKeyRange     lineage.HashRange `json:"hashKeyRange"`
	KeyspaceFraction float64           `json:"keyspaceFraction"`
	TrafficFraction  *float64          `json:"trafficFraction,omitempty"`
}

// MarshalJSON gives {"shardId", "new", "hashKeyRange": {"start", "end"},
// "keyspaceFraction", "trafficFraction"}; hash keys are decimal strings.
func (s Slot) MarshalJSON() ([]byte, error) {
	return json.Marshal(slotJSON{ShardID: s.ID, New: s.IsNew(), HashKeyRange: s.Range, KeyspaceFraction: s.Range.Fraction(), TrafficFraction: s.Traffic})
}

// Args are the arguments of one call, with the shards as slots: an existing
// shard by id, a shard made by an earlier step by its range.
type Args struct {
	ShardToSplit         *Slot            `json:"shardToSplit,omitempty"`
	NewStartingHashKey   *lineage.HashKey `json:"newStartingHashKey,omitempty"`
	ShardToMerge         *Slot            `json:"shardToMerge,omitempty"`
	AdjacentShardToMerge *Slot            `json:"adjacentShardToMerge,omitempty"`
	TargetShardCount     int              `json:"targetShardCount,omitempty"`
	ScalingType          string           `json:"scalingType,omitempty"`
}

// Step is one API call and what it does to the open layout: the shards it
// closes and those it opens. The layout after step i is the layout before
// it minus Closes plus Opens (Plan.LayoutAfter); keeping only the change
// keeps a plan of thousands of steps linear in size.
type Step struct {
	Call   Call   `json:"call"`
	Args   Args   `json:"args"`
	Closes []Slot `json:"closes"`
	Opens  []Slot `json:"opens"`
	// OpenShards is the number of open shards after the step.
	OpenShards int `json:"openShardCount"`
}

// String describes the step in one line, naming new shards by range.
func (s Step) String() string {
	a := s.Args
	switch s.Call {
	case SplitShard:
		return fmt.Sprintf("SplitShard %s at hash key %s", a.ShardToSplit.Name(), a.NewStartingHashKey)
	case MergeShards:
		return fmt.Sprintf("MergeShards %s with %s", a.ShardToMerge.Name(), a.AdjacentShardToMerge.Name())
	case UpdateShardCount:
		return fmt.Sprintf("UpdateShardCount to %d shards", a.TargetShardCount)
	}
	return string(s.Call)
}

// Plan is the API calls that reach a goal, in order, with the open layout
// before, after each step, and at the end. Every rule the service enforces
// was checked when it was made.
type Plan struct {
	Stream    string `json:"stream"`
	StreamARN string `json:"streamArn,omitempty"`
	Action    Action `json:"action"`
	Method    Method `json:"method,omitempty"`
	// Description says what the plan does in one sentence.
	Description string `json:"description"`
	// Before is the open layout the plan was made from, by range.
	Before []Slot `json:"before"`
	Steps  []Step `json:"steps"`
	// After is the open layout at the end: exact when ExactLayout, else
	// (UpdateShardCount) the even layout the service aims for.
	After       []Slot `json:"after"`
	ExactLayout bool   `json:"exactLayout"`
	// Sample is the traffic sample the shares come from, if any, and
	// TrafficBy what the shares count (records or bytes).
	Sample    *Sample `json:"sample,omitempty"`
	TrafficBy Measure `json:"trafficBy,omitempty"`
	// Notes are what the user should know before saying yes.
	Notes []string `json:"notes,omitempty"`
}

// LayoutAfter returns the open layout after step i (0-based), sorted by
// range; i = -1 gives Before. It replays the steps, so it costs O(i·n).
func (p *Plan) LayoutAfter(i int) ([]Slot, error) {
	l := slices.Clone(p.Before)
	for j := 0; j <= i && j < len(p.Steps); j++ {
		var err error
		if l, err = Apply(l, p.Steps[j]); err != nil {
			return nil, fmt.Errorf("step %d: %w", j+1, err)
		}
	}
	return l, nil
}

// Apply returns layout l after step s: the slots of s.Closes (matched by
// range) removed, s.Opens added, sorted by range. Closing a range l does not
// hold is an error.
func Apply(l []Slot, s Step) ([]Slot, error) {
	out := make([]Slot, 0, len(l)+len(s.Opens))
	closing := make(map[lineage.HashRange]bool, len(s.Closes))
	for _, c := range s.Closes {
		closing[c.Range] = true
	}
	for _, x := range l {
		if closing[x.Range] {
			delete(closing, x.Range)
			continue
		}
		out = append(out, x)
	}
	if len(closing) > 0 {
		for r := range closing {
			return nil, fmt.Errorf("%s closes %s, which is not open", s.Call, r)
		}
	}
	out = append(out, s.Opens...)
	slices.SortFunc(out, func(a, b Slot) int { return cmp.Or(a.Range.Start.Cmp(b.Range.Start), a.Range.End.Cmp(b.Range.End)) })
	return out, nil
}

// Stream is what the planner needs to know about the stream besides its
// shards (from DescribeStreamSummary).
type Stream struct {
	Name   string
	ARN    string
	Status types.StreamStatus
	Mode   types.StreamMode // "" (kinesalite) means provisioned
}

// Input is everything a plan is made from.
type Input struct {
	Stream Stream
	Graph  *lineage.Graph
	// Sample is sampled traffic (optional): it adds traffic shares to the
	// layouts, and a split at the median needs it.
	Sample *Sample
	// Quota is the account's shard quota (optional, from LoadQuota): a plan
	// that opens more shards than it leaves free is refused. When it is nil,
	// QuotaErr (if set) says why, and the preview notes it was not checked.
	Quota    *Quota
	QuotaErr error
}

// Goal is what the user asked for: a SplitGoal, a MergeGoal or a ScaleGoal.
type Goal interface{ action() Action }

// SplitGoal splits one open shard. The key is At, else the Median of the
// shard's sampled traffic, else Percent of its range (nil: 50, the exact
// half).
type SplitGoal struct {
	Shard   string // the service's shard id
	At      *lineage.HashKey
	Percent *big.Rat
	Median  bool
}

// MergeGoal merges two open adjacent shards, given in either order.
type MergeGoal struct {
	Shards [2]string
}

// ScaleGoal reaches Target open shards in the even layout, or with
// Balanced by sampled traffic (balanced.go).
type ScaleGoal struct {
	Target int
	Method Method // "" means MethodUpdateShardCount (MethodSplits when Balanced)
	// Even (MethodSplits only): when the stream already has Target open
	// shards in an uneven layout, even them out. Without it that is
	// "nothing to do", so that scale --to N is safe to repeat.
	Even bool
	// Balanced (MethodSplits only) places the boundaries so that each shard
	// gets an equal share of the sampled traffic (Input.Sample, of every
	// open shard) rather than of the key space.
	Balanced bool
	// By is what traffic is counted in, for Balanced and for the shares the
	// preview shows: ByBytes or ByRecords ("" means ByRecords).
	By Measure
}

// method is the method the goal runs with.
func (g ScaleGoal) method() Method {
	switch {
	case g.Method != "":
		return g.Method
	case g.Balanced:
		return MethodSplits
	}
	return MethodUpdateShardCount
}

func (SplitGoal) action() Action { return ActionSplit }
func (MergeGoal) action() Action { return ActionMerge }
func (ScaleGoal) action() Action { return ActionScale }

// SampleShards checks every rule that does not need sampled traffic and
// returns the open shards whose traffic the goal's preview can show: the
// shard to split, the two to merge, or every open shard for scale. A caller
// samples those, then calls NewPlan with the sample; a refusal comes before
// any record is read.
func SampleShards(in Input, g Goal) ([]*lineage.Shard, error) {
	open, err := checkInput(in)
	if err != nil {
		return nil, err
	}
	switch g := g.(type) {
	case SplitGoal:
		sh, err := openShard(in, g.Shard)
		if err != nil {
			return nil, err
		}
		if err := checkSplittable(in, sh); err != nil {
			return nil, err
		}
		if g.At != nil {
			if err := checkSplitKey(in, sh, *g.At, ""); err != nil {
				return nil, err
			}
		}
		if _, err := checkQuota(in, ActionSplit, 1); err != nil {
			return nil, err
		}
		return []*lineage.Shard{sh}, nil
	case MergeGoal:
		lower, upper, err := mergePair(in, g)
		if err != nil {
			return nil, err
		}
		return []*lineage.Shard{lower, upper}, nil
	case ScaleGoal:
		if err := checkTarget(in, len(open), g); err != nil {
			return nil, err
		}
		// The plan may need more (evening out opens one shard first),
		// which NewPlan checks; this refuses what is sure to fail before
		// any record is sampled.
		if _, err := checkQuota(in, ActionScale, g.Target-len(open)); err != nil {
			return nil, err
		}
		return open, nil
	}
	return nil, fmt.Errorf("reshard: unknown goal %T", g)
}

// NewPlan makes the plan for a goal, or refuses it with one sentence that
// wraps one of the Err* sentinels. It is pure: no I/O, the same answer for
// the same input. A scale to the layout the stream already has is a plan
// without steps ("nothing to do").
func NewPlan(in Input, g Goal) (*Plan, error) {
	open, err := checkInput(in)
	if err != nil {
		return nil, err
	}
	before := make([]Slot, len(open))
	for i, s := range open {
		before[i] = Slot{ID: s.ID, Range: s.Range}
	}
	p := &Plan{Stream: in.Stream.Name, StreamARN: in.Stream.ARN, Action: g.action(), Before: before, ExactLayout: true, Steps: []Step{}}
	switch g := g.(type) {
	case SplitGoal:
		err = planSplit(in, p, g)
	case MergeGoal:
		err = planMerge(in, p, g)
	case ScaleGoal:
		err = planScale(in, p, g, open)
	default:
		err = fmt.Errorf("reshard: unknown goal %T", g)
	}
	if err != nil {
		return nil, err
	}
	if p.After == nil {
		if p.After, err = p.LayoutAfter(len(p.Steps) - 1); err != nil {
			return nil, fmt.Errorf("reshard: internal error: %w", err)
		}
	}
	note, err := checkQuota(in, p.Action, p.growth())
	if err != nil {
		return nil, err
	}
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	if in.Sample != nil {
		p.Sample, p.TrafficBy = in.Sample, ByRecords
		if sg, ok := g.(ScaleGoal); ok && sg.By == ByBytes {
			p.TrafficBy = ByBytes
			p.Notes = append([]string{"Traffic shares are of the sampled bytes (data and partition keys, as the write quota counts them)."}, p.Notes...)
		}
		p.annotate(in.Sample, p.TrafficBy)
	}
	return p, nil
}

// checkInput checks the stream (provisioned, ACTIVE) and that its open
// shards tile the key space; it returns them sorted by range.
func checkInput(in Input) ([]*lineage.Shard, error) {
	name := in.Stream.Name
	if in.Stream.Mode == types.StreamModeOnDemand {
		return nil, refuse(ErrOnDemand, fmt.Sprintf("stream %s is ON_DEMAND: the service reshards it by itself and refuses SplitShard, MergeShards and UpdateShardCount; switch it to PROVISIONED first", name))
	}
	if in.Stream.Status != types.StreamStatusActive {
		why := ""
		switch in.Stream.Status {
		case types.StreamStatusUpdating:
			why = " (another change is in progress)"
		case types.StreamStatusCreating:
			why = " (it is being created)"
		case types.StreamStatusDeleting:
			why = " (it is being deleted)"
		}
		status := string(in.Stream.Status)
		if status == "" {
			status = "of unknown status"
		}
		return nil, refuse(ErrNotActive, fmt.Sprintf("stream %s is %s, not ACTIVE%s: the service accepts a reshard only while the stream is ACTIVE; try again when it is", name, status, why))
	}
	if in.Graph == nil {
		return nil, fmt.Errorf("reshard: no shard listing for stream %s", name)
	}
	if err := in.Graph.CheckOpenCoverage(); err != nil {
		return nil, refuse(ErrInconsistent, fmt.Sprintf("the open shards of stream %s do not cover the hash key space exactly once (%v), as when a reshard is in progress; try again when it has finished", name, err))
	}
	return in.Graph.Open(), nil
}

// openShard finds an open shard by id, or says why it cannot be used.
func openShard(in Input, id string) (*lineage.Shard, error) {
	name := in.Stream.Name
	sh := in.Graph.Shard(id)
	if sh == nil {
		return nil, refuse(ErrUnknownShard, fmt.Sprintf("stream %s has no shard %s; its open shards are %s", name, id, idList(openIDs(in.Graph), 8)))
	}
	switch sh.State {
	case lineage.StateTrimmed:
		return nil, refuse(ErrClosedShard, fmt.Sprintf("shard %s of stream %s was split or merged long ago and retention has removed it; only open shards can be split or merged: %s", id, name, idList(openIDs(in.Graph), 8)))
	case lineage.StateClosed:
		// The open shards that hold part of its range: not every open
		// descendant, since a descendant through a merge may have been
		// split again away from it.
		var holders []string
		for _, o := range in.Graph.Open() {
			if o.Range.Start.Cmp(sh.Range.End) <= 0 && sh.Range.Start.Cmp(o.Range.End) <= 0 {
				holders = append(holders, o.ID)
			}
		}
		return nil, refuse(ErrClosedShard, fmt.Sprintf("shard %s of stream %s is closed (it was already split or merged); only open shards can be split or merged, and its range is now held by %s", id, name, idList(holders, 8)))
	}
	return sh, nil
}

func openIDs(g *lineage.Graph) []string {
	var ids []string
	for _, s := range g.Open() {
		ids = append(ids, s.ID)
	}
	return ids
}

// checkSplittable refuses a shard of fewer than four keys: no key then has
// two keys on either side.
func checkSplittable(in Input, sh *lineage.Shard) error {
	if sh.Range.Width().Cmp(big.NewInt(4)) < 0 {
		return refuse(ErrShardTooSmall, fmt.Sprintf("shard %s of stream %s holds only %s hash keys (%s); a shard needs at least 4 to be split, so that each new shard holds at least two", sh.ID, in.Stream.Name, sh.Range.Width(), sh.Range))
	}
	return nil
}

// legalSplitRange is Start+2 .. End-1, the keys SplitShard accepts (AWS
// enforces it; kinesis-mock accepts worse). The shard must hold 4 keys.
func legalSplitRange(r lineage.HashRange) (lo, hi lineage.HashKey) {
	lo, _ = r.Start.Add64(2)
	hi, _ = r.End.Sub64(1)
	return lo, hi
}

// checkSplitKey checks a split key against the shard; how says where the
// key came from ("" for one the user gave).
func checkSplitKey(in Input, sh *lineage.Shard, k lineage.HashKey, how string) error {
	r := sh.Range
	if !r.Contains(k) {
		return refuse(ErrKeyOutOfRange, fmt.Sprintf("hash key %s is outside shard %s of stream %s, which holds %s to %s", k, sh.ID, in.Stream.Name, r.Start, r.End))
	}
	lo, hi := legalSplitRange(r)
	if k.Cmp(lo) < 0 || k.Cmp(hi) > 0 {
		what := "hash key " + k.String() + " is"
		if how != "" {
			what = how + " gives hash key " + k.String() + ", which is"
		}
		return refuse(ErrKeyOutOfRange, fmt.Sprintf("%s too close to an edge of shard %s of stream %s (%s to %s): a split key must be from %s to %s (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys", what, sh.ID, in.Stream.Name, r.Start, r.End, lo, hi))
	}
	return nil
}

func planSplit(in Input, p *Plan, g SplitGoal) error {
	sh, err := openShard(in, g.Shard)
	if err != nil {
		return err
	}
	if err := checkSplittable(in, sh); err != nil {
		return err
	}
	var k lineage.HashKey
	how := ""
	switch {
	case g.At != nil:
		k = *g.At
		p.Description = fmt.Sprintf("split %s at hash key %s", sh.ID, k)
	case g.Median:
		ss := in.Sample.Shard(sh.ID)
		if ss == nil {
			return refuse(ErrNoSample, fmt.Sprintf("no records of shard %s of stream %s were sampled, so there is no median to split at", sh.ID, in.Stream.Name))
		}
		if k, err = medianKey(in, sh, ss); err != nil {
			return err
		}
		p.Description = fmt.Sprintf("split %s at the median hash of %d sampled records (hash key %s)", sh.ID, len(ss.Hashes), k)
	default:
		pct := g.Percent
		if pct == nil {
			pct = big.NewRat(50, 1)
		}
		k = sh.Range.KeyAtPercent(pct)
		how = "splitting at " + ratText(pct) + "% of its range"
		p.Description = fmt.Sprintf("split %s at %s%% of its range (hash key %s)", sh.ID, ratText(pct), k)
	}
	if err := checkSplitKey(in, sh, k, how); err != nil {
		return err
	}
	l := slices.Clone(p.Before)
	i := slices.IndexFunc(l, func(s Slot) bool { return s.ID == sh.ID })
	p.Steps = append(p.Steps, splitStep(&l, i, k))
	p.After = l
	return nil
}

// ratText prints a percentage the way a user would type it (50, 33.5).
func ratText(p *big.Rat) string {
	if p.IsInt() {
		return p.Num().String()
	}
	s := p.FloatString(40)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// mergePair checks a merge goal and returns the two shards, lower range
// first.
func mergePair(in Input, g MergeGoal) (lower, upper *lineage.Shard, err error) {
	a, b := g.Shards[0], g.Shards[1]
	if a == b {
		return nil, nil, refuse(ErrSameShard, fmt.Sprintf("cannot merge shard %s with itself: give two different, adjacent open shards", a))
	}
	if lower, err = openShard(in, a); err != nil {
		return nil, nil, err
	}
	if upper, err = openShard(in, b); err != nil {
		return nil, nil, err
	}
	if lower.Range.Start.Cmp(upper.Range.Start) > 0 {
		lower, upper = upper, lower
	}
	if next, over := lower.Range.End.Add64(1); over || next != upper.Range.Start {
		return nil, nil, refuse(ErrNotAdjacent, fmt.Sprintf("shards %s (%s) and %s (%s) of stream %s are not adjacent: only two open shards whose ranges touch can be merged, and the neighbours of %s are %s", lower.ID, lower.Range, upper.ID, upper.Range, in.Stream.Name, a, idList(neighbours(in.Graph, a), 2)))
	}
	return lower, upper, nil
}

// neighbours returns the open shards next to the open shard id.
func neighbours(g *lineage.Graph, id string) []string {
	open := g.Open()
	i := slices.IndexFunc(open, func(s *lineage.Shard) bool { return s.ID == id })
	var out []string
	if i > 0 {
		out = append(out, open[i-1].ID)
	}
	if i >= 0 && i+1 < len(open) {
		out = append(out, open[i+1].ID)
	}
	return out
}

func planMerge(in Input, p *Plan, g MergeGoal) error {
	lower, upper, err := mergePair(in, g)
	if err != nil {
		return err
	}
	l := slices.Clone(p.Before)
	i := slices.IndexFunc(l, func(s Slot) bool { return s.ID == lower.ID })
	p.Steps = append(p.Steps, mergeStep(&l, i))
	p.After = l
	p.Description = fmt.Sprintf("merge %s with %s into one shard (%s is sent as ShardToMerge: it holds the lower range)", lower.ID, upper.ID, lower.ID)
	return nil
}
