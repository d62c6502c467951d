package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// Integration tests of `tree` on the package's emulator (kinesis-mock by
// default; KINESIS_SHARDS_TEST_BACKEND=kinesalite for the second backend):
// a real stream taken through split, merge and split, and a 150-shard
// stream (two pages on kinesis-mock), each rendered in every format and
// checked against the service's own listing, paged by hand here.

// treeListedShard is the service's word on one shard.
type treeListedShard struct {
	id         string
	parents    []string
	children   []string
	open       bool
	start, end string // hash keys
	seqStart   string
	seqEnd     string
}

// treeServiceListing pages ListShards by hand (NextToken alone on later pages)
// and returns the shards by id, their ids in listing order, and the number
// of pages.
func treeServiceListing(t *testing.T, c *kinesis.Client, name string) (map[string]*treeListedShard, []string, int) {
	t.Helper()
	byID := map[string]*treeListedShard{}
	var order []string
	pages := 0
	in := &kinesis.ListShardsInput{StreamName: aws.String(name)}
	for {
		out, err := c.ListShards(t.Context(), in)
		if err != nil {
			t.Fatalf("list shards of %s: %v", name, err)
		}
		pages++
		for _, s := range out.Shards {
			ls := &treeListedShard{id: aws.ToString(s.ShardId), start: aws.ToString(s.HashKeyRange.StartingHashKey), end: aws.ToString(s.HashKeyRange.EndingHashKey)}
			for _, p := range []*string{s.ParentShardId, s.AdjacentParentShardId} {
				if aws.ToString(p) != "" {
					ls.parents = append(ls.parents, *p)
				}
			}
			if r := s.SequenceNumberRange; r != nil {
				ls.seqStart, ls.seqEnd = aws.ToString(r.StartingSequenceNumber), aws.ToString(r.EndingSequenceNumber)
			}
			ls.open = ls.seqEnd == ""
			if _, dup := byID[ls.id]; !dup {
				order = append(order, ls.id)
			}
			byID[ls.id] = ls
		}
		if out.NextToken == nil {
			break
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
	for _, id := range order {
		for _, p := range byID[id].parents {
			if byID[p] != nil {
				byID[p].children = append(byID[p].children, id)
			}
		}
	}
	return byID, order, pages
}

// share is the key-space share of a listed shard, as the tool prints it.
func (ls *treeListedShard) share(t *testing.T) string {
	t.Helper()
	s, err1 := lineage.ParseHashKey(ls.start)
	e, err2 := lineage.ParseHashKey(ls.end)
	if err1 != nil || err2 != nil {
		t.Fatalf("shard %s: bad hash range %s..%s", ls.id, ls.start, ls.end)
	}
	return render.FormatShare(lineage.HashRange{Start: s, End: e}.Fraction())
}

// treeSplitMiddle splits a shard at the exact middle of its listed range (never
// a hard-coded key: kinesis-mock's layouts are its own) and waits for ACTIVE.
func treeSplitMiddle(t *testing.T, e *emulator.Emulator, c *kinesis.Client, name, id string) {
	t.Helper()
	byID, _, _ := treeServiceListing(t, c, name)
	s := byID[id]
	if s == nil || !s.open {
		t.Fatalf("split: shard %s of %s is not open", id, name)
	}
	start, _ := lineage.ParseHashKey(s.start)
	end, _ := lineage.ParseHashKey(s.end)
	k := lineage.HashRange{Start: start, End: end}.Midpoint()
	if _, err := c.SplitShard(t.Context(), &kinesis.SplitShardInput{StreamName: aws.String(name), ShardToSplit: aws.String(id), NewStartingHashKey: aws.String(k.String())}); err != nil {
		t.Fatalf("split %s: %v", id, err)
	}
	e.WaitActive(t, c, name)
}

// treeMergeAdjacent merges two adjacent open shards, the lower range first, and
// waits for ACTIVE.
func treeMergeAdjacent(t *testing.T, e *emulator.Emulator, c *kinesis.Client, name, a, b string) {
	t.Helper()
	byID, _, _ := treeServiceListing(t, c, name)
	sa, _ := lineage.ParseHashKey(byID[a].start)
	sb, _ := lineage.ParseHashKey(byID[b].start)
	if sb.Cmp(sa) < 0 {
		a, b = b, a
	}
	if _, err := c.MergeShards(t.Context(), &kinesis.MergeShardsInput{StreamName: aws.String(name), ShardToMerge: aws.String(a), AdjacentShardToMerge: aws.String(b)}); err != nil {
		t.Fatalf("merge %s + %s: %v", a, b, err)
	}
	e.WaitActive(t, c, name)
}

// treeOpenShards returns the ids of the open shards, by hash range.
func treeOpenShards(t *testing.T, c *kinesis.Client, name string) []string {
	t.Helper()
	byID, order, _ := treeServiceListing(t, c, name)
	var open []string
	for _, id := range order {
		if byID[id].open {
			open = append(open, id)
		}
	}
	slices.SortFunc(open, func(x, y string) int {
		a, _ := lineage.ParseHashKey(byID[x].start)
		b, _ := lineage.ParseHashKey(byID[y].start)
		return a.Cmp(b)
	})
	return open
}

// treeSplitMergeSplit takes a fresh one-shard stream through split,
// merge and split: 0 → 1 + 2, 1 + 2 → 3, 3 → 4 + 5. When the backend
// honours ShardFilter, it returns a time at which exactly 1 and 2 were
// open (kinesis-mock keeps shard times to the second, hence the pauses).
func treeSplitMergeSplit(t *testing.T, e *emulator.Emulator, c *kinesis.Client, name string) (between time.Time) {
	t.Helper()
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	e.CreateStream(t, c, name, 1)
	first := treeOpenShards(t, c, name)
	if len(first) != 1 {
		t.Fatalf("a one-shard stream has open shards %v", first)
	}
	treeSplitMiddle(t, e, c, name, first[0])
	halves := treeOpenShards(t, c, name)
	if len(halves) != 2 {
		t.Fatalf("after the split: open %v", halves)
	}
	if e.Caps.ShardFilter {
		time.Sleep(1100 * time.Millisecond)
		between = time.Now()
		time.Sleep(1100 * time.Millisecond)
	}
	treeMergeAdjacent(t, e, c, name, halves[0], halves[1])
	merged := treeOpenShards(t, c, name)
	if len(merged) != 1 {
		t.Fatalf("after the merge: open %v", merged)
	}
	treeSplitMiddle(t, e, c, name, merged[0])
	return between
}

func TestTreeIntegrationSplitMergeSplit(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	between := treeSplitMergeSplit(t, e, c, name)
	byID, order, _ := treeServiceListing(t, c, name)
	if len(order) != 6 {
		t.Fatalf("the service lists %d shards after split, merge, split: %v", len(order), order)
	}
	// The service numbers children in order: 0 → 1 + 2, 1 + 2 → 3, 3 → 4 + 5.
	want := map[string][]string{treeSID(1): {treeSID(0)}, treeSID(2): {treeSID(0)}, treeSID(3): {treeSID(1), treeSID(2)}, treeSID(4): {treeSID(3)}, treeSID(5): {treeSID(3)}}
	for id, parents := range want {
		if byID[id] == nil || !slices.Equal(byID[id].parents, parents) {
			t.Fatalf("the service's lineage is not the expected one: %s has %+v", id, byID[id])
		}
	}

	t.Run("formats", func(t *testing.T) {
		for _, out := range treeFormats {
			r := runCLI(t, "", "", "tree", name, "-o", out)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("-o %s: exit %d, stderr %q", out, r.code, r.stderr)
			}
			checkTreeFormat(t, out, r.stdout, byID, nil)
		}
		// Wide and keyed variants parse the same way.
		for _, out := range []string{"tree", "table"} {
			r := runCLI(t, "", "", "tree", name, "-o", out, "--wide")
			if r.code != 0 {
				t.Fatalf("-o %s --wide: exit %d, stderr %q", out, r.code, r.stderr)
			}
			checkTreeFormat(t, out, r.stdout, byID, nil)
		}
	})

	t.Run("exact tree", func(t *testing.T) {
		// One shard split in exact halves, merged, split in halves again:
		// every share is known, so the whole picture is.
		r := runCLI(t, "", "", "tree", name)
		wantTree := `SHARD                         STATE   SHARE
○ shardId-000000000000        closed   100%  split into shardId-000000000001 + shardId-000000000002
├─○ shardId-000000000001      closed    50%
│ └─╌▷ shardId-000000000003                  merge of shardId-000000000001 + shardId-000000000002, drawn under shardId-000000000002
└─○ shardId-000000000002      closed    50%
  └─○ shardId-000000000003    closed   100%  merge of shardId-000000000001 + shardId-000000000002; split into shardId-000000000004 + shardId-000000000005
    ├─● shardId-000000000004  open      50%
    └─● shardId-000000000005  open      50%
`
		if r.stdout != wantTree {
			t.Fatalf("tree:\n%s\nwant:\n%s", r.stdout, wantTree)
		}
		// The real binary, configured from the environment only, prints the same.
		if b := runBinary(t, nil, "", "tree", name); b.code != 0 || b.stdout != wantTree {
			t.Fatalf("binary: exit %d, stderr %q, stdout:\n%s", b.code, b.stderr, b.stdout)
		}
	})

	t.Run("key", func(t *testing.T) {
		const key = "customer-4"
		h := lineage.PartitionKeyHash(key)
		var path []string
		for _, id := range order {
			s, _ := lineage.ParseHashKey(byID[id].start)
			en, _ := lineage.ParseHashKey(byID[id].end)
			if (lineage.HashRange{Start: s, End: en}).Contains(h) {
				path = append(path, id)
			}
		}
		if len(path) != 4 {
			t.Fatalf("key %s is in %v", key, path)
		}
		// The service itself puts the key on the open shard of the path.
		res := e.Put(t, c, name, []emulator.Rec{{PartitionKey: key, Data: []byte("x")}})
		if got := aws.ToString(res[0].ShardId); got != path[len(path)-1] {
			t.Fatalf("the service put key %s on %s; the path ends at %s", key, got, path[len(path)-1])
		}
		for _, out := range treeFormats {
			r := runCLI(t, "", "", "tree", name, "-o", out, "--key", key)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("-o %s --key: exit %d, stderr %q", out, r.code, r.stderr)
			}
			checkTreeFormat(t, out, r.stdout, byID, path)
		}
	})

	t.Run("open", func(t *testing.T) {
		r := runCLI(t, "", "", "tree", name, "--open", "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if got := treeJSONIDs(t, r.stdout); !slices.Equal(got, []string{treeSID(4), treeSID(5)}) {
			t.Fatalf("--open shows %v", got)
		}
		r = runCLI(t, "", "", "tree", name, "--open")
		wantTree := `SHARD                   STATE  SHARE
● shardId-000000000004  open     50%  child of shardId-000000000003
● shardId-000000000005  open     50%  child of shardId-000000000003
`
		if r.stdout != wantTree {
			t.Fatalf("--open tree:\n%s\nwant:\n%s", r.stdout, wantTree)
		}
	})

	t.Run("at", func(t *testing.T) {
		// Before the stream existed nothing was open (kinesis-mock would
		// list every shard; the tool knows better from the creation time).
		r := runCLI(t, "", "", "tree", name, "--at", "2020-01-01T00:00:00Z", "-o", "json")
		if got := treeJSONIDs(t, r.stdout); r.code != 0 || len(got) != 0 || !strings.Contains(r.stderr, "was created at") {
			t.Fatalf("--at before creation: exit %d, shards %v, stderr %q", r.code, got, r.stderr)
		}
		if e.Caps.ShardFilter {
			// kinesis-mock keeps shard times to the second: leave the
			// second of the last split behind.
			time.Sleep(1100 * time.Millisecond)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		r = runCLI(t, "", "", "tree", name, "--at", now, "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !e.Caps.ShardFilter {
			// kinesalite lists every shard whatever the filter: the tool
			// notices and shows everything, with a warning.
			if !strings.Contains(r.stderr, "warning: cannot tell which shards were open at") || len(treeJSONIDs(t, r.stdout)) != 6 {
				t.Fatalf("unfiltered answer: stderr %q, shards %v", r.stderr, treeJSONIDs(t, r.stdout))
			}
			return
		}
		if got := treeJSONIDs(t, r.stdout); !slices.Equal(got, []string{treeSID(4), treeSID(5)}) || r.stderr != "" {
			t.Fatalf("--at now shows %v (stderr %q)", got, r.stderr)
		}
		r = runCLI(t, "", "", "tree", name, "--at", between.UTC().Format(time.RFC3339Nano), "-o", "json")
		if got := treeJSONIDs(t, r.stdout); !slices.Equal(got, []string{treeSID(1), treeSID(2)}) || r.stderr != "" {
			t.Fatalf("--at between split and merge shows %v (stderr %q)", got, r.stderr)
		}
		var d struct {
			Filter string `json:"filter"`
			Shards []struct {
				State string `json:"state"`
			} `json:"shards"`
		}
		json.Unmarshal([]byte(r.stdout), &d)
		if d.Filter != "at" || d.Shards[0].State != "closed" || d.Shards[1].State != "closed" {
			t.Fatalf("--at shards must carry their real (closed) states: %s", r.stdout)
		}
		r = runCLI(t, "", "", "tree", name, "--at", between.UTC().Format(time.RFC3339Nano))
		wantTree := `SHARD                   STATE   SHARE
○ shardId-000000000001  closed    50%  child of shardId-000000000000; merged into shardId-000000000003
○ shardId-000000000002  closed    50%  child of shardId-000000000000; merged into shardId-000000000003
`
		if r.stdout != wantTree {
			t.Fatalf("--at tree:\n%s\nwant:\n%s", r.stdout, wantTree)
		}
	})

	t.Run("graphviz", func(t *testing.T) {
		dot, err := exec.LookPath("dot")
		if err != nil {
			t.Skip("Graphviz dot is not on PATH (Debian: apt-get install graphviz)")
		}
		r := runCLI(t, "", "", "tree", name, "-o", "dot", "--key", "customer-4")
		svg := treeRunDot(t, dot, r.stdout)
		if n := strings.Count(svg, `class="node"`); n != 6 {
			t.Fatalf("the SVG has %d nodes, want 6", n)
		}
		if n := strings.Count(svg, `class="edge"`); n != 6 {
			t.Fatalf("the SVG has %d edges, want 6 (both edges of the merge)", n)
		}
	})
}

func treeRunDot(t *testing.T, dot, input string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v: %s\ninput:\n%s", err, errOut.String(), input)
	}
	if !strings.Contains(out.String(), "<svg") {
		t.Fatalf("dot -Tsvg wrote no SVG: %.200s", out.String())
	}
	return out.String()
}

// TestTreeIntegration150 renders a 150-shard stream, more than one
// ListShards page on kinesis-mock (100 a page), in every format.
func TestTreeIntegration150(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 150)
	byID, order, pages := treeServiceListing(t, c, name)
	if len(order) != 150 {
		t.Fatalf("the service lists %d shards", len(order))
	}
	if e.Caps.MaxPageSize > 0 && pages < 2 {
		t.Fatalf("%s listed 150 shards in %d page(s); the test needs paging", e.Backend, pages)
	}
	for _, out := range treeFormats {
		r := runCLI(t, "", "", "tree", name, "-o", out)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("-o %s: exit %d, stderr %q", out, r.code, r.stderr)
		}
		checkTreeFormat(t, out, r.stdout, byID, nil)
	}
	// The real binary pages the same way.
	b := runBinary(t, nil, "", "tree", name, "-o", "json", "--open")
	if b.code != 0 {
		t.Fatalf("binary: exit %d: %s", b.code, b.stderr)
	}
	if got := treeJSONIDs(t, b.stdout); len(got) != 150 {
		t.Fatalf("binary --open: %d shards", len(got))
	}
	if dot, err := exec.LookPath("dot"); err == nil {
		r := runCLI(t, "", "", "tree", name, "-o", "dot")
		if n := strings.Count(treeRunDot(t, dot, r.stdout), `class="node"`); n != 150 {
			t.Fatalf("the SVG has %d nodes", n)
		}
	}
}

func TestTreeIntegrationUnknownStream(t *testing.T) {
	e := emulator.Require(t)
	name := emulator.StreamName(t)
	r := runCLI(t, "", "", "tree", name)
	want := fmt.Sprintf("error: stream %q was not found in region us-east-1 (endpoint %s)\n", name, e.Endpoint)
	if r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, want)
	}
}

func treeSID(n int) string { return fmt.Sprintf("shardId-%012d", n) }

func treeJSONIDs(t *testing.T, doc string) []string {
	t.Helper()
	var d struct {
		Shards []struct {
			ShardID string `json:"shardId"`
		} `json:"shards"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	ids := []string{}
	for _, s := range d.Shards {
		ids = append(ids, s.ShardID)
	}
	return ids
}

// checkTreeFormat checks one rendering (no colour, full ids: stdout is not a
// terminal) against the service's listing: every listed shard once, with
// the service's state, parents, children and share, parents before
// children, both edges of each merge, and the key path where given.
func checkTreeFormat(t *testing.T, format, out string, byID map[string]*treeListedShard, keyPath []string) {
	t.Helper()
	onKey := map[string]bool{}
	for _, id := range keyPath {
		onKey[id] = true
	}
	state := func(ls *treeListedShard) string {
		if ls.open {
			return "open"
		}
		return "closed"
	}
	seen := map[string]int{}
	see := func(id string) {
		if byID[id] == nil {
			t.Fatalf("-o %s shows %s, which the service does not list", format, id)
		}
		if _, dup := seen[id]; dup {
			t.Fatalf("-o %s shows %s twice", format, id)
		}
		seen[id] = len(seen)
	}
	var edges []string
	switch format {
	case "json":
		var d struct {
			Stream string `json:"stream"`
			Shards []struct {
				ShardID  string            `json:"shardId"`
				State    string            `json:"state"`
				Parents  []string          `json:"parents"`
				Children []string          `json:"children"`
				Range    map[string]string `json:"hashKeyRange"`
				Fraction float64           `json:"keyspaceFraction"`
				Seq      map[string]string `json:"sequenceNumberRange"`
				KeyPath  *bool             `json:"keyPath"`
			} `json:"shards"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("-o json: %v", err)
		}
		for _, s := range d.Shards {
			see(s.ShardID)
			ls := byID[s.ShardID]
			if s.State != state(ls) || !slices.Equal(s.Parents, ls.parents) && len(ls.parents) > 0 || !slices.Equal(s.Children, ls.children) && len(ls.children) > 0 ||
				s.Range["start"] != ls.start || s.Range["end"] != ls.end || s.Seq["start"] != ls.seqStart || s.Seq["end"] != ls.seqEnd {
				t.Fatalf("-o json shard %+v\nservice: %+v", s, *ls)
			}
			if render.FormatShare(s.Fraction) != ls.share(t) {
				t.Fatalf("-o json: %s keyspaceFraction %v, share %s", s.ShardID, s.Fraction, ls.share(t))
			}
			if keyPath != nil && (s.KeyPath == nil || *s.KeyPath != onKey[s.ShardID]) || keyPath == nil && s.KeyPath != nil {
				t.Fatalf("-o json: %s keyPath %v, want %v", s.ShardID, s.KeyPath, onKey[s.ShardID])
			}
			for _, p := range s.Parents {
				edges = append(edges, p+">"+s.ShardID)
			}
		}
	case "tree":
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "SHARD ") {
			t.Fatalf("-o tree header %q", lines[0])
		}
		line := regexp.MustCompile(`^[│├└─ ]*(●|○|✂|╌▷) (\S+)(?:\s+(open|closed|trimmed)\s+(\S+%))?(?:  .*)?$`)
		refs := map[string]int{}
		for _, l := range lines[1:] {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("-o tree line %q", l)
			}
			id := m[2]
			if m[1] == "╌▷" {
				if _, drawn := seen[id]; drawn || len(byID[id].parents) != 2 {
					t.Fatalf("-o tree: back reference %q", l)
				}
				refs[id]++
				continue
			}
			see(id)
			ls := byID[id]
			wantMark := map[bool]string{true: "●", false: "○"}[ls.open]
			if m[1] != wantMark || m[3] != state(ls) || m[4] != ls.share(t) {
				t.Fatalf("-o tree line %q; the service says %s, share %s", l, state(ls), ls.share(t))
			}
			if keyPath != nil && strings.Contains(l, "◆") != onKey[id] {
				t.Fatalf("-o tree line %q: key mark wrong", l)
			}
		}
		for id, ls := range byID {
			if n := refs[id]; len(ls.parents) == 2 && n != 1 {
				t.Fatalf("-o tree: merge child %s has %d back references", id, n)
			}
		}
	case "table":
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		hdr := strings.Fields(lines[0])
		if !slices.Equal(hdr[:6], []string{"SHARD", "STATE", "PARENTS", "CHILDREN", "SHARE", "DEPTH"}) {
			t.Fatalf("-o table header %q", lines[0])
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			see(f[0])
			ls := byID[f[0]]
			if f[1] != state(ls) || f[2] != treeDashJoin(ls.parents) || f[3] != treeDashJoin(ls.children) || f[4] != ls.share(t) {
				t.Fatalf("-o table row %q; the service says %+v", l, *ls)
			}
			if keyPath != nil && (f[len(f)-1] == "yes") != onKey[f[0]] {
				t.Fatalf("-o table row %q: KEY wrong", l)
			}
			if strings.HasPrefix(lines[0], "SHARD") && strings.Contains(lines[0], "RANGE START") && (f[6] != ls.start || f[7] != ls.end) {
				t.Fatalf("-o table --wide row %q; range %s..%s", l, ls.start, ls.end)
			}
		}
	case "dot", "mermaid":
		node := regexp.MustCompile(`(?m)^  "(shardId-\d+)" \[label="(\d+)\\n(open|closed) · ([^"\\]+%)(\\n◆ key)?"`)
		edge := regexp.MustCompile(`(?m)^  "(shardId-\d+)" -> "(shardId-\d+)"(.*);$`)
		if format == "mermaid" {
			if !strings.Contains(out, "\nflowchart TD\n") {
				t.Fatalf("-o mermaid is not a flowchart:\n%s", out)
			}
			node = regexp.MustCompile(`(?m)^  s(\d+)\["(\d+)<br/>(open|closed) · ([^"<]+%)(<br/>◆ key)?"\]$`)
			edge = regexp.MustCompile(`(?m)^  s(\d+) (?:-->|==>|-\.->) s(\d+)()$`)
		} else if !strings.HasPrefix(out, "digraph ") {
			t.Fatalf("-o dot is not a digraph:\n%s", out)
		}
		full := func(s string) string {
			if format == "mermaid" {
				n, _ := strconv.Atoi(s)
				return treeSID(n)
			}
			return s
		}
		for _, m := range node.FindAllStringSubmatch(out, -1) {
			id := full(m[1])
			see(id)
			ls := byID[id]
			if m[2] != lineage.ShortID(id) || m[3] != state(ls) || m[4] != ls.share(t) || (m[5] != "") != onKey[id] {
				t.Fatalf("-o %s node %q; the service says %+v", format, m[0], *ls)
			}
		}
		for _, m := range edge.FindAllStringSubmatch(out, -1) {
			edges = append(edges, full(m[1])+">"+full(m[2]))
		}
	default:
		t.Fatalf("no check for -o %s", format)
	}
	if len(seen) != len(byID) {
		t.Fatalf("-o %s shows %d shards, the service lists %d", format, len(seen), len(byID))
	}
	if format == "json" || format == "dot" || format == "mermaid" {
		// Every parent → child edge of the service's listing, once.
		var want []string
		for id, ls := range byID {
			for _, p := range ls.parents {
				want = append(want, p+">"+id)
			}
		}
		slices.Sort(want)
		slices.Sort(edges)
		if !slices.Equal(edges, want) {
			t.Fatalf("-o %s edges %v, the service's %v", format, edges, want)
		}
	}
	// Parents before children.
	for id, ls := range byID {
		for _, p := range ls.parents {
			if _, listed := byID[p]; listed && seen[p] >= seen[id] {
				t.Fatalf("-o %s shows parent %s after child %s", format, p, id)
			}
		}
	}
}

func treeDashJoin(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ",")
}

// TestTreeDocsPicture refreshes the README's lineage picture from a real
// lineage on the emulator: docs/img/lineage.svg (from -o dot, kept as
// docs/img/lineage.dot, through Graphviz) and docs/img/lineage-tree.txt
// (the terminal tree). It runs
// only when KINESIS_SHARDS_TREE_DOCS=1, on kinesis-mock, with dot on PATH.
func TestTreeDocsPicture(t *testing.T) {
	if os.Getenv("KINESIS_SHARDS_TREE_DOCS") != "1" {
		t.Skip("set KINESIS_SHARDS_TREE_DOCS=1 to refresh docs/img/lineage.svg and docs/img/lineage-tree.txt")
	}
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz dot is not on PATH (Debian: apt-get install graphviz)")
	}
	e := emulator.Require(t)
	c := e.Client(t)
	// A stream of two shards: split the first, merge its upper half with
	// the second, split the merged shard.
	name := "orders"
	if _, err := c.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)}); err == nil {
		name = emulator.StreamName(t)
	}
	e.CreateStream(t, c, name, 2)
	two := treeOpenShards(t, c, name)
	treeSplitMiddle(t, e, c, name, two[0])
	open := treeOpenShards(t, c, name) // 2, 3, 1
	treeMergeAdjacent(t, e, c, name, open[1], open[2])
	open = treeOpenShards(t, c, name) // 2, 4
	treeSplitMiddle(t, e, c, name, open[1])

	const key = "customer-42"
	r := runCLI(t, "", "", "tree", name, "-o", "dot", "--key", key)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	svg := treeRunDot(t, dot, r.stdout)
	root, _ := emulator.RepoRoot()
	dir := filepath.Join(root, "docs", "img")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lineage.svg"), []byte(svg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lineage.dot"), []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	// The terminal tree: short ids as on a terminal, colour off for the text file.
	tty := runTreeTerminal(t, 100, "tree", name, "--key", key)
	text := "$ kinesis-shards tree " + name + " --key " + key + "\n" + tty
	if err := os.WriteFile(filepath.Join(dir, "lineage-tree.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/img/lineage.{dot,svg} and docs/img/lineage-tree.txt:\n%s", text)
}

// runTreeTerminal runs the command line in-process as on a terminal of the
// given width, colour off (NO_COLOR), and returns stdout.
func runTreeTerminal(t *testing.T, width int, args ...string) string {
	t.Helper()
	e := emulator.Require(t)
	ios, _, out, errOut := TestIO()
	ios.StdoutTTY, ios.StderrTTY, ios.ColorDisabled, ios.Width = true, true, true, width
	f := NewFactory(ios)
	f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
		o := e.ClientOptions()
		cfg := aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: o.HTTPClient, Retryer: awscall.KinesisRetryer}
		return newKinesisClient(cfg, clientConfig{EndpointURL: e.Endpoint}), nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if code := run(ctx, f, args); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
	}
	return out.String()
}
