package render

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// TestTreeGoldenColor locks the colours of the terminal tree.
func TestTreeGoldenColor(t *testing.T) {
	g := linBuild(t, linHistories()[2].listing) // split-merge-split
	l := linDoc(g)
	l.Key = NewKeyMark(g, linGoldenKey)
	var b bytes.Buffer
	if err := Tree(&b, g, TreeOptions{Theme: NewTheme(true), ShortIDs: true, KeyPath: l.keyPath()}); err != nil {
		t.Fatal(err)
	}
	treeGolden(t, "split-merge-split.key.tree-color.ansi", b.Bytes())
	// Without the escapes it is the plain tree.
	var plain bytes.Buffer
	Tree(&plain, g, TreeOptions{ShortIDs: true, KeyPath: l.keyPath()})
	if got := ansi.Strip(b.String()); got != plain.String() {
		t.Fatalf("coloured tree without escapes:\n%s\nplain:\n%s", got, plain.String())
	}
	if !strings.Contains(b.String(), "\x1b[") {
		t.Fatal("no colour in the coloured tree")
	}
}

// linCheckTreeLines asserts what every tree must satisfy: a header, then each
// shown shard exactly once as a TreeShard line, after each of its shown
// parents; a TreeMergeRef line for each merge child whose parents are both
// shown, under the first of them drawn; text free of escapes without colour.
func linCheckTreeLines(t *testing.T, g *lineage.Graph, lines []TreeLine, only map[string]bool) {
	t.Helper()
	if len(lines) == 0 || lines[0].Kind != TreeHeader || lines[0].ShardID != "" {
		t.Fatalf("first line %+v is not the header", lines[0])
	}
	shown := func(id string) bool { return only == nil || only[id] }
	at := map[string]int{}
	refs := map[string]int{}
	for i, l := range lines[1:] {
		if strings.Contains(l.Text, "\x1b") {
			t.Fatalf("escape in plain line %q", l.Text)
		}
		switch l.Kind {
		case TreeShard:
			if _, dup := at[l.ShardID]; dup {
				t.Fatalf("shard %s drawn twice", l.ShardID)
			}
			at[l.ShardID] = i
			if !strings.Contains(l.Text, " "+l.ShardID) && !strings.Contains(l.Text, " "+lineage.ShortID(l.ShardID)) {
				t.Fatalf("line %q does not show %s", l.Text, l.ShardID)
			}
		case TreeMergeRef:
			refs[l.ShardID]++
			if _, drawn := at[l.ShardID]; drawn {
				t.Fatalf("back reference to %s after the shard itself", l.ShardID)
			}
		default:
			t.Fatalf("line %d kind %v", i, l.Kind)
		}
	}
	n := 0
	for _, s := range g.Shards() {
		if !shown(s.ID) {
			continue
		}
		n++
		i, ok := at[s.ID]
		if !ok {
			t.Fatalf("shard %s not drawn", s.ID)
		}
		both := 0
		for _, p := range s.Parents {
			if shown(p) {
				both++
				if at[p] >= i {
					t.Fatalf("parent %s drawn at %d, after child %s at %d", p, at[p], s.ID, i)
				}
			}
		}
		wantRefs := 0
		if both == 2 {
			wantRefs = 1
		}
		if refs[s.ID] != wantRefs {
			t.Fatalf("merge child %s has %d back references, want %d", s.ID, refs[s.ID], wantRefs)
		}
	}
	if len(at) != n {
		t.Fatalf("%d shards drawn, %d shown", len(at), n)
	}
}

func TestTreeLinesInvariants(t *testing.T) {
	for _, h := range linHistories() {
		t.Run(h.name, func(t *testing.T) {
			g := linBuild(t, h.listing)
			linCheckTreeLines(t, g, TreeLines(g, TreeOptions{}), nil)
			linCheckTreeLines(t, g, TreeLines(g, TreeOptions{ShortIDs: true, Wide: true}), nil)
			linCheckTreeLines(t, g, TreeLines(g, TreeOptions{Only: linOpenOnly(g)}), linOpenOnly(g))
		})
	}
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("synthetic seed ", seed), func(t *testing.T) {
			g := linBuild(t, linSynthHistory(300, seed))
			linCheckTreeLines(t, g, TreeLines(g, TreeOptions{}), nil)
			linCheckTreeLines(t, g, TreeLines(g, TreeOptions{Only: linOpenOnly(g)}), linOpenOnly(g))
		})
	}
}

// TestTreeMergeReadable spells out the merge design on the smallest case:
// the child under its second parent with "merge of", a back reference
// under the first.
func TestTreeMergeReadable(t *testing.T) {
	g := linBuild(t, linHistories()[1].listing) // 0 + 1 -> 2
	var got []string
	for _, l := range TreeLines(g, TreeOptions{ShortIDs: true}) {
		got = append(got, fmt.Sprintf("%d %s | %s", l.Kind, lineage.ShortID(l.ShardID), l.Text))
	}
	want := []string{
		"0  | SHARD   STATE   SHARE",
		"1 0 | ○ 0     closed    50%",
		"2 2 | └─╌▷ 2                 merge of 0 + 1, drawn under 1",
		"1 1 | ○ 1     closed    50%",
		"1 2 | └─● 2   open     100%  merge of 0 + 1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tree lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTreeWidthCuts(t *testing.T) {
	g := linBuild(t, linHistories()[2].listing)
	for _, color := range []bool{false, true} {
		lines := TreeLines(g, TreeOptions{Theme: NewTheme(color), ShortIDs: true, Width: 24})
		cut := 0
		for _, l := range lines {
			w := ansi.StringWidth(l.Text)
			if w > 24 {
				t.Fatalf("line %q is %d wide", l.Text, w)
			}
			if strings.HasSuffix(ansi.Strip(l.Text), "…") {
				cut++
			}
		}
		if cut == 0 {
			t.Fatalf("color=%v: no line was cut at width 24", color)
		}
		if !strings.HasPrefix(ansi.Strip(lines[1].Text), "○ 0") {
			t.Fatalf("cut line lost its start: %q", lines[1].Text)
		}
	}
}

var linTreeCell = regexp.MustCompile(`^[│├└─ ]*[●○✂] \S+`)

// TestTreeDeepColumnCap: on a terminal, a deep history's tree column is
// aligned only up to what leaves room for STATE and SHARE; deeper lines
// push their own cells right, and nothing is wider than the terminal.
func TestTreeDeepColumnCap(t *testing.T) {
	g := linBuild(t, linSynthHistory(2000, 3))
	const width = 80
	lines := TreeLines(g, TreeOptions{ShortIDs: true, Width: width})
	col := strings.Index(lines[0].Text, "STATE")
	if col < minTreeColumn || col > width-len("STATE  -100%") {
		t.Fatalf("STATE at column %d of %q", col, lines[0].Text)
	}
	aligned, pushed := 0, 0
	for _, l := range lines[1:] {
		if ansi.StringWidth(l.Text) > width {
			t.Fatalf("line %q is wider than %d", l.Text, width)
		}
		if l.Kind != TreeShard {
			continue
		}
		tree := linTreeCell.FindString(l.Text)
		rs := []rune(l.Text)
		switch n := len([]rune(tree)); {
		case tree == "": // deeper than the terminal is wide: cut in the guides
		case n+2 <= col:
			if st := string(rs[col : col+4]); st != "open" && st != "clos" && st != "trim" {
				t.Fatalf("state not at column %d in %q", col, l.Text)
			}
			aligned++
		case n+3 < width:
			st := strings.TrimSuffix(strings.Fields(string(rs[n:]))[0], "…") // perhaps cut at the width
			if st == "" || !strings.HasPrefix("open", st) && !strings.HasPrefix("closed", st) {
				t.Fatalf("deep line %q: %q right after the id, not the state", l.Text, st)
			}
			pushed++
		}
	}
	if aligned == 0 || pushed == 0 {
		t.Fatalf("%d aligned lines, %d pushed: the history does not exercise the cap", aligned, pushed)
	}
}
