package render

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Colours of the graph formats (Graphviz and Mermaid read the same hex).
const (
	gvOpenFill    = "#d8f3dc"
	gvOpenLine    = "#2d6a4f"
	gvClosedFill  = "#f1f3f5"
	gvClosedLine  = "#868e96"
	gvClosedText  = "#495057"
	gvTrimmedLine = "#adb5bd"
	gvTrimmedText = "#868e96"
	gvMergeEdge   = "#7b2cbf"
	gvKey         = "#e8590c"
	gvBlocked     = "#c92a2a"
	gvBlocking    = "#f08c00"
)

// graphLabel is a shard's label, one item a line: short id, state and
// share, and the key mark.
func graphLabel(s *lineage.Shard, onKey bool) string {
	label := lineage.ShortID(s.ID) + "\n" + s.State.String()
	if s.State != lineage.StateTrimmed {
		label += " · " + FormatShare(s.Range.Fraction())
	}
	if onKey {
		label += "\n" + markKey + " key"
	}
	return label
}

// graphTitle names the stream and the selection.
func graphTitle(l *Lineage) string {
	t := "stream " + l.Stream
	if l.Status != "" || l.Mode != "" {
		t += " (" + strings.Trim(l.Status+", "+l.Mode, ", ") + ")"
	}
	switch l.Filter {
	case "open":
		t += ", open shards"
	case "at":
		t += ", shards open at " + l.At.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	if l.Key != nil {
		t += ", key " + strconv.Quote(l.Key.Key)
	}
	return t
}

// edgeKind tells the formats how to draw an edge.
type edgeKind int

const (
	edgeSplit   edgeKind = iota // the child has one parent
	edgeMerge                   // the child has two parents
	edgeTrimmed                 // from a trimmed parent
)

// graphEdges calls fn for every shown parent→child edge, in topological
// order of the child, parents in their listed order.
func graphEdges(l *Lineage, fn func(p, c *lineage.Shard, kind edgeKind)) {
	for _, c := range l.Graph.Shards() {
		if !l.shown(c.ID) {
			continue
		}
		for _, pid := range c.Parents {
			if !l.shown(pid) {
				continue
			}
			p := l.Graph.Shard(pid)
			kind := edgeSplit
			switch {
			case p.State == lineage.StateTrimmed:
				kind = edgeTrimmed
			case len(c.Parents) == 2:
				kind = edgeMerge
			}
			fn(p, c, kind)
		}
	}
}

// LineageDot writes `tree -o dot`: a Graphviz digraph with one node per
// shard (label: short id, state, share), edges parent → child. Open shards
// are filled green with a bold border, closed ones grey, trimmed ones
// dashed; merge edges are purple and bold, edges from trimmed parents
// dashed; the --key path is orange and thick. Shards of one depth share a
// rank, so each generation is a row. Deterministic: nodes and edges in
// topological order.
func LineageDot(w io.Writer, l *Lineage) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	path := l.keyPath()
	bw.WriteString("digraph " + dotQuote(l.Stream) + " {\n")
	bw.WriteString("  graph [label=" + dotQuote(graphTitle(l)) + ", labelloc=t, fontname=\"Helvetica\", fontsize=12, rankdir=TB, nodesep=0.25, ranksep=0.45];\n")
	bw.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, margin=\"0.12,0.04\"];\n")
	bw.WriteString("  edge [color=\"" + gvClosedLine + "\", arrowsize=0.7];\n")
	for _, s := range l.Graph.Shards() {
		if !l.shown(s.ID) {
			continue
		}
		onKey := path[s.ID]
		attrs := []string{"label=" + dotQuote(graphLabel(s, onKey))}
		line := gvClosedLine
		switch s.State {
		case lineage.StateOpen:
			line = gvOpenLine
			attrs = append(attrs, `style="rounded,filled,bold"`, `fillcolor="`+gvOpenFill+`"`)
		case lineage.StateClosed:
			attrs = append(attrs, `fillcolor="`+gvClosedFill+`"`, `fontcolor="`+gvClosedText+`"`)
		case lineage.StateTrimmed:
			line = gvTrimmedLine
			attrs = append(attrs, `style="rounded,dashed"`, `fontcolor="`+gvTrimmedText+`"`)
		}
		if m := l.leaseMark(s); m != nil && (m.Blocked || len(m.Blocking) > 0) {
			// The lease overlay: the reason is in the label, the colour says which side.
			attrs[0] = "label=" + dotQuote(graphLabel(s, onKey)+"\n"+leaseText(m, true))
			if m.Blocked {
				line = gvBlocked
			} else {
				line = gvBlocking
			}
			attrs = append(attrs, "penwidth=3")
		}
		if onKey {
			attrs = append(attrs, `color="`+gvKey+`"`, "penwidth=3")
		} else {
			attrs = append(attrs, `color="`+line+`"`)
		}
		bw.WriteString("  " + dotQuote(s.ID) + " [" + strings.Join(attrs, ", ") + "];\n")
	}
	graphEdges(l, func(p, c *lineage.Shard, kind edgeKind) {
		var attrs []string
		switch {
		case path[p.ID] && path[c.ID]:
			attrs = []string{`color="` + gvKey + `"`, "penwidth=3"}
		case kind == edgeMerge:
			attrs = []string{`color="` + gvMergeEdge + `"`, "penwidth=2"}
		case kind == edgeTrimmed:
			attrs = []string{"style=dashed", `color="` + gvTrimmedLine + `"`}
		}
		bw.WriteString("  " + dotQuote(p.ID) + " -> " + dotQuote(c.ID))
		if len(attrs) > 0 {
			bw.WriteString(" [" + strings.Join(attrs, ", ") + "]")
		}
		bw.WriteString(";\n")
	})
	// One rank per depth: each generation of shards on its own row.
	var ranks [][]string
	for _, s := range l.Graph.Shards() {
		if !l.shown(s.ID) {
			continue
		}
		for len(ranks) <= s.Depth {
			ranks = append(ranks, nil)
		}
		ranks[s.Depth] = append(ranks[s.Depth], dotQuote(s.ID))
	}
	for _, r := range ranks {
		if len(r) > 1 {
			bw.WriteString("  { rank=same; " + strings.Join(r, "; ") + "; }\n")
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// dotQuote makes a Graphviz double-quoted string; a newline becomes \n
// (Graphviz's centred line break).
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// LineageMermaid writes `tree -o mermaid`: a Mermaid flowchart (top down)
// with the content of LineageDot. Node ids are s<number> for service ids
// (s7 for shardId-000000000007), n<position> otherwise, so they are safe
// in Mermaid whatever the shard ids hold. Merge edges are thick (==>),
// edges from trimmed parents dotted (-.->); classes shardOpen, shardClosed,
// shardTrimmed and keyPath colour the nodes, linkStyle the key's edges.
func LineageMermaid(w io.Writer, l *Lineage) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	path := l.keyPath()
	shards := l.Graph.Shards()
	ids := mermaidIDs(shards)
	// The front matter is YAML; a JSON string is a valid YAML scalar.
	title, err := json.Marshal(graphTitle(l))
	if err != nil {
		return err
	}
	bw.WriteString("---\ntitle: " + string(title) + "\n---\n")
	bw.WriteString("flowchart TD\n")
	mermaidClass := [...]string{lineage.StateOpen: "shardOpen", lineage.StateClosed: "shardClosed", lineage.StateTrimmed: "shardTrimmed"}
	var byState [len(mermaidClass)][]string
	var onKey []string
	for _, s := range shards {
		if !l.shown(s.ID) {
			continue
		}
		id := ids[s.ID]
		k := path[s.ID]
		label := strings.ReplaceAll(mermaidText(graphLabel(s, k)), "\n", "<br/>")
		bw.WriteString("  " + id + "[\"" + label + "\"]\n")
		if st := int(s.State); st >= 0 && st < len(byState) {
			byState[st] = append(byState[st], id)
		}
		if k {
			onKey = append(onKey, id)
		}
	}
	var keyEdges []string
	n := 0
	graphEdges(l, func(p, c *lineage.Shard, kind edgeKind) {
		arrow := " --> "
		switch kind {
		case edgeMerge:
			arrow = " ==> "
		case edgeTrimmed:
			arrow = " -.-> "
		}
		bw.WriteString("  " + ids[p.ID] + arrow + ids[c.ID] + "\n")
		if path[p.ID] && path[c.ID] {
			keyEdges = append(keyEdges, strconv.Itoa(n))
		}
		n++
	})
	bw.WriteString("  classDef shardOpen fill:" + gvOpenFill + ",stroke:" + gvOpenLine + ",stroke-width:2px\n")
	bw.WriteString("  classDef shardClosed fill:" + gvClosedFill + ",stroke:" + gvClosedLine + ",color:" + gvClosedText + "\n")
	bw.WriteString("  classDef shardTrimmed fill:#ffffff,stroke:" + gvTrimmedLine + ",stroke-dasharray:4 3,color:" + gvTrimmedText + "\n")
	bw.WriteString("  classDef keyPath stroke:" + gvKey + ",stroke-width:3px\n")
	for st, list := range byState {
		if len(list) > 0 {
			bw.WriteString("  class " + strings.Join(list, ",") + " " + mermaidClass[st] + "\n")
		}
	}
	if len(onKey) > 0 {
		bw.WriteString("  class " + strings.Join(onKey, ",") + " keyPath\n")
	}
	if len(keyEdges) > 0 {
		bw.WriteString("  linkStyle " + strings.Join(keyEdges, ",") + " stroke:" + gvKey + ",stroke-width:3px\n")
	}
	return bw.Flush()
}

// mermaidIDs gives each shard a Mermaid-safe node id: s<number> for ids of
// the service's form when the numbers are unique, else n<position>.
func mermaidIDs(shards []*lineage.Shard) map[string]string {
	ids := make(map[string]string, len(shards))
	used := make(map[string]bool, len(shards))
	for _, s := range shards {
		short := lineage.ShortID(s.ID)
		id := "s" + short
		if short == s.ID || !isDigits(short) || used[id] {
			id = ""
		}
		ids[s.ID] = id
		if id != "" {
			used[id] = true
		}
	}
	for i, s := range shards {
		if ids[s.ID] == "" {
			ids[s.ID] = "n" + strconv.Itoa(i)
		}
	}
	return ids
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// mermaidText escapes text for a quoted Mermaid label or title: quotes
// and markup characters become entity codes.
func mermaidText(s string) string {
	return mermaidEscaper.Replace(s)
}

var mermaidEscaper = strings.NewReplacer(`"`, "#quot;", "#", "#35;", "<", "#lt;", ">", "#gt;")
