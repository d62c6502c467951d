package render

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// format renders l in one format the way cmd does (no colour).
type linFormat struct {
	ext    string
	render func(*bytes.Buffer, *Lineage) error
}

var (
	linFmtTree = linFormat{"tree.txt", func(b *bytes.Buffer, l *Lineage) error {
		return Tree(b, l.Graph, TreeOptions{Theme: NewTheme(false), ShortIDs: true, Only: l.Only, KeyPath: l.keyPath()})
	}}
	linFmtTreeWide = linFormat{"tree-wide.txt", func(b *bytes.Buffer, l *Lineage) error {
		return Tree(b, l.Graph, TreeOptions{Wide: true, Only: l.Only, KeyPath: l.keyPath()})
	}}
	linFmtTable = linFormat{"table.txt", func(b *bytes.Buffer, l *Lineage) error {
		return LineageTable(b, l, TableOptions{Theme: NewTheme(false)})
	}}
	linFmtTableWide = linFormat{"table-wide.txt", func(b *bytes.Buffer, l *Lineage) error {
		return LineageTable(b, l, TableOptions{Wide: true})
	}}
	linFmtJSON    = linFormat{"json", func(b *bytes.Buffer, l *Lineage) error { return LineageJSON(b, l) }}
	linFmtDot     = linFormat{"dot", func(b *bytes.Buffer, l *Lineage) error { return LineageDot(b, l) }}
	linFmtMermaid = linFormat{"mmd", func(b *bytes.Buffer, l *Lineage) error { return LineageMermaid(b, l) }}

	linAllFormats = []linFormat{linFmtTree, linFmtTreeWide, linFmtTable, linFmtTableWide, linFmtJSON, linFmtDot, linFmtMermaid}
)

func linRenderGolden(t *testing.T, name string, l *Lineage, formats []linFormat) {
	t.Helper()
	for _, f := range formats {
		var b bytes.Buffer
		if err := f.render(&b, l); err != nil {
			t.Fatalf("%s: %v", f.ext, err)
		}
		treeGolden(t, name+"."+f.ext, b.Bytes())
	}
}

// TestLineageGolden renders every hand-built history in every format.
func TestLineageGolden(t *testing.T) {
	for _, h := range linHistories() {
		t.Run(h.name, func(t *testing.T) {
			linRenderGolden(t, h.name, linDoc(linBuild(t, h.listing)), linAllFormats)
		})
	}
}

// TestLineageGoldenKey marks the path of linGoldenKey: through the merge of
// 1 + 2 (split-merge-split) and through the intermediate shards 3 and 6 of
// an UpdateShardCount (update-shard-count).
func TestLineageGoldenKey(t *testing.T) {
	want := map[string][]string{
		"split-merge-split":  {linSID(0), linSID(1), linSID(3), linSID(5)},
		"update-shard-count": {linSID(0), linSID(3), linSID(6)},
	}
	for _, h := range linHistories() {
		path, ok := want[h.name]
		if !ok {
			continue
		}
		t.Run(h.name, func(t *testing.T) {
			l := linDoc(linBuild(t, h.listing))
			l.Key = NewKeyMark(l.Graph, linGoldenKey)
			var got []string
			for _, s := range l.Graph.Shards() {
				if l.Key.Path[s.ID] {
					got = append(got, s.ID)
				}
			}
			if !slices.Equal(got, path) {
				t.Fatalf("key path %q, want %q", got, path)
			}
			linRenderGolden(t, h.name+".key", l, linAllFormats)
		})
	}
}

// TestLineageGoldenFiltered: --open and --at select shards; relatives
// outside the selection are named, not drawn.
func TestLineageGoldenFiltered(t *testing.T) {
	h := linHistories()[3]
	if h.name != "update-shard-count" {
		t.Fatal(h.name)
	}
	g := linBuild(t, h.listing)

	l := linDoc(g)
	l.Only, l.Filter = linOpenOnly(g), "open"
	linRenderGolden(t, h.name+".open", l, linAllFormats)

	// Between the two splits and the merge: 2, 3, 4 and 5 were open.
	l = linDoc(g)
	l.Only, l.Filter, l.At = map[string]bool{linSID(2): true, linSID(3): true, linSID(4): true, linSID(5): true}, "at", linGoldenAt
	l.Key = NewKeyMark(g, linGoldenKey)
	linRenderGolden(t, h.name+".at", l, []linFormat{linFmtTree, linFmtTable, linFmtJSON, linFmtDot, linFmtMermaid})
}

// TestLineageGoldenKeyIgnored: a stream that ignores partition keys gets a
// note and no path.
func TestLineageGoldenKeyIgnored(t *testing.T) {
	l := linDoc(linBuild(t, linHistories()[0].listing))
	l.Mode = "ON_DEMAND"
	l.Key = &KeyMark{Key: linGoldenKey, Hash: lineage.PartitionKeyHash(linGoldenKey), NoPath: "records of this stream are placed without regard to their partition keys (RecordDistributionStrategy AUTO)"}
	linRenderGolden(t, "single-split.key-ignored", l, []linFormat{linFmtTree, linFmtJSON})
}

// TestLineageGoldenSynthetic10000: the JSON of a 10,000-shard history with
// trimmed roots, stored gzipped.
func TestLineageGoldenSynthetic10000(t *testing.T) {
	listing := linSynthHistory(10000, 1)
	g := linBuild(t, listing)
	var b bytes.Buffer
	if err := LineageJSON(&b, linDoc(g)); err != nil {
		t.Fatal(err)
	}
	treeGolden(t, "synthetic-10000.json.gz", b.Bytes())
	linCheckJSON(t, b.Bytes(), g)
}

// linJSONDoc reads `tree -o json` back.
type linJSONDoc struct {
	Stream, StreamArn, Status, Mode string
	Shards                          []struct {
		ShardID      string          `json:"shardId"`
		State        string          `json:"state"`
		Parents      *[]string       `json:"parents"`
		Children     []string        `json:"children"`
		HashKeyRange *map[string]any `json:"hashKeyRange"`
		Fraction     *float64        `json:"keyspaceFraction"`
		Seq          *map[string]any `json:"sequenceNumberRange"`
		Depth        *int            `json:"depth"`
	} `json:"shards"`
}

// linCheckJSON checks the JSON document's shape independently of
// the golden file: every shard once in topological order, trimmed shards
// with exactly shardId, state and children, fractions summing to 1 over
// the open shards.
func linCheckJSON(t *testing.T, data []byte, g *lineage.Graph) {
	t.Helper()
	var d linJSONDoc
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	want := g.Shards()
	if len(d.Shards) != len(want) {
		t.Fatalf("%d shards in JSON, graph has %d", len(d.Shards), len(want))
	}
	var raw struct {
		Shards []map[string]json.RawMessage `json:"shards"`
	}
	json.Unmarshal(data, &raw)
	openSum := 0.0
	for i, s := range d.Shards {
		w := want[i]
		if s.ShardID != w.ID || s.State != w.State.String() || !slices.Equal(s.Children, w.Children) && len(w.Children) > 0 {
			t.Fatalf("shard %d = %+v, graph has %+v", i, s, *w)
		}
		if w.State == lineage.StateTrimmed {
			if len(raw.Shards[i]) != 3 {
				t.Fatalf("trimmed shard %s has fields %v", w.ID, linFields(raw.Shards[i]))
			}
			continue
		}
		if s.Parents == nil || !slices.Equal(*s.Parents, w.Parents) && len(w.Parents) > 0 || s.HashKeyRange == nil || s.Fraction == nil || s.Seq == nil || s.Depth == nil || *s.Depth != w.Depth {
			t.Fatalf("shard %s misses fields: %s", w.ID, linFields(raw.Shards[i]))
		}
		if (*s.HashKeyRange)["start"] != w.Range.Start.String() || (*s.HashKeyRange)["end"] != w.Range.End.String() {
			t.Fatalf("shard %s: hashKeyRange %v", w.ID, *s.HashKeyRange)
		}
		if w.State == lineage.StateOpen {
			openSum += *s.Fraction
		}
	}
	if math.Abs(openSum-1) > 1e-9 {
		t.Fatalf("open shares sum to %v", openSum)
	}
}

func linFields(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestFormatShare(t *testing.T) {
	third, _ := lineage.EvenLayout(3)
	for _, c := range []struct {
		f    float64
		want string
	}{
		{1, "100%"},
		{0.5, "50%"},
		{0.25, "25%"},
		{third[0].Fraction(), "33.33%"},
		{1.0 / 8192, "0.01221%"},
		{1.0 / 64, "1.562%"},
		{0.125, "12.5%"},
		{0.9999999, "99.99999%"}, // never rounds up to 100%
		{1 - 1.0/(1<<40), "99.9999999999%"},
		{math.Ldexp(2, -128), "5.877e-37%"},
		{0, "0%"},
	} {
		if got := FormatShare(c.f); got != c.want {
			t.Errorf("FormatShare(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// TestLineageJSONShape checks the documented field names and the trimmed
// shards' reduced form on the hand-built histories.
func TestLineageJSONShape(t *testing.T) {
	for _, h := range linHistories() {
		t.Run(h.name, func(t *testing.T) {
			g := linBuild(t, h.listing)
			var b bytes.Buffer
			if err := LineageJSON(&b, linDoc(g)); err != nil {
				t.Fatal(err)
			}
			linCheckJSON(t, b.Bytes(), g)
			var top map[string]json.RawMessage
			json.Unmarshal(b.Bytes(), &top)
			if got := strings.Join(linFields(top), ","); got != "mode,shards,status,stream,streamArn" {
				t.Fatalf("top-level fields %s", got)
			}
		})
	}
}

// TestDotMermaidEdges: every parent→child edge appears once in both graph
// formats, merges drawn thick, trimmed parents dashed.
func TestDotMermaidEdges(t *testing.T) {
	for _, h := range linHistories() {
		t.Run(h.name, func(t *testing.T) {
			g := linBuild(t, h.listing)
			var dot, mmd bytes.Buffer
			LineageDot(&dot, linDoc(g))
			LineageMermaid(&mmd, linDoc(g))
			dotEdges := regexp.MustCompile(`(?m)^  "([^"]+)" -> "([^"]+)"`).FindAllStringSubmatch(dot.String(), -1)
			mmdEdges := regexp.MustCompile(`(?m)^  s(\d+) (-->|==>|-\.->) s(\d+)$`).FindAllStringSubmatch(mmd.String(), -1)
			var want []string
			for _, c := range g.Shards() {
				for _, p := range c.Parents {
					want = append(want, p+">"+c.ID)
				}
			}
			if len(dotEdges) != len(want) || len(mmdEdges) != len(want) {
				t.Fatalf("dot has %d edges, mermaid %d, graph %d", len(dotEdges), len(mmdEdges), len(want))
			}
			for i, e := range dotEdges {
				if e[1]+">"+e[2] != want[i] {
					t.Errorf("dot edge %d: %s -> %s, want %s", i, e[1], e[2], want[i])
				}
				m := mmdEdges[i]
				if linSID(linAtoi(m[1]))+">"+linSID(linAtoi(m[3])) != want[i] {
					t.Errorf("mermaid edge %d: %v, want %s", i, m[0], want[i])
				}
				c := g.Shard(e[2])
				wantArrow := "-->"
				switch {
				case g.Shard(e[1]).IsTrimmed():
					wantArrow = "-.->"
				case c.IsMerge():
					wantArrow = "==>"
				}
				if m[2] != wantArrow {
					t.Errorf("mermaid edge %s uses %s, want %s", m[0], m[2], wantArrow)
				}
			}
		})
	}
}

func linAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestMermaidIDsAreSafe(t *testing.T) {
	// Emulator-style and odd ids fall back to positional ids.
	shards := []*lineage.Shard{{ID: "shardId-000000000007"}, {ID: "shardId-7"}, {ID: "weird id\"x"}, {ID: "shardId-000000000010"}}
	got := mermaidIDs(shards)
	want := map[string]string{"shardId-000000000007": "s7", "shardId-7": "n1", "weird id\"x": "n2", "shardId-000000000010": "s10"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("mermaid id of %q = %q, want %q", k, got[k], v)
		}
	}
}
