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

// Build turns a ListShards listing into the lineage DAG. It is pure (no I/O),
// reads nothing but the listing, and never panics.
//
// The listing's order means nothing. Shards come out in a topological order,
// parents before children, made deterministic by Kahn's algorithm taking, of
// the shards whose parents are all placed, the one with the lowest hash range
// start and then the lowest id (numeric-aware, see CompareShardIDs). A trimmed
// shard has no range, so it sorts by the lowest start among its children,
// which puts it next to the part of the space it once held.
//
// A parent named but not listed becomes a StateTrimmed shard. Children of a
// parent that still looks open (a listing taken mid-reshard) are kept as
// they are; whether to read them yet is the reader's decision.
//
// Errors (each wraps a sentinel of this package): a shard without an id
// (ErrMissingShardID), an id listed twice (ErrDuplicateShardID), a missing or
// unparseable hash key (ErrBadHashKey) or Start > End (ErrBadHashRange), a
// shard naming itself (ErrSelfParent) or one shard twice (ErrDuplicateParent)
// as parent, and a cycle (ErrCycle).
func Build(listed []types.Shard) (*Graph, error) {
	if len(listed) > maxListing {
		return nil, fmt.Errorf("lineage: a listing of %d shards is more than this tool can hold", len(listed))
	}
	nodes := make([]node, len(listed), len(listed)+len(listed)/4+1)
	index := make(map[string]int32, len(listed))
	for i := range listed {
		if err := readShard(&listed[i], i, &nodes[i], index); err != nil {
			return nil, err
		}
	}

	// Resolve parents; an id not listed becomes a trimmed node.
	edges := 0
	for i := range listed {
		s := &listed[i]
		id := nodes[i].id
		p, a := deref(s.ParentShardId), deref(s.AdjacentParentShardId)
		if p == "" {
			p, a = a, ""
		}
		if p == id || a == id {
			return nil, newKindError(ErrSelfParent, "shard "+quote(id)+" names itself as its parent")
		}
		if a != "" && a == p {
			return nil, newKindError(ErrDuplicateParent, "shard "+quote(id)+" names "+quote(p)+" as both its parent and its adjacent parent")
		}
		for _, pid := range [2]string{p, a} {
			if pid == "" {
				continue
			}
			j, ok := index[pid]
			if !ok {
				j = int32(len(nodes))
				nodes = append(nodes, node{trimmed: true})
				nodes[j].setID(pid)
				index[pid] = j
			}
			nodes[i].par[nodes[i].np] = j
			nodes[i].np++
			edges++
		}
	}
	total := len(nodes)

	// Children as a compressed adjacency list: kids[off[j]:off[j+1]] are j's.
	off := make([]int32, total+1)
	for i := range nodes {
		for _, p := range nodes[i].par[:nodes[i].np] {
			off[p+1]++
		}
	}
	for j := 1; j <= total; j++ {
		off[j] += off[j-1]
	}
	kids := make([]int32, edges)
	fill := make([]int32, total) // doubles as Kahn's in-degree counter below
	for i := range nodes {
		for _, p := range nodes[i].par[:nodes[i].np] {
			kids[off[p]+fill[p]] = int32(i)
			fill[p]++
		}
	}

	// Sort keys: a trimmed node takes its least child start. Its children
	// are all listed (only parents can be trimmed), so they have ranges.
	for j := len(listed); j < total; j++ {
		nd := &nodes[j]
		for k, c := range kids[off[j]:off[j+1]] {
			if k == 0 || nodes[c].start.Cmp(nd.start) < 0 {
				nd.start = nodes[c].start
			}
		}
	}
	less := func(a, b int32) int { return compareNodes(&nodes[a], &nodes[b]) }
	for j := 0; j < total; j++ {
		if seg := kids[off[j]:off[j+1]]; len(seg) > 1 {
			slices.SortFunc(seg, less)
		}
	}

	// Kahn's algorithm with a min-heap of ready nodes.
	indeg := fill
	ready := readyHeap{less: less}
	for i := range nodes {
		indeg[i] = int32(nodes[i].np)
		if indeg[i] == 0 {
			ready.push(int32(i))
		}
	}
	pos := make([]int32, total)
	order := make([]int32, 0, total)
	for len(ready.h) > 0 {
		j := ready.pop()
		pos[j] = int32(len(order))
		order = append(order, j)
		for _, c := range kids[off[j]:off[j+1]] {
			if indeg[c]--; indeg[c] == 0 {
				ready.push(c)
			}
		}
	}
	if len(order) < total {
		return nil, cycleError(nodes, indeg)
	}

	// Lay the shards out in topological order; parents and children share
	// two backing arrays, capped so that an append by a caller copies.
	g := &Graph{
		shards: make([]Shard, total),
		index:  index,
		pos:    pos,
	}
	parentIDs := make([]string, edges)
	childIDs := make([]string, edges)
	pe, ce := 0, 0
	for p, j := range order {
		nd := &nodes[j]
		s := &g.shards[p]
		s.ID = nd.id
		if nd.trimmed {
			s.State = StateTrimmed
		} else {
			s.Range = HashRange{nd.start, nd.end}
			if r := listed[j].SequenceNumberRange; r != nil {
				s.StartingSequenceNumber, s.EndingSequenceNumber = deref(r.StartingSequenceNumber), deref(r.EndingSequenceNumber)
			}
			s.State = StateOpen
			if s.EndingSequenceNumber != "" {
				s.State = StateClosed
			}
		}
		if nd.np > 0 {
			n := int(nd.np)
			s.Parents = parentIDs[pe : pe+n : pe+n]
			for k, par := range nd.par[:n] {
				s.Parents[k] = nodes[par].id
				s.Depth = max(s.Depth, g.shards[pos[par]].Depth+1) // parents are placed already
			}
			pe += n
		}
		if seg := kids[off[j]:off[j+1]]; len(seg) > 0 {
			n := len(seg)
			s.Children = childIDs[ce : ce+n : ce+n]
			for k, c := range seg {
				s.Children[k] = nodes[c].id
			}
			ce += n
		}
		g.epochs = max(g.epochs, s.Depth+1)
	}
	return g, nil
}

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
