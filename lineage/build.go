package lineage

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

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
	b := &builder{listed: listed, nodes: make([]node, len(listed), len(listed)+len(listed)/4+1), index: make(map[string]int32, len(listed))}
	for i := range listed {
		if err := readShard(&listed[i], i, &b.nodes[i], b.index); err != nil {
			return nil, err
		}
	}
	if err := b.resolveParents(); err != nil {
		return nil, err
	}
	b.linkChildren()
	b.sortChildren()
	order, pos, err := b.topoOrder()
	if err != nil {
		return nil, err
	}
	return b.layout(order, pos), nil
}

// builder holds what the phases of Build share: the listing, one node
// per shard (listed ones first, then trimmed parents), and the children as
// a compressed adjacency list, kids[off[j]:off[j+1]] being j's.
type builder struct {
	listed []types.Shard
	nodes  []node
	index  map[string]int32
	edges  int
	off    []int32
	kids   []int32
	fill   []int32 // children placed per node, then Kahn's in-degrees
}

// resolveParents links every listed shard to its parents; an id not
// listed becomes a trimmed node.
func (b *builder) resolveParents() error {
	for i := range b.listed {
		s := &b.listed[i]
		id := b.nodes[i].id
		p, a := deref(s.ParentShardId), deref(s.AdjacentParentShardId)
		if p == "" {
			p, a = a, ""
		}
		if p == id || a == id {
			return newKindError(ErrSelfParent, "shard "+quote(id)+" names itself as its parent")
		}
		if a != "" && a == p {
			return newKindError(ErrDuplicateParent, "shard "+quote(id)+" names "+quote(p)+" as both its parent and its adjacent parent")
		}
		for _, pid := range [2]string{p, a} {
			if pid == "" {
				continue
			}
			j, ok := b.index[pid]
			if !ok {
				j = int32(len(b.nodes))
				b.nodes = append(b.nodes, node{trimmed: true})
				b.nodes[j].setID(pid)
				b.index[pid] = j
			}
			b.nodes[i].par[b.nodes[i].np] = j
			b.nodes[i].np++
			b.edges++
		}
	}
	return nil
}

// linkChildren builds the compressed adjacency list of children.
func (b *builder) linkChildren() {
	total := len(b.nodes)
	b.off = make([]int32, total+1)
	for i := range b.nodes {
		for _, p := range b.nodes[i].par[:b.nodes[i].np] {
			b.off[p+1]++
		}
	}
	for j := 1; j <= total; j++ {
		b.off[j] += b.off[j-1]
	}
	b.kids = make([]int32, b.edges)
	b.fill = make([]int32, total)
	for i := range b.nodes {
		for _, p := range b.nodes[i].par[:b.nodes[i].np] {
			b.kids[b.off[p]+b.fill[p]] = int32(i)
			b.fill[p]++
		}
	}
}

// less is the tie-break of the topological order (range start, then id).
func (b *builder) less(x, y int32) int { return compareNodes(&b.nodes[x], &b.nodes[y]) }

// sortChildren gives each trimmed node its sort key, its least child
// start (its children are all listed: only parents can be trimmed, so they
// have ranges), and sorts every node's children.
func (b *builder) sortChildren() {
	for j := len(b.listed); j < len(b.nodes); j++ {
		nd := &b.nodes[j]
		for k, c := range b.kids[b.off[j]:b.off[j+1]] {
			if k == 0 || b.nodes[c].start.Cmp(nd.start) < 0 {
				nd.start = b.nodes[c].start
			}
		}
	}
	for j := range b.nodes {
		if seg := b.kids[b.off[j]:b.off[j+1]]; len(seg) > 1 {
			slices.SortFunc(seg, b.less)
		}
	}
}

// topoOrder is Kahn's algorithm with a min-heap of ready nodes: the nodes
// in topological order, and each node's place in it.
func (b *builder) topoOrder() (order, pos []int32, err error) {
	total := len(b.nodes)
	indeg := b.fill
	ready := readyHeap{less: b.less}
	for i := range b.nodes {
		indeg[i] = int32(b.nodes[i].np)
		if indeg[i] == 0 {
			ready.push(int32(i))
		}
	}
	pos = make([]int32, total)
	order = make([]int32, 0, total)
	for len(ready.h) > 0 {
		j := ready.pop()
		pos[j] = int32(len(order))
		order = append(order, j)
		for _, c := range b.kids[b.off[j]:b.off[j+1]] {
			if indeg[c]--; indeg[c] == 0 {
				ready.push(c)
			}
		}
	}
	if len(order) < total {
		return nil, nil, cycleError(b.nodes, indeg)
	}
	return order, pos, nil
}

// layout lays the shards out in topological order; parents and children
// share two backing arrays, capped so that an append by a caller copies.
func (b *builder) layout(order, pos []int32) *Graph {
	g := &Graph{
		shards: make([]Shard, len(b.nodes)),
		index:  b.index,
		pos:    pos,
	}
	parentIDs := make([]string, b.edges)
	childIDs := make([]string, b.edges)
	pe, ce := 0, 0
	for p, j := range order {
		nd := &b.nodes[j]
		s := &g.shards[p]
		s.ID = nd.id
		if nd.trimmed {
			s.State = StateTrimmed
		} else {
			s.Range = HashRange{nd.start, nd.end}
			if r := b.listed[j].SequenceNumberRange; r != nil {
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
				s.Parents[k] = b.nodes[par].id
				s.Depth = max(s.Depth, g.shards[pos[par]].Depth+1) // parents are placed already
			}
			pe += n
		}
		if seg := b.kids[b.off[j]:b.off[j+1]]; len(seg) > 0 {
			n := len(seg)
			s.Children = childIDs[ce : ce+n : ce+n]
			for k, c := range seg {
				s.Children[k] = b.nodes[c].id
			}
			ce += n
		}
		g.epochs = max(g.epochs, s.Depth+1)
	}
	return g
}
