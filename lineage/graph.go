package lineage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// State is where a shard is in its life.
type State int

const (
	// StateOpen: listed without an EndingSequenceNumber; it takes writes.
	StateOpen State = iota
	// StateClosed: listed with an EndingSequenceNumber; split or merged away,
	// its records readable until retention trims them.
	StateClosed
	// StateTrimmed: named as a parent by a listed shard but not listed
	// itself, because retention removed it. It counts as read to its end.
	StateTrimmed
)

var stateNames = [...]string{StateOpen: "open", StateClosed: "closed", StateTrimmed: "trimmed"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText gives "open", "closed" or "trimmed", the words of the JSON output.
func (s State) MarshalText() ([]byte, error) {
	if s < 0 || int(s) >= len(stateNames) {
		return nil, fmt.Errorf("lineage: unknown shard state %d", int(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText reads "open", "closed" or "trimmed".
func (s *State) UnmarshalText(b []byte) error {
	for i, name := range stateNames {
		if string(b) == name {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("lineage: unknown shard state %q", b)
}

// Shard is one node of the lineage DAG. Shards belong to their Graph and are
// shared by every caller: treat them as read-only.
type Shard struct {
	ID    string
	State State
	// Parents are ParentShardId then AdjacentParentShardId, those present, in
	// that order; none for a root. A trimmed shard has none (nothing is known
	// about it but its id and its children).
	Parents []string
	// Children are the ids of the shards that name this one as a parent,
	// ordered by their hash range start, then id.
	Children []string
	// Range is the zero value for a trimmed shard.
	Range HashRange
	// StartingSequenceNumber and EndingSequenceNumber are "" when absent: a
	// shard is open exactly when EndingSequenceNumber is "". They are decimals
	// of up to 129 digits, comparable only as numbers and only within one
	// shard; the Ending one is an upper bound, not the last record's number.
	StartingSequenceNumber, EndingSequenceNumber string
	// Depth is 0 for a shard without parents (trimmed ones included), else
	// 1 + the greatest depth of its parents.
	Depth int
}

// IsMerge reports whether s was made by merging two shards.
func (s *Shard) IsMerge() bool { return len(s.Parents) == 2 }

// IsOpen reports whether s is open.
func (s *Shard) IsOpen() bool { return s.State == StateOpen }

// IsTrimmed reports whether s is a parent that the listing no longer has.
func (s *Shard) IsTrimmed() bool { return s.State == StateTrimmed }

// Graph is the lineage DAG of one stream's listing. It is immutable once
// built and safe for concurrent reads.
type Graph struct {
	shards []Shard          // in topological order
	index  map[string]int32 // id -> node number (listing order, trimmed after)
	pos    []int32          // node number -> index into shards
	epochs int
}

// node is Build's working record of one shard, numbered in listing order
// with trimmed parents appended.
type node struct {
	id string
	// start is the range start of a listed shard, and of a trimmed one the
	// least start of its children: the first key of Kahn's tie-break.
	start, end HashKey
	par        [2]int32
	np         int8
	trimmed    bool
	// The id split for the second key of the tie-break, precomputed because
	// ranges often share a start (a lower child starts where its parent did):
	// id[:numAt] is the prefix and num the value of the trailing digits, when
	// numOK (at most 19 of them).
	numOK bool
	numAt int32
	num   uint64
}

// setID records the id and its tie-break parts.
func (nd *node) setID(id string) {
	nd.id = id
	prefix, digits := splitTrailingDigits(id)
	if len(digits) > 19 {
		return
	}
	nd.numOK, nd.numAt = true, int32(len(prefix))
	for i := 0; i < len(digits); i++ {
		nd.num = nd.num*10 + uint64(digits[i]-'0')
	}
}

// compareNodes is Kahn's tie-break: range start, then CompareShardIDs (on
// the precomputed parts where it can).
func compareNodes(a, b *node) int {
	if c := a.start.Cmp(b.start); c != 0 {
		return c
	}
	if !a.numOK || !b.numOK {
		return CompareShardIDs(a.id, b.id)
	}
	return cmp.Or(strings.Compare(a.id[:a.numAt], b.id[:b.numAt]), cmp.Compare(a.num, b.num), strings.Compare(a.id, b.id))
}

// maxListing keeps node numbers (listed plus at most two trimmed parents per
// listed shard) inside int32.
const maxListing = math.MaxInt32 / 3

// readShard validates one listed shard into nd and registers its id.
func readShard(s *types.Shard, i int, nd *node, index map[string]int32) error {
	id := deref(s.ShardId)
	if id == "" {
		return newKindError(ErrMissingShardID, fmt.Sprintf("shard number %d of the listing has no ShardId", i+1))
	}
	n := len(index)
	index[id] = int32(i) // one hash, not a lookup and a store: a duplicate leaves the size unchanged
	if len(index) == n {
		return newKindError(ErrDuplicateShardID, "shard "+quote(id)+" is listed more than once")
	}
	nd.setID(id)
	if s.HashKeyRange == nil {
		return newKindError(ErrBadHashRange, "shard "+quote(id)+" has no HashKeyRange")
	}
	start, err := parseListedKey(id, "StartingHashKey", s.HashKeyRange.StartingHashKey)
	if err != nil {
		return err
	}
	end, err := parseListedKey(id, "EndingHashKey", s.HashKeyRange.EndingHashKey)
	if err != nil {
		return err
	}
	if start.Cmp(end) > 0 {
		return newKindError(ErrBadHashRange, fmt.Sprintf("shard %s has StartingHashKey %s above its EndingHashKey %s", quote(id), start, end))
	}
	nd.start, nd.end = start, end
	return nil
}

func parseListedKey(id, field string, v *string) (HashKey, error) {
	if v == nil {
		return HashKey{}, newKindError(ErrBadHashKey, "shard "+quote(id)+" has no "+field)
	}
	k, err := ParseHashKey(*v)
	if err != nil {
		return HashKey{}, fmt.Errorf("shard %s has a bad %s: %w", quote(id), field, err)
	}
	return k, nil
}

// cycleError names one cycle among the nodes Kahn's algorithm could not
// place. Each of them still has an unplaced parent (indeg > 0), so walking
// from one to an unplaced parent must come back round.
func cycleError(nodes []node, indeg []int32) error {
	start := int32(-1)
	for i, d := range indeg {
		if d > 0 {
			start = int32(i)
			break
		}
	}
	step := make(map[int32]int)
	var walk []int32
	for cur := start; cur >= 0; {
		if at, seen := step[cur]; seen {
			walk = walk[at:]
			break
		}
		step[cur] = len(walk)
		walk = append(walk, cur)
		next := int32(-1)
		for _, p := range nodes[cur].par[:nodes[cur].np] {
			if indeg[p] > 0 {
				next = p
				break
			}
		}
		cur = next
	}
	// The walk went child to parent; print it parent to child.
	ids := make([]string, 0, len(walk)+1)
	for i := len(walk) - 1; i >= 0; i-- {
		ids = append(ids, quote(nodes[walk[i]].id))
	}
	if len(ids) > 0 {
		ids = append(ids, ids[0])
	}
	const show = 12
	if len(ids) > show {
		ids = append(ids[:show:show], "...")
	}
	return newKindError(ErrCycle, "shards form a cycle, each the parent of the next: "+strings.Join(ids, " -> "))
}

// readyHeap is a binary min-heap of node numbers; hand-rolled to avoid
// container/heap's interface boxing on every push and pop.
type readyHeap struct {
	h    []int32
	less func(a, b int32) int
}

func (r *readyHeap) push(x int32) {
	r.h = append(r.h, x)
	for i := len(r.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if r.less(r.h[i], r.h[parent]) >= 0 {
			break
		}
		r.h[i], r.h[parent] = r.h[parent], r.h[i]
		i = parent
	}
}

func (r *readyHeap) pop() int32 {
	top := r.h[0]
	last := len(r.h) - 1
	r.h[0] = r.h[last]
	r.h = r.h[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < last && r.less(r.h[l], r.h[m]) < 0 {
			m = l
		}
		if l+1 < last && r.less(r.h[l+1], r.h[m]) < 0 {
			m = l + 1
		}
		if m == i {
			break
		}
		r.h[i], r.h[m] = r.h[m], r.h[i]
		i = m
	}
	return top
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Shard returns the shard with that id, or nil.
func (g *Graph) Shard(id string) *Shard {
	if p := g.position(id); p >= 0 {
		return &g.shards[p]
	}
	return nil
}

func (g *Graph) position(id string) int32 {
	if j, ok := g.index[id]; ok {
		return g.pos[j]
	}
	return -1
}

// Shards returns every shard, trimmed ones included, parents before children
// (the order Build documents). The slice is the caller's; the shards are not.
func (g *Graph) Shards() []*Shard {
	out := make([]*Shard, len(g.shards))
	for i := range g.shards {
		out[i] = &g.shards[i]
	}
	return out
}

// Len returns the number of shards, trimmed ones included.
func (g *Graph) Len() int { return len(g.shards) }

// Epochs returns the greatest depth plus one: how many generations of shards
// the listing spans. It is 0 for an empty graph.
func (g *Graph) Epochs() int { return g.epochs }

// Roots returns the shards without parents, in topological order: the
// trimmed shards and the listed shards that were never a child.
func (g *Graph) Roots() []*Shard {
	return g.filter(func(s *Shard) bool { return len(s.Parents) == 0 })
}

// Open returns the open shards sorted by hash range start (then id).
func (g *Graph) Open() []*Shard {
	open := g.filter((*Shard).IsOpen)
	slices.SortFunc(open, func(a, b *Shard) int {
		return cmp.Or(a.Range.Start.Cmp(b.Range.Start), CompareShardIDs(a.ID, b.ID))
	})
	return open
}

// KeyPath returns the listed shards whose range holds k, parents first. In a
// consistent history that is a chain: the shard that held k in each epoch,
// from the oldest retained one to the open one. Trimmed shards have no known
// range and never appear.
func (g *Graph) KeyPath(k HashKey) []*Shard {
	return g.filter(func(s *Shard) bool { return s.State != StateTrimmed && s.Range.Contains(k) })
}

// CheckOpenCoverage reports whether the open shards tile the key space
// exactly once (see CheckCoverage). A listing taken mid-reshard, or from an
// emulator with its own layout, may not.
func (g *Graph) CheckOpenCoverage() error {
	var ranges []HashRange
	for i := range g.shards {
		s := &g.shards[i]
		if s.State == StateOpen {
			ranges = append(ranges, s.Range)
		}
	}
	return CheckCoverage(ranges)
}

func (g *Graph) filter(keep func(*Shard) bool) []*Shard {
	var out []*Shard
	for i := range g.shards {
		s := &g.shards[i]
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// Subtree returns the shard and all its descendants in topological order, or
// nil for an unknown id.
func (g *Graph) Subtree(id string) []*Shard {
	return g.reach(id, true, func(s *Shard) []string { return s.Children })
}

// Ancestors returns every ancestor of the shard (trimmed ones included) in
// topological order, without the shard itself; nil for an unknown id or a root.
func (g *Graph) Ancestors(id string) []*Shard {
	return g.reach(id, false, func(s *Shard) []string { return s.Parents })
}

// reach collects the shards reachable from id along next, in topological
// order (positions in g.shards are topological, so sorting them suffices).
func (g *Graph) reach(id string, self bool, next func(*Shard) []string) []*Shard {
	p := g.position(id)
	if p < 0 {
		return nil
	}
	seen := make([]bool, len(g.shards))
	seen[p] = true
	stack := []int32{p}
	var found []int32
	if self {
		found = append(found, p)
	}
	for len(stack) > 0 {
		q := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, nid := range next(&g.shards[q]) {
			if r := g.position(nid); r >= 0 && !seen[r] {
				seen[r] = true
				stack = append(stack, r)
				found = append(found, r)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	out := make([]*Shard, len(found))
	for i, r := range found {
		out[i] = &g.shards[r]
	}
	return out
}
