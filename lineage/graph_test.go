package lineage

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Keys of the hand-built histories.
var (
	keyQ  = HashKey{hi: 1 << 62}                            // 2^126
	keyH  = HashKey{hi: 1 << 63}                            // 2^127
	keyT1 = HashKey{0x5555555555555555, 0x5555555555555555} // second start of the 3-shard layout
	keyT2 = HashKey{0xaaaaaaaaaaaaaaaa, 0xaaaaaaaaaaaaaaaa} // third start
)

func below(k HashKey) HashKey { p, _ := k.Sub64(1); return p }

// wantShard is the expected state of one shard, ids short (see ShortID).
type wantShard struct {
	id       string
	state    State
	parents  []string
	children []string
	depth    int
}

type history struct {
	name    string
	listing []types.Shard
	want    []wantShard // in topological order
	roots   []string
	open    []string
	epochs  int
}

func histories() []history {
	h1 := below(keyH)
	upd := []types.Shard{ // 2 -> 3 the way UpdateShardCount does it: two splits and a merge
		listedShard(sid(0), HashRange{HashKey{}, h1}, false),
		listedShard(sid(1), HashRange{keyH, MaxHashKey}, false),
		listedShard(sid(2), HashRange{HashKey{}, below(keyT1)}, true, sid(0)),
		listedShard(sid(3), HashRange{keyT1, h1}, false, sid(0)),
		listedShard(sid(4), HashRange{keyH, below(keyT2)}, false, sid(1)),
		listedShard(sid(5), HashRange{keyT2, MaxHashKey}, true, sid(1)),
		listedShard(sid(6), HashRange{keyT1, below(keyT2)}, true, sid(3), sid(4)),
	}
	return []history{
		{
			name: "single split",
			listing: []types.Shard{
				listedShard(sid(0), WholeSpace, false),
				listedShard(sid(1), HashRange{HashKey{}, h1}, true, sid(0)),
				listedShard(sid(2), HashRange{keyH, MaxHashKey}, true, sid(0)),
			},
			want: []wantShard{
				{"0", StateClosed, nil, []string{"1", "2"}, 0},
				{"1", StateOpen, []string{"0"}, nil, 1},
				{"2", StateOpen, []string{"0"}, nil, 1},
			},
			roots: []string{"0"}, open: []string{"1", "2"}, epochs: 2,
		},
		{
			name: "merge",
			listing: []types.Shard{
				listedShard(sid(0), HashRange{HashKey{}, h1}, false),
				listedShard(sid(1), HashRange{keyH, MaxHashKey}, false),
				listedShard(sid(2), WholeSpace, true, sid(0), sid(1)),
			},
			want: []wantShard{
				{"0", StateClosed, nil, []string{"2"}, 0},
				{"1", StateClosed, nil, []string{"2"}, 0},
				{"2", StateOpen, []string{"0", "1"}, nil, 1},
			},
			roots: []string{"0", "1"}, open: []string{"2"}, epochs: 2,
		},
		{
			name: "split, merge, split",
			listing: []types.Shard{
				listedShard(sid(0), WholeSpace, false),
				listedShard(sid(1), HashRange{HashKey{}, h1}, false, sid(0)),
				listedShard(sid(2), HashRange{keyH, MaxHashKey}, false, sid(0)),
				listedShard(sid(3), WholeSpace, false, sid(1), sid(2)),
				listedShard(sid(4), HashRange{HashKey{}, below(keyQ)}, true, sid(3)),
				listedShard(sid(5), HashRange{keyQ, MaxHashKey}, true, sid(3)),
			},
			want: []wantShard{
				{"0", StateClosed, nil, []string{"1", "2"}, 0},
				{"1", StateClosed, []string{"0"}, []string{"3"}, 1},
				{"2", StateClosed, []string{"0"}, []string{"3"}, 1},
				{"3", StateClosed, []string{"1", "2"}, []string{"4", "5"}, 2},
				{"4", StateOpen, []string{"3"}, nil, 3},
				{"5", StateOpen, []string{"3"}, nil, 3},
			},
			roots: []string{"0"}, open: []string{"4", "5"}, epochs: 4,
		},
		{
			// Kahn's order with ties by range start: 0, then its children 2
			// (start 0) and 3 (start t1 < 2^127) before 1 (start 2^127).
			name:    "update shard count 2 to 3",
			listing: upd,
			want: []wantShard{
				{"0", StateClosed, nil, []string{"2", "3"}, 0},
				{"2", StateOpen, []string{"0"}, nil, 1},
				{"3", StateClosed, []string{"0"}, []string{"6"}, 1},
				{"1", StateClosed, nil, []string{"4", "5"}, 0},
				{"4", StateClosed, []string{"1"}, []string{"6"}, 1},
				{"6", StateOpen, []string{"3", "4"}, nil, 2},
				{"5", StateOpen, []string{"1"}, nil, 1},
			},
			roots: []string{"0", "1"}, open: []string{"2", "6", "5"}, epochs: 3,
		},
		{
			name: "trimmed root parent",
			listing: []types.Shard{
				listedShard(sid(1), HashRange{HashKey{}, h1}, true, sid(0)),
				listedShard(sid(2), HashRange{keyH, MaxHashKey}, true, sid(0)),
			},
			want: []wantShard{
				{"0", StateTrimmed, nil, []string{"1", "2"}, 0},
				{"1", StateOpen, []string{"0"}, nil, 1},
				{"2", StateOpen, []string{"0"}, nil, 1},
			},
			roots: []string{"0"}, open: []string{"1", "2"}, epochs: 2,
		},
		{
			name: "merge with one parent trimmed",
			listing: []types.Shard{
				listedShard(sid(1), HashRange{keyH, MaxHashKey}, false),
				listedShard(sid(2), WholeSpace, true, sid(0), sid(1)),
			},
			want: []wantShard{
				{"0", StateTrimmed, nil, []string{"2"}, 0},
				{"1", StateClosed, nil, []string{"2"}, 0},
				{"2", StateOpen, []string{"0", "1"}, nil, 1},
			},
			roots: []string{"0", "1"}, open: []string{"2"}, epochs: 2,
		},
		{
			// 0, 1 and 3 gone: each trimmed shard sorts by its least child
			// start, which keeps the order of the full listing.
			name:    "update shard count with trimmed parents",
			listing: []types.Shard{upd[2], upd[4], upd[5], upd[6]},
			want: []wantShard{
				{"0", StateTrimmed, nil, []string{"2"}, 0},
				{"2", StateOpen, []string{"0"}, nil, 1},
				{"3", StateTrimmed, nil, []string{"6"}, 0},
				{"1", StateTrimmed, nil, []string{"4", "5"}, 0},
				{"4", StateClosed, []string{"1"}, []string{"6"}, 1},
				{"6", StateOpen, []string{"3", "4"}, nil, 2},
				{"5", StateOpen, []string{"1"}, nil, 1},
			},
			roots: []string{"0", "3", "1"}, open: []string{"2", "6", "5"}, epochs: 3,
		},
		{
			name: "only the adjacent parent set",
			listing: []types.Shard{
				listedShard(sid(0), WholeSpace, false),
				func() types.Shard {
					s := listedShard(sid(1), WholeSpace, true)
					s.ParentShardId = aws.String("")
					s.AdjacentParentShardId = aws.String(sid(0))
					return s
				}(),
			},
			want: []wantShard{
				{"0", StateClosed, nil, []string{"1"}, 0},
				{"1", StateOpen, []string{"0"}, nil, 1},
			},
			roots: []string{"0"}, open: []string{"1"}, epochs: 2,
		},
	}
}

func checkHistory(t *testing.T, h history, g *Graph) {
	t.Helper()
	var got []wantShard
	for _, s := range g.Shards() {
		w := wantShard{id: ShortID(s.ID), state: s.State, depth: s.Depth}
		for _, p := range s.Parents {
			w.parents = append(w.parents, ShortID(p))
		}
		for _, c := range s.Children {
			w.children = append(w.children, ShortID(c))
		}
		got = append(got, w)
	}
	if len(got) != len(h.want) {
		t.Fatalf("shards %v\nwant %v", got, h.want)
	}
	for i := range got {
		g, w := got[i], h.want[i]
		if g.id != w.id || g.state != w.state || g.depth != w.depth || !slices.Equal(g.parents, w.parents) || !slices.Equal(g.children, w.children) {
			t.Errorf("shard %d = %+v\nwant      %+v", i, g, w)
		}
	}
	if r := shortIDs(g.Roots()); !slices.Equal(r, h.roots) {
		t.Errorf("Roots = %q, want %q", r, h.roots)
	}
	if o := shortIDs(g.Open()); !slices.Equal(o, h.open) {
		t.Errorf("Open = %q, want %q", o, h.open)
	}
	if g.Epochs() != h.epochs {
		t.Errorf("Epochs = %d, want %d", g.Epochs(), h.epochs)
	}
	if g.Len() != len(h.want) {
		t.Errorf("Len = %d", g.Len())
	}
	if err := g.CheckOpenCoverage(); err != nil {
		t.Errorf("CheckOpenCoverage: %v", err)
	}
	checkInvariants(t, g, h.listing)
}

func TestBuildHistories(t *testing.T) {
	for _, h := range histories() {
		t.Run(h.name, func(t *testing.T) {
			g, err := Build(h.listing)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			checkHistory(t, h, g)
		})
	}
}

// TestBuildShuffled: the listing's order must not change anything.
func TestBuildShuffled(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, h := range histories() {
		t.Run(h.name, func(t *testing.T) {
			for range 25 {
				listing := slices.Clone(h.listing)
				r.Shuffle(len(listing), func(i, j int) { listing[i], listing[j] = listing[j], listing[i] })
				g, err := Build(listing)
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				checkHistory(t, h, g)
			}
		})
	}
}

func TestBuildKeepsFields(t *testing.T) {
	h := histories()[3] // update shard count 2 to 3
	g, err := Build(h.listing)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Shard(sid(6))
	if s == nil || s.Range != (HashRange{keyT1, below(keyT2)}) || !s.IsMerge() || !s.IsOpen() || s.IsTrimmed() {
		t.Fatalf("shard 6 = %+v", s)
	}
	if s.StartingSequenceNumber != "49590338271490256608559692538361571095921575989136588898" || s.EndingSequenceNumber != "" {
		t.Errorf("sequence numbers %q %q", s.StartingSequenceNumber, s.EndingSequenceNumber)
	}
	c := g.Shard(sid(3))
	if c.EndingSequenceNumber != "49590338271512557353758223161503106814194224350642569218" || c.IsMerge() || c.IsOpen() {
		t.Errorf("shard 3 = %+v", c)
	}
	if g.Shard("shardId-000000000099") != nil || g.Shard("6") != nil {
		t.Error("Shard of an unknown id is not nil")
	}
	// Shards hands out a copy of the order; the parent and child slices are capped,
	// so appending to one cannot overwrite another shard's.
	all := g.Shards()
	all[0] = nil
	if g.Shards()[0] == nil {
		t.Error("Shards() returned the graph's own slice")
	}
	p := g.Shard(sid(2)).Parents
	_ = append(p, "x")
	if got := g.Shard(sid(3)).Parents; !slices.Equal(got, []string{sid(0)}) {
		t.Errorf("shard 3 parents = %q after an append to shard 2's", got)
	}
}

func TestBuildEmpty(t *testing.T) {
	for _, in := range [][]types.Shard{nil, {}} {
		g, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		if g.Len() != 0 || g.Epochs() != 0 || len(g.Shards()) != 0 || g.Open() != nil || g.Roots() != nil || g.KeyPath(keyH) != nil {
			t.Errorf("empty graph: %d %d", g.Len(), g.Epochs())
		}
		var ce *CoverageError
		if err := g.CheckOpenCoverage(); !errors.As(err, &ce) || !slices.Equal(ce.Gaps, []HashRange{WholeSpace}) {
			t.Errorf("CheckOpenCoverage = %v", err)
		}
	}
}

// TestBuildMidReshard: a listing taken while a split is under way can show
// the children while the parent still looks open. Build keeps it as it is;
// the open shards then overlap, which CheckOpenCoverage reports.
func TestBuildMidReshard(t *testing.T) {
	g, err := Build([]types.Shard{
		listedShard(sid(0), WholeSpace, true),
		listedShard(sid(1), HashRange{HashKey{}, below(keyH)}, true, sid(0)),
		listedShard(sid(2), HashRange{keyH, MaxHashKey}, true, sid(0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Shard(sid(0)); s.State != StateOpen || !slices.Equal(s.Children, []string{sid(1), sid(2)}) {
		t.Fatalf("parent = %+v", s)
	}
	var ce *CoverageError
	if err := g.CheckOpenCoverage(); !errors.As(err, &ce) || ce.Gaps != nil || !slices.Equal(ce.Overlaps, []HashRange{WholeSpace}) {
		t.Errorf("CheckOpenCoverage = %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	whole := func(id string, parents ...string) types.Shard { return listedShard(id, WholeSpace, true, parents...) }
	withKeys := func(start, end *string) types.Shard {
		s := whole("s")
		s.HashKeyRange = &types.HashKeyRange{StartingHashKey: start, EndingHashKey: end}
		return s
	}
	tests := []struct {
		name    string
		listing []types.Shard
		kind    error
		msg     string
	}{
		{"nil id", []types.Shard{whole("a"), {HashKeyRange: whole("b").HashKeyRange}}, ErrMissingShardID,
			"shard number 2 of the listing has no ShardId"},
		{"empty id", []types.Shard{whole("")}, ErrMissingShardID,
			"shard number 1 of the listing has no ShardId"},
		{"duplicate id", []types.Shard{whole("a"), whole("b"), whole("a")}, ErrDuplicateShardID,
			`shard "a" is listed more than once`},
		{"no hash key range", []types.Shard{{ShardId: aws.String("s")}}, ErrBadHashRange,
			`shard "s" has no HashKeyRange`},
		{"no starting key", []types.Shard{withKeys(nil, aws.String("5"))}, ErrBadHashKey,
			`shard "s" has no StartingHashKey`},
		{"no ending key", []types.Shard{withKeys(aws.String("5"), nil)}, ErrBadHashKey,
			`shard "s" has no EndingHashKey`},
		{"non-canonical key", []types.Shard{withKeys(aws.String("01"), aws.String("5"))}, ErrBadHashKey,
			`shard "s" has a bad StartingHashKey: hash key "01" is not a canonical decimal: no sign, no leading zeros`},
		{"key above 2^128-1", []types.Shard{withKeys(aws.String("0"), aws.String(dec2p128))}, ErrBadHashKey,
			`shard "s" has a bad EndingHashKey: hash key "` + dec2p128 + `" is larger than 2^128-1 (` + dec2p128m1 + `)`},
		{"start above end", []types.Shard{withKeys(aws.String("6"), aws.String("5"))}, ErrBadHashRange,
			`shard "s" has StartingHashKey 6 above its EndingHashKey 5`},
		{"self parent", []types.Shard{whole("a"), whole("b", "b")}, ErrSelfParent,
			`shard "b" names itself as its parent`},
		{"self adjacent parent", []types.Shard{whole("a"), whole("b", "a", "b")}, ErrSelfParent,
			`shard "b" names itself as its parent`},
		{"same parent twice", []types.Shard{whole("a"), whole("b", "a", "a")}, ErrDuplicateParent,
			`shard "b" names "a" as both its parent and its adjacent parent`},
		{"two-cycle", []types.Shard{whole("a", "b"), whole("b", "a")}, ErrCycle,
			`shards form a cycle, each the parent of the next: "b" -> "a" -> "b"`},
		{"three-cycle beside good shards", []types.Shard{
			whole("x"), whole("a", "c"), whole("b", "a"), whole("c", "b"), whole("d", "x"), whole("e", "a"),
		}, ErrCycle, `shards form a cycle, each the parent of the next: "b" -> "c" -> "a" -> "b"`},
		{"cycle through an adjacent parent", []types.Shard{whole("r"), whole("m", "r", "n"), whole("n", "m")}, ErrCycle,
			`shards form a cycle, each the parent of the next: "n" -> "m" -> "n"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Build(tt.listing)
			if err == nil {
				t.Fatalf("Build succeeded with %d shards, want error", g.Len())
			}
			if g != nil {
				t.Error("Build returned a graph with its error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %q does not wrap %v", err, tt.kind)
			}
			if err.Error() != tt.msg {
				t.Errorf("error = %q\nwant    %q", err, tt.msg)
			}
		})
	}
}

func TestKeyPath(t *testing.T) {
	g, err := Build(histories()[3].listing) // update shard count 2 to 3
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := Build(histories()[6].listing) // the same with 0, 1, 3 trimmed
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		key         HashKey
		path        []string
		trimmedPath []string
	}{
		{"key 0", HashKey{}, []string{"0", "2"}, []string{"2"}},
		{"just below t1", below(keyT1), []string{"0", "2"}, []string{"2"}},
		{"t1: through the lower parent of the merge", keyT1, []string{"0", "3", "6"}, []string{"6"}},
		{"2^127-1", below(keyH), []string{"0", "3", "6"}, []string{"6"}},
		{"2^127: through the upper parent of the merge", keyH, []string{"1", "4", "6"}, []string{"4", "6"}},
		{"just below t2", below(keyT2), []string{"1", "4", "6"}, []string{"4", "6"}},
		{"t2", keyT2, []string{"1", "5"}, []string{"5"}},
		{"max", MaxHashKey, []string{"1", "5"}, []string{"5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p := shortIDs(g.KeyPath(tt.key)); !slices.Equal(p, tt.path) {
				t.Errorf("KeyPath = %q, want %q", p, tt.path)
			}
			if p := shortIDs(trimmed.KeyPath(tt.key)); !slices.Equal(p, tt.trimmedPath) {
				t.Errorf("KeyPath with trimmed parents = %q, want %q", p, tt.trimmedPath)
			}
		})
	}
}

func TestSubtreeAncestors(t *testing.T) {
	g, err := Build(histories()[3].listing) // update shard count 2 to 3: order 0 2 3 1 4 6 5
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := Build(histories()[6].listing)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		g         *Graph
		id        string
		subtree   []string
		ancestors []string
	}{
		{g, sid(0), []string{"0", "2", "3", "6"}, nil},
		{g, sid(1), []string{"1", "4", "6", "5"}, nil},
		{g, sid(3), []string{"3", "6"}, []string{"0"}},
		{g, sid(6), []string{"6"}, []string{"0", "3", "1", "4"}},
		{g, sid(5), []string{"5"}, []string{"1"}},
		{g, "shardId-000000000042", nil, nil},
		{trimmed, sid(6), []string{"6"}, []string{"3", "1", "4"}},
		{trimmed, sid(1), []string{"1", "4", "6", "5"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if s := shortIDs(tt.g.Subtree(tt.id)); !slices.Equal(s, tt.subtree) {
				t.Errorf("Subtree = %q, want %q", s, tt.subtree)
			}
			if a := shortIDs(tt.g.Ancestors(tt.id)); !slices.Equal(a, tt.ancestors) {
				t.Errorf("Ancestors = %q, want %q", a, tt.ancestors)
			}
		})
	}
	if g.Subtree("nope") != nil || g.Ancestors("nope") != nil {
		t.Error("unknown id gives shards")
	}
}

// TestBuildGenerated runs long random histories through every invariant, and
// checks that each key's path is a chain from the root to an open shard.
func TestBuildGenerated(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		listing := genHistory(3000, seed)
		g, err := Build(listing)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, g, listing)
		if err := g.CheckOpenCoverage(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		merges := 0
		for _, s := range g.Shards() {
			if s.IsMerge() {
				merges++
			}
		}
		if merges == 0 {
			t.Fatalf("seed %d: history without merges", seed)
		}
		for i := range 300 {
			path := g.KeyPath(PartitionKeyHash(strings.Repeat("k", i%5) + string(rune('A'+i))))
			if len(path) == 0 || path[0].ID != sid(0) || !path[len(path)-1].IsOpen() {
				t.Fatalf("seed %d key %d: path %q", seed, i, shortIDs(path))
			}
			for j := 1; j < len(path); j++ {
				if !slices.Contains(path[j].Parents, path[j-1].ID) || path[j].Depth <= path[j-1].Depth {
					t.Fatalf("seed %d key %d: path %q is not a chain", seed, i, shortIDs(path))
				}
			}
		}
		// A reshuffled listing gives the same order.
		again := slices.Clone(listing)
		slices.Reverse(again)
		g2, err := Build(again)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := shortIDs(g.Shards()), shortIDs(g2.Shards()); !slices.Equal(a, b) {
			t.Fatalf("seed %d: order depends on listing order", seed)
		}
	}
}

func TestState(t *testing.T) {
	for _, tt := range []struct {
		s    State
		want string
	}{{StateOpen, "open"}, {StateClosed, "closed"}, {StateTrimmed, "trimmed"}} {
		if tt.s.String() != tt.want {
			t.Errorf("String = %q, want %q", tt.s, tt.want)
		}
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != `"`+tt.want+`"` {
			t.Errorf("json = %s, %v", b, err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil || back != tt.s {
			t.Errorf("unmarshal %s = %v, %v", b, back, err)
		}
	}
	if s := State(9).String(); s != "State(9)" {
		t.Errorf("State(9) = %q", s)
	}
	if _, err := State(9).MarshalText(); err == nil {
		t.Error("MarshalText of State(9) succeeded")
	}
	var s State
	if err := s.UnmarshalText([]byte("OPEN")); err == nil {
		t.Error(`UnmarshalText("OPEN") succeeded`)
	}
}
