package cmd

// Integration tests of split, merge and scale against the package's
// emulator (kinesis-mock, or kinesalite with KINESIS_SHARDS_TEST_BACKEND).
// Expectations come from the listings, never from hard-coded layouts:
// kinesis-mock's even boundaries differ from AWS's.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// rsStream creates a provisioned stream of n shards on the package's
// emulator (skipping backends that cannot reshard).
func rsStream(t *testing.T, n int) (*emulator.Emulator, *kinesis.Client, string) {
	t.Helper()
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, n)
	return e, c, name
}

func rsGraph(t *testing.T, c *kinesis.Client, name string) *lineage.Graph {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := lineage.Load(ctx, c, lineage.ListOptions{StreamName: name})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// rsListing is the whole listing in a comparable form, one line per shard.
func rsListing(t *testing.T, c *kinesis.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shards, err := lineage.ListShards(ctx, c, lineage.ListOptions{StreamName: name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range shards {
		out = append(out, strings.Join([]string{aws.ToString(s.ShardId), aws.ToString(s.ParentShardId), aws.ToString(s.AdjacentParentShardId),
			aws.ToString(s.HashKeyRange.StartingHashKey), aws.ToString(s.HashKeyRange.EndingHashKey),
			aws.ToString(s.SequenceNumberRange.StartingSequenceNumber), aws.ToString(s.SequenceNumberRange.EndingSequenceNumber)}, "|"))
	}
	slices.Sort(out)
	return out
}

func rsOpenRanges(g *lineage.Graph) []lineage.HashRange {
	var out []lineage.HashRange
	for _, s := range g.Open() {
		out = append(out, s.Range)
	}
	return out
}

func rsOpenIDs(g *lineage.Graph) []string {
	var out []string
	for _, s := range g.Open() {
		out = append(out, s.ID)
	}
	return out
}

func rsSID(n int) string { return fmt.Sprintf("shardId-%012d", n) }

// rsPercentKey is Start + floor(width*num/den/100), written apart from the
// code under test.
func rsPercentKey(r lineage.HashRange, num, den int64) lineage.HashKey {
	w := new(big.Int).Add(new(big.Int).Sub(r.End.Big(), r.Start.Big()), big.NewInt(1))
	w.Mul(w, big.NewInt(num))
	w.Quo(w, big.NewInt(den*100))
	k, err := lineage.HashKeyFromBig(w.Add(w, r.Start.Big()))
	if err != nil {
		panic(err)
	}
	return k
}

func rsMinus(k lineage.HashKey, n uint64) lineage.HashKey { r, _ := k.Sub64(n); return r }
func rsPlus(k lineage.HashKey, n uint64) lineage.HashKey  { r, _ := k.Add64(n); return r }

// rsDoc is the -o json document, as a script reads it.
type rsDoc struct {
	Stream      string `json:"stream"`
	Action      string `json:"action"`
	Method      string `json:"method"`
	Description string `json:"description"`
	DryRun      bool   `json:"dryRun"`
	ExactLayout bool   `json:"exactLayout"`
	Before      []rsSlot
	After       []rsSlot
	Steps       []struct {
		Call string `json:"call"`
		Args struct {
			ShardToSplit         *rsSlot `json:"shardToSplit"`
			NewStartingHashKey   string  `json:"newStartingHashKey"`
			ShardToMerge         *rsSlot `json:"shardToMerge"`
			AdjacentShardToMerge *rsSlot `json:"adjacentShardToMerge"`
			TargetShardCount     int     `json:"targetShardCount"`
			ScalingType          string  `json:"scalingType"`
		} `json:"args"`
		OpenShardCount int `json:"openShardCount"`
	} `json:"steps"`
	Sample *struct {
		Records int `json:"records"`
		Shards  []struct {
			ShardID string `json:"shardId"`
			Records int    `json:"records"`
		} `json:"shards"`
	} `json:"sample"`
	Notes  []string `json:"notes"`
	Result *struct {
		Completed bool `json:"completed"`
		StepsDone []struct {
			Step   int      `json:"step"`
			Call   string   `json:"call"`
			Closed []string `json:"closed"`
			Opened []string `json:"opened"`
		} `json:"stepsDone"`
		Layout []rsSlot `json:"layout"`
		Error  string   `json:"error"`
	} `json:"result"`
}

type rsSlot struct {
	ShardID      string `json:"shardId"`
	New          bool   `json:"new"`
	HashKeyRange struct {
		Start string `json:"start"`
		End   string `json:"end"`
	} `json:"hashKeyRange"`
	KeyspaceFraction float64  `json:"keyspaceFraction"`
	TrafficFraction  *float64 `json:"trafficFraction"`
}

func (s rsSlot) rng(t *testing.T) lineage.HashRange {
	t.Helper()
	a, err1 := lineage.ParseHashKey(s.HashKeyRange.Start)
	b, err2 := lineage.ParseHashKey(s.HashKeyRange.End)
	if err1 != nil || err2 != nil {
		t.Fatalf("slot %+v: %v %v", s, err1, err2)
	}
	return lineage.HashRange{Start: a, End: b}
}

// rsDocKeys are the top-level fields of the document (README); optional
// ones may be absent.
var rsDocKeys = map[string]bool{"stream": true, "streamArn": false, "action": true, "method": false, "description": true,
	"before": true, "steps": true, "after": true, "exactLayout": true, "sample": false, "trafficBy": false, "notes": false, "dryRun": true, "result": false}

func rsParse(t *testing.T, stdout string) rsDoc {
	t.Helper()
	var d rsDoc
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", stdout)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &top); err != nil {
		t.Fatal(err)
	}
	for k := range top {
		if _, ok := rsDocKeys[k]; !ok {
			t.Errorf("undocumented field %q", k)
		}
	}
	for k, required := range rsDocKeys {
		if _, ok := top[k]; required && !ok {
			t.Errorf("missing field %q", k)
		}
	}
	return d
}

func rsOK(t *testing.T, r cliResult) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// rsLastLine is the last line of stderr (the error line).
func rsLastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSplitSendsTheExactKey(t *testing.T) {
	cases := []struct {
		name string
		args []string
		key  func(r lineage.HashRange) lineage.HashKey
	}{
		{"middle by default", nil, func(r lineage.HashRange) lineage.HashKey { return rsPercentKey(r, 50, 1) }},
		{"at 12.5 percent", []string{"--at-percent", "12.5"}, func(r lineage.HashRange) lineage.HashKey { return rsPercentKey(r, 125, 10) }},
		{"at start+2", []string{"--at", "START+2"}, func(r lineage.HashRange) lineage.HashKey { return rsPlus(r.Start, 2) }},
		{"at end-1", []string{"--at", "END-1"}, func(r lineage.HashRange) lineage.HashKey { return rsMinus(r.End, 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c, name := rsStream(t, 2)
			parent := rsGraph(t, c, name).Shard(rsSID(1)).Range
			k := tc.key(parent)
			args := []string{"split", name, "1", "--yes"}
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "START+2", rsPlus(parent.Start, 2).String())
				args = append(args, strings.ReplaceAll(a, "END-1", rsMinus(parent.End, 1).String()))
			}
			r := runCLI(t, "", "", args...)
			rsOK(t, r)
			g := rsGraph(t, c, name)
			if p := g.Shard(rsSID(1)); p.IsOpen() || !slices.Equal(p.Children, []string{rsSID(2), rsSID(3)}) {
				t.Fatalf("parent %+v", p)
			}
			want := []lineage.HashRange{rsGraph(t, c, name).Shard(rsSID(0)).Range, {Start: parent.Start, End: rsMinus(k, 1)}, {Start: k, End: parent.End}}
			if got := rsOpenRanges(g); !slices.Equal(got, want) || !slices.Equal(rsOpenIDs(g), []string{rsSID(0), rsSID(2), rsSID(3)}) {
				t.Fatalf("open %v / %v, want %v", got, rsOpenIDs(g), want)
			}
			call := fmt.Sprintf("\n  1. SplitShard ShardToSplit=shardId-000000000001 NewStartingHashKey=%s\n", k)
			if !strings.Contains(r.stdout, call) || !strings.Contains(r.stdout, fmt.Sprintf("\nStream %s now has 3 open shards:\n", name)) {
				t.Fatalf("stdout:\n%s", r.stdout)
			}
			if !strings.Contains(r.stderr, "step 1/1 done in ") || !strings.Contains(r.stderr, "; closed shardId-000000000001, opened shardId-000000000002, shardId-000000000003\n") {
				t.Fatalf("stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestMergeGivenInReverseOrder(t *testing.T) {
	_, c, name := rsStream(t, 3)
	g0 := rsGraph(t, c, name)
	lower, upper := g0.Shard(rsSID(1)).Range, g0.Shard(rsSID(2)).Range
	r := runCLI(t, "", "", "merge", name, "2", "shardId-1", "--yes", "-o", "json")
	rsOK(t, r)
	d := rsParse(t, r.stdout)
	st := d.Steps[0]
	if d.Action != "merge" || d.DryRun || len(d.Steps) != 1 || st.Call != "MergeShards" ||
		st.Args.ShardToMerge.ShardID != rsSID(1) || st.Args.AdjacentShardToMerge.ShardID != rsSID(2) {
		t.Fatalf("plan %+v", d)
	}
	res := d.Result
	if res == nil || !res.Completed || res.Error != "" || len(res.StepsDone) != 1 ||
		!slices.Equal(res.StepsDone[0].Closed, []string{rsSID(1), rsSID(2)}) || !slices.Equal(res.StepsDone[0].Opened, []string{rsSID(3)}) {
		t.Fatalf("result %+v", res)
	}
	g := rsGraph(t, c, name)
	child := g.Shard(rsSID(3))
	// ShardToMerge becomes ParentShardId, the other AdjacentParentShardId.
	if !child.IsOpen() || child.Range != (lineage.HashRange{Start: lower.Start, End: upper.End}) || !slices.Equal(child.Parents, []string{rsSID(1), rsSID(2)}) {
		t.Fatalf("child %+v", child)
	}
	if len(res.Layout) != 2 || res.Layout[1].ShardID != rsSID(3) || res.Layout[1].rng(t) != child.Range {
		t.Fatalf("layout %+v", res.Layout)
	}
}

func TestScaleBothMethods(t *testing.T) {
	cases := []struct {
		name     string
		from, to int
		method   string
	}{
		{"UpdateShardCount up", 2, 3, "update-shard-count"},
		{"UpdateShardCount down", 4, 2, "update-shard-count"},
		{"splits up", 2, 4, "splits"},
		{"splits up from one", 1, 3, "splits"},
		{"splits down", 4, 3, "splits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := emulator.Require(t)
			if tc.method == "update-shard-count" && !e.Caps.UpdateShardCount {
				t.Skipf("%s has no UpdateShardCount", e.Backend)
			}
			_, c, name := rsStream(t, tc.from)
			before := rsOpenRanges(rsGraph(t, c, name))
			r := runCLI(t, "", "", "scale", name, "--to", fmt.Sprint(tc.to), "--method", tc.method, "--yes", "-o", "json")
			rsOK(t, r)
			d := rsParse(t, r.stdout)
			g := rsGraph(t, c, name)
			open := rsOpenRanges(g)
			if len(open) != tc.to {
				t.Fatalf("%d open shards, want %d", len(open), tc.to)
			}
			if err := lineage.CheckCoverage(open); err != nil {
				t.Fatal(err)
			}
			var layout []lineage.HashRange
			for _, s := range d.Result.Layout {
				layout = append(layout, s.rng(t))
			}
			if !d.Result.Completed || !slices.Equal(layout, open) {
				t.Fatalf("result layout %v, listing %v", layout, open)
			}
			if tc.method == "update-shard-count" {
				// The count is the service's promise; kinesis-mock's ranges are uneven.
				if len(d.Steps) != 1 || d.Steps[0].Call != "UpdateShardCount" || d.Steps[0].Args.TargetShardCount != tc.to || d.ExactLayout || len(d.Notes) != 3+min(max(tc.to-tc.from, 0), 1) {
					t.Fatalf("plan %+v", d)
				}
				return
			}
			even, _ := lineage.EvenLayout(tc.to)
			if !reshard.IsEvenLayout(open) || !d.ExactLayout {
				t.Fatalf("open %v, want AWS's even layout %v (within reshard.EvenTolerance)", open, even)
			}
			// The fewest calls: one per boundary to add or remove.
			if want := rsBoundaryChanges(before, even); len(d.Steps) != want || len(d.Result.StepsDone) != want {
				t.Fatalf("%d steps, %d done; want %d", len(d.Steps), len(d.Result.StepsDone), want)
			}
		})
	}
}

// rsBoundaryChanges is the number of boundaries in one layout with none
// within reshard.EvenTolerance in the other.
func rsBoundaryChanges(a, b []lineage.HashRange) int {
	near := func(k lineage.HashKey, in []lineage.HashRange) bool {
		for _, r := range in[1:] {
			if new(big.Int).Abs(new(big.Int).Sub(k.Big(), r.Start.Big())).Cmp(big.NewInt(reshard.EvenTolerance)) <= 0 {
				return true
			}
		}
		return false
	}
	n := 0
	for _, r := range a[1:] {
		if !near(r.Start, b) {
			n++
		}
	}
	for _, r := range b[1:] {
		if !near(r.Start, a) {
			n++
		}
	}
	return n
}

// rsNoChanges proxies the emulator and checks, when the test ends, that no
// mutating call went through.
func rsNoChanges(t *testing.T, e *emulator.Emulator) string {
	t.Helper()
	in := faults.New(1)
	p := in.Proxy(t, e.Endpoint)
	t.Cleanup(func() {
		n := in.Counts()
		if n["SplitShard"]+n["MergeShards"]+n["UpdateShardCount"] != 0 {
			t.Errorf("mutating calls were sent: %v", n)
		}
	})
	return p.URL
}

func TestReshardDryRunChangesNothing(t *testing.T) {
	e, c, name := rsStream(t, 3)
	ep := rsNoChanges(t, e)
	before := rsListing(t, c, name)
	for _, args := range [][]string{
		{"split", name, "1", "--dry-run"},
		{"split", name, "1", "--at-percent", "10", "--dry-run", "--wide"},
		{"merge", name, "2", "1", "--dry-run"},
		{"scale", name, "--to", "5", "--dry-run"},
		{"scale", name, "--to", "2", "--method", "splits", "--dry-run"},
		{"scale", name, "--to", "6", "--method", "splits", "--dry-run"},
	} {
		r := runCLI(t, ep, "", args...)
		rsOK(t, r)
		if !strings.HasPrefix(r.stdout, "Stream "+name+": ") || !strings.Contains(r.stdout, "\nAPI calls (") || !strings.HasSuffix(r.stderr, "dry run: nothing was sent\n") {
			t.Fatalf("%v:\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
		}
		// -o json: the plan, no result.
		r = runCLI(t, ep, "", append(args, "-o", "json")...)
		rsOK(t, r)
		d := rsParse(t, r.stdout)
		if !d.DryRun || d.Result != nil || d.Stream != name || len(d.Steps) == 0 || len(d.Before) != 3 {
			t.Fatalf("%v: %+v", args, d)
		}
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatalf("listing changed:\n%v\n%v", before, after)
	}
}

func TestReshardRefusalsChangeNothing(t *testing.T) {
	e, c, name := rsStream(t, 3)
	// Split shard 0 behind the tool's back: 0 closes, 3 and 4 open.
	ctx := context.Background()
	g0 := rsGraph(t, c, name)
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(name), ShardToSplit: aws.String(rsSID(0)),
		NewStartingHashKey: aws.String(rsPercentKey(g0.Shard(rsSID(0)).Range, 50, 1).String())}); err != nil {
		t.Fatal(err)
	}
	e.WaitActive(t, c, name)
	g := rsGraph(t, c, name)
	s1, s3 := g.Shard(rsSID(1)).Range, g.Shard(rsSID(3)).Range
	ep := rsNoChanges(t, e)
	before := rsListing(t, c, name)

	tooClose := func(k lineage.HashKey) string {
		return fmt.Sprintf("hash key %s is too close to an edge of shard shardId-000000000001 of stream %s (%s to %s): a split key must be from %s to %s (the shard's start + 2 to its end - 1), so that each new shard holds at least two keys",
			k, name, s1.Start, s1.End, rsPlus(s1.Start, 2), rsMinus(s1.End, 1))
	}
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"split", name, "0", "--yes"}, 1, fmt.Sprintf("shard shardId-000000000000 of stream %s is closed (it was already split or merged); only open shards can be split or merged, and its range is now held by shardId-000000000003 and shardId-000000000004", name)},
		{[]string{"split", name, "99", "--yes"}, 1, fmt.Sprintf("stream %s has no shard shardId-000000000099; its open shards are shardId-000000000003, shardId-000000000004, shardId-000000000001 and shardId-000000000002", name)},
		{[]string{"split", name, "1", "--yes", "--at", rsMinus(s1.Start, 1).String()}, 1, fmt.Sprintf("hash key %s is outside shard shardId-000000000001 of stream %s, which holds %s to %s", rsMinus(s1.Start, 1), name, s1.Start, s1.End)},
		{[]string{"split", name, "1", "--yes", "--at", s1.Start.String()}, 1, tooClose(s1.Start)},
		{[]string{"split", name, "1", "--yes", "--at", rsPlus(s1.Start, 1).String()}, 1, tooClose(rsPlus(s1.Start, 1))},
		{[]string{"split", name, "1", "--yes", "--at", s1.End.String()}, 1, tooClose(s1.End)},
		{[]string{"split", name, "1", "--yes", "--at", "0" + s1.End.String()}, 2, fmt.Sprintf("--at: hash key \"0%s\" is not a canonical decimal: no sign, no leading zeros", s1.End)},
		{[]string{"split", name, "1", "--yes", "--at", "+5"}, 2, "--at: hash key \"+5\" is not a canonical decimal: no sign, no leading zeros"},
		{[]string{"split", name, "1", "--yes", "--at", "5", "--at-percent", "5"}, 2, "--at and --at-percent do not go together: give the key or the percentage"},
		{[]string{"split", name, "1", "--yes", "--at-percent", "100"}, 2, "--at-percent: percentage \"100\" is out of range: it must be greater than 0 and less than 100"},
		{[]string{"split", name, "1", "--yes", "--balanced", "--at-percent", "5"}, 2, "--balanced picks the split key from sampled traffic: it does not go with --at or --at-percent"},
		{[]string{"split", name, "1", "--yes", "--balanced", "--sample", "99"}, 2, "--balanced needs --sample of at least 100 records, not 99"},
		{[]string{"split", name, "1", "--yes", "--balanced"}, 1, fmt.Sprintf("only 0 records of shard shardId-000000000001 of stream %s were sampled (at least 100 are needed to split at their median); split at a hash key or a percentage instead, or sample a longer window", name)},
		{[]string{"split", name, "x1", "--yes"}, 2, "shard \"x1\" is not a shard id: give shardId-000000000007 or just its number, 7"},
		{[]string{"merge", name, "3", "1", "--yes"}, 1, fmt.Sprintf("shards shardId-000000000003 (%s) and shardId-000000000001 (%s) of stream %s are not adjacent: only two open shards whose ranges touch can be merged, and the neighbours of shardId-000000000003 are shardId-000000000004", s3, s1, name)},
		{[]string{"merge", name, "1", "shardId-000000000001", "--yes"}, 2, "cannot merge shard shardId-000000000001 with itself: give two different, adjacent open shards"},
		{[]string{"merge", name, "3", "0", "--yes"}, 1, fmt.Sprintf("shard shardId-000000000000 of stream %s is closed (it was already split or merged); only open shards can be split or merged, and its range is now held by shardId-000000000003 and shardId-000000000004", name)},
		{[]string{"scale", name, "--to", "9", "--yes"}, 1, fmt.Sprintf("UpdateShardCount can at most double the open shards of stream %s in one call: from 4 it can reach 2 to 8, not 9; use --method splits to get there with SplitShard and MergeShards calls", name)},
		{[]string{"scale", name, "--to", "1", "--yes"}, 1, fmt.Sprintf("UpdateShardCount can at most halve the open shards of stream %s in one call: from 4 it can reach 2 to 8, not 1; use --method splits to get there with SplitShard and MergeShards calls", name)},
		{[]string{"scale", name, "--to", "0", "--yes"}, 2, "--to 0 is not a shard count a stream can have: it must be from 1 to 10000"},
		{[]string{"scale", name, "--to", "10001", "--method", "splits", "--yes"}, 2, "--to 10001 is not a shard count a stream can have: it must be from 1 to 10000"},
		{[]string{"scale", name, "--yes"}, 2, "say how many open shards with --to N"},
		{[]string{"scale", name, "--to", "3", "--method", "uniform", "--yes"}, 2, "--method \"uniform\" is not known: use update-shard-count or splits"},
		{[]string{"scale", name, "--to", "4", "--even", "--yes"}, 2, "--even goes with --method splits: UpdateShardCount cannot even out a stream that already has the count"},
		{[]string{"split", name, "1"}, 2, "stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview"},
		{[]string{"merge", name, "1", "2"}, 2, "stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview"},
		{[]string{"scale", name, "--to", "5", "-o", "json"}, 2, "stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview"},
	}
	for _, tc := range cases {
		r := runCLI(t, ep, "", tc.args...)
		if r.code != tc.code || r.stdout != "" || rsLastLine(r.stderr) != "error: "+tc.msg {
			t.Errorf("%v: exit %d, stdout %q\nstderr: %s\nwant %d: error: %s", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.msg)
		}
		// Refusals made before any call say nothing else.
		if tc.code == 2 && r.stderr != "error: "+tc.msg+"\n" {
			t.Errorf("%v: stderr %q", tc.args, r.stderr)
		}
	}
	// Nothing to do is a success that changes nothing.
	r := runCLI(t, ep, "", "scale", name, "--to", "4", "--yes")
	if r.code != 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, fmt.Sprintf("nothing to do: stream %s already has 4 open shards\nnote: Their hash ranges are not the even layout; --method splits --even would even them out with ", name)) {
		t.Errorf("nothing to do: %+v", r)
	}
	// By splits too: scale --to N is safe to repeat on an uneven stream.
	r = runCLI(t, ep, "", "scale", name, "--to", "4", "--method", "splits", "--yes")
	if r.code != 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, fmt.Sprintf("nothing to do: stream %s already has 4 open shards\nnote: Their hash ranges are not the even layout; --even would even them out with ", name)) {
		t.Errorf("nothing to do by splits: %+v", r)
	}
	r = runCLI(t, ep, "", "scale", name, "--to", "4", "--yes", "-o", "json")
	if d := rsParse(t, r.stdout); r.code != 0 || len(d.Steps) != 0 || d.Result != nil || len(d.After) != 4 || !strings.HasPrefix(d.Description, "nothing to do") {
		t.Errorf("nothing to do, JSON: %+v", r)
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatalf("listing changed:\n%v\n%v", before, after)
	}
}

func TestReshardRefusesOnDemand(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.OnDemand {
		t.Skipf("%s has no on-demand streams", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 0)
	ep := rsNoChanges(t, e)
	before := rsListing(t, c, name)
	ids := rsOpenIDs(rsGraph(t, c, name))
	want := fmt.Sprintf("error: stream %s is ON_DEMAND: the service reshards it by itself and refuses SplitShard, MergeShards and UpdateShardCount; switch it to PROVISIONED first\n", name)
	for _, args := range [][]string{
		{"split", name, ids[0], "--yes"},
		{"merge", name, ids[0], ids[1], "--yes"},
		{"scale", name, "--to", "3", "--yes"},
		{"scale", name, "--to", "6", "--method", "splits", "--dry-run"},
	} {
		if r := runCLI(t, ep, "", args...); r.code != 1 || r.stdout != "" || r.stderr != want {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatal("listing changed")
	}
}

// TestReshardWhileUpdating uses an emulator of its own whose changes take
// a second, so that UPDATING is certain to be seen: a reshard asked for
// while another change runs is refused at once (nothing sent), and a
// multi-step plan waits for ACTIVE between its calls.
func TestReshardWhileUpdating(t *testing.T) {
	shared := emulator.Require(t)
	if shared.Attached() || !shared.Caps.TimedStates || !shared.Caps.Reshard {
		t.Skip("needs an emulator the harness starts, with timed states")
	}
	ctx := context.Background()
	e, err := emulator.Start(ctx, emulator.Options{Backend: shared.Backend, StateDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	g := rsGraph(t, c, name)
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(name), ShardToSplit: aws.String(rsSID(0)),
		NewStartingHashKey: aws.String(rsPercentKey(g.Shard(rsSID(0)).Range, 50, 1).String())}); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, e.Endpoint, "", "merge", name, "1", "2", "--yes")
	want := fmt.Sprintf("error: stream %s is UPDATING, not ACTIVE (another change is in progress): the service accepts a reshard only while the stream is ACTIVE; try again when it is\n", name)
	if r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Fatalf("%+v", r)
	}
	e.WaitActive(t, c, name)
	if g := rsGraph(t, c, name); !slices.Equal(rsOpenIDs(g), []string{rsSID(1), rsSID(2)}) || len(g.Shard(rsSID(1)).Children) != 0 {
		t.Fatalf("shards were changed: %v", rsOpenIDs(g))
	}
	// Two halves to the even 4: two calls, each waited for.
	r = runCLI(t, e.Endpoint, "", "scale", name, "--to", "4", "--method", "splits", "--yes")
	rsOK(t, r)
	if open := rsOpenRanges(rsGraph(t, c, name)); len(open) != 4 || !reshard.IsEvenLayout(open) {
		t.Fatalf("open %v", open)
	}
	for i := 1; i <= 2; i++ {
		wait := fmt.Sprintf("step %d/2: waiting for stream %s to be ACTIVE (UPDATING) ...\n", i, name)
		done := fmt.Sprintf("step %d/2 done in ", i)
		if w, d := strings.Index(r.stderr, wait), strings.Index(r.stderr, done); w < 0 || d < w {
			t.Fatalf("step %d was not waited for:\n%s", i, r.stderr)
		}
	}
}

// TestReshardRespectsShardQuota uses an emulator of its own with a 6-shard
// quota: a plan that needs more shards than the account has free is refused
// before any call (a splits plan would otherwise stop half-way), one that
// fits says how much of the quota it uses, and a quota that cannot be read
// is a note, not a refusal (the service still enforces it).
//
// kinesis-mock counts closed shards toward its limit, AWS counts open ones
// (DescribeLimits' OpenShardCount, which the planner uses); the steps here
// stay where both agree.
func TestReshardRespectsShardQuota(t *testing.T) {
	shared := emulator.Require(t)
	if shared.Attached() || !shared.Caps.DescribeLimits || !shared.Caps.ShardLimit || !shared.Caps.Reshard {
		t.Skip("needs an emulator the harness starts, with DescribeLimits and a shard limit")
	}
	e, err := emulator.Start(context.Background(), emulator.Options{Backend: shared.Backend, ShardLimit: 6, StateDuration: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 3)
	e.CreateStream(t, c, name+"-other", 2) // the quota is the account's, not the stream's
	before := rsListing(t, c, name)

	for _, args := range [][]string{
		{"scale", name, "--to", "5", "--method", "splits", "--yes"},
		{"scale", name, "--to", "5", "--yes"},
		{"scale", name, "--to", "5", "--method", "splits", "--dry-run"},
	} {
		r := runCLI(t, e.Endpoint, "", args...)
		want := fmt.Sprintf("error: this scale of stream %s opens up to 2 more shards, but the account has 5 of its 6-shard quota in this region open (1 free): ask AWS for a higher shard quota (Service Quotas, Kinesis \"Shards per Region\") or close shards elsewhere first\n", name)
		if r.code != 1 || r.stdout != "" || r.stderr != want {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %s", args, r.code, r.stdout, r.stderr, want)
		}
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatal("a refused scale changed the stream")
	}

	r := runCLI(t, e.Endpoint, "", "split", name, "0", "--yes", "-o", "json")
	rsOK(t, r)
	d := rsParse(t, r.stdout)
	if n := d.Notes[len(d.Notes)-1]; n != "The account has 5 of its 6-shard quota in this region open; this opens up to 1 more shard." || !d.Result.Completed {
		t.Fatalf("notes %q, result %+v", d.Notes, d.Result)
	}
	// The quota is full now: a split is refused up front, a merge is not.
	before = rsListing(t, c, name)
	r = runCLI(t, e.Endpoint, "", "split", name, "1", "--yes")
	want := "error: this split of stream " + name + " opens up to 1 more shard, but the account has 6 of its 6-shard quota in this region open (0 free)"
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatal("a refused split changed the stream")
	}
	open := rsOpenIDs(rsGraph(t, c, name))
	rsOK(t, runCLI(t, e.Endpoint, "", "merge", name, open[0], open[1], "--yes"))

	// DescribeLimits throttled: the plan goes ahead with a note, and the
	// service's own limit refuses the call; nothing changes. kinesis-mock
	// counts the closed shards and is full already; AWS and the fake count
	// open ones (5 of 6 here), so another stream fills the quota first.
	if e.Backend != emulator.KinesisMock {
		e.CreateStream(t, c, name+"-fill", 1)
	}
	in := faults.New(1, faults.Rule{Op: "DescribeLimits", Kind: faults.LimitExceeded})
	p := in.Proxy(t, e.Endpoint)
	before = rsListing(t, c, name)
	r = runCLI(t, p.URL, "", "split", name, rsOpenIDs(rsGraph(t, c, name))[0], "--yes", "-o", "json")
	d = rsParse(t, r.stdout)
	if n := d.Notes[len(d.Notes)-1]; !strings.HasPrefix(n, "The account's shard quota was not checked (DescribeLimits was throttled (it allows one call per second per account)); this opens up to 1 more shard") {
		t.Fatalf("notes %q", d.Notes)
	}
	if r.code != 1 || d.Result == nil || d.Result.Completed || !strings.Contains(d.Result.Error, "limit exceeded (not retried)") {
		t.Fatalf("exit %d %+v\n%s", r.code, d.Result, r.stderr)
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatal("a split refused by the service changed the stream")
	}
	if n := in.Counts()["DescribeLimits"]; n != 1 {
		t.Fatalf("DescribeLimits sent %d times, want once", n)
	}
}

func TestReshardStopsAtFirstFailure(t *testing.T) {
	e, c, name := rsStream(t, 1)
	in := faults.New(1, faults.Rule{Op: "SplitShard", Kind: faults.LimitExceeded, Nth: []int{2}, Message: "Rate exceeded for stream " + name + "."})
	p := in.Proxy(t, e.Endpoint)
	r := runCLI(t, p.URL, "", "scale", name, "--to", "4", "--method", "splits", "--yes")
	// The service's message (the injector marks it as injected) sits between
	// the step and what was done.
	wantStart := fmt.Sprintf("error: step 2 of 3 (SplitShard shardId-000000000001 at hash key 85070591730234615865843651857942052864) failed: limit exceeded (not retried): Rate exceeded for stream %s.", name)
	wantEnd := "; 1 of 3 steps was done, the layout as it is now is shown"
	if last := rsLastLine(r.stderr); r.code != 1 || !strings.HasPrefix(last, wantStart) || !strings.HasSuffix(last, wantEnd) || strings.Count(last, ";") != 1 {
		t.Fatalf("exit %d\nstderr:\n%s\nwant\n%s...%s", r.code, r.stderr, wantStart, wantEnd)
	}
	// Sent once, not retried, and nothing after it.
	if n := in.Counts(); n["SplitShard"] != 2 || n["MergeShards"] != 0 {
		t.Fatalf("calls %v", n)
	}
	g := rsGraph(t, c, name)
	if !slices.Equal(rsOpenIDs(g), []string{rsSID(1), rsSID(2)}) {
		t.Fatalf("open %v", rsOpenIDs(g))
	}
	wantOut := fmt.Sprintf("\nStream %s has 2 open shards now:\n", name)
	if !strings.Contains(r.stdout, wantOut) || !strings.Contains(r.stdout, "+  shardId-000000000001  ") || !strings.Contains(r.stdout, "+  shardId-000000000002  ") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	// The same failure in JSON: one document, with the error and the layout.
	_, c2, name2 := rsStream(t, 1)
	in2 := faults.New(1, faults.Rule{Op: "SplitShard", Kind: faults.ResourceInUse, Nth: []int{2}})
	p2 := in2.Proxy(t, e.Endpoint)
	r = runCLI(t, p2.URL, "", "scale", name2, "--to", "4", "--method", "splits", "--yes", "-o", "json")
	d := rsParse(t, r.stdout)
	if r.code != 1 || d.Result == nil || d.Result.Completed || len(d.Result.StepsDone) != 1 || len(d.Result.Layout) != 2 ||
		!strings.HasPrefix(d.Result.Error, "step 2 of 3 (SplitShard shardId-000000000001 at hash key 85070591730234615865843651857942052864) failed: stream "+name2+" is busy") ||
		rsLastLine(r.stderr) != "error: "+d.Result.Error {
		t.Fatalf("exit %d %+v\n%s", r.code, d.Result, r.stderr)
	}
	if len(rsOpenIDs(rsGraph(t, c2, name2))) != 2 {
		t.Fatal("second stream")
	}
}

func TestSplitBalanced(t *testing.T) {
	e, c, name := rsStream(t, 1)
	var recs []emulator.Rec
	var hashes []lineage.HashKey
	for i := range 400 {
		k := fmt.Sprintf("customer-%d", i)
		recs = append(recs, emulator.Rec{PartitionKey: k, Data: []byte("x")})
		hashes = append(hashes, lineage.PartitionKeyHash(k))
	}
	e.Put(t, c, name, recs)
	slices.SortFunc(hashes, lineage.HashKey.Cmp)
	// 400 distinct keys: the cut is between the 200th and 201st hash,
	// halfway: floor((a+b)/2)+1.
	sum := new(big.Int).Add(hashes[199].Big(), hashes[200].Big())
	k, _ := lineage.HashKeyFromBig(sum.Rsh(sum, 1).Add(sum, big.NewInt(1)))

	in := faults.New(1)
	p := in.Proxy(t, e.Endpoint)
	r := runCLI(t, p.URL, "", "split", name, "0", "--balanced", "--yes", "-o", "json")
	rsOK(t, r)
	d := rsParse(t, r.stdout)
	if d.Sample == nil || d.Sample.Records != 400 || d.Steps[0].Args.NewStartingHashKey != k.String() {
		t.Fatalf("sample %+v, key %s want %s", d.Sample, d.Steps[0].Args.NewStartingHashKey, k)
	}
	for _, s := range d.After {
		if s.TrafficFraction == nil || *s.TrafficFraction != 0.5 {
			t.Fatalf("after %+v", d.After)
		}
	}
	if d.Before[0].TrafficFraction == nil || *d.Before[0].TrafficFraction != 1 {
		t.Fatalf("before %+v", d.Before)
	}
	want := []lineage.HashRange{{Start: lineage.HashKey{}, End: rsMinus(k, 1)}, {Start: k, End: lineage.MaxHashKey}}
	if open := rsOpenRanges(rsGraph(t, c, name)); !slices.Equal(open, want) {
		t.Fatalf("open %v", open)
	}
	// The sample read at most 5 GetRecords a second.
	for shard, ts := range in.GetRecordsCalls() {
		if n := faults.MaxCallsInWindow(ts, time.Second); n > 5 || len(ts) == 0 {
			t.Fatalf("%s: %d GetRecords calls in a second", shard, n)
		}
	}
	if !strings.Contains(r.stderr, "sampled 400 records of shardId-000000000000 in ") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

func TestReshardBinary(t *testing.T) {
	_, c, name := rsStream(t, 2)
	before := rsListing(t, c, name)
	r := runBinary(t, nil, "", "split", name, "1")
	if r.code != 2 || r.stdout != "" || r.stderr != "error: stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview\n" {
		t.Fatalf("%+v", r)
	}
	r = runBinary(t, nil, "", "split", name, "1", "--dry-run")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Stream "+name+": split shardId-000000000001 at 50% of its range (hash key ") {
		t.Fatalf("%+v", r)
	}
	if after := rsListing(t, c, name); !slices.Equal(before, after) {
		t.Fatal("listing changed")
	}
	r = runBinary(t, nil, "", "merge", name, "1", "0", "--yes", "-o", "json")
	rsOK(t, r)
	if d := rsParse(t, r.stdout); !d.Result.Completed || len(d.Result.Layout) != 1 || d.Result.Layout[0].KeyspaceFraction != 1 {
		t.Fatalf("%+v", d.Result)
	}
}

// TestReshardConfirmation drives the prompt: "n" declines (exit 130,
// nothing sent), "y" runs the plan.
func TestReshardConfirmation(t *testing.T) {
	_, c, name := rsStream(t, 2)
	e := emulator.Require(t)
	in := faults.New(1)
	p := in.Proxy(t, e.Endpoint)
	ask := func(answer string) (int, string, string) {
		ios, stdin, out, errOut := TestIO()
		ios.StdinTTY, ios.StderrTTY = true, true
		stdin.WriteString(answer)
		f := NewFactory(ios)
		f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
			return kinesis.New(e.ClientOptions(), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL); o.Retryer = awscall.KinesisRetryer() }), nil
		}
		code := run(context.Background(), f, []string{"split", name, "1", "--no-color"})
		return code, out.String(), errOut.String()
	}
	code, stdout, stderr := ask("n\n")
	if code != 130 || !strings.Contains(stdout, "API calls (1):") || !strings.Contains(stderr, "Send 1 call to stream "+name+"? [y/N] ") ||
		rsLastLine(stderr) != "Send 1 call to stream "+name+"? [y/N] declined: nothing was changed" || in.Counts()["SplitShard"] != 0 {
		t.Fatalf("decline: %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = ask("yes\n")
	if code != 0 || !strings.Contains(stdout, "now has 3 open shards") || in.Counts()["SplitShard"] != 1 {
		t.Fatalf("accept: %d\n%s", code, stdout)
	}
	if len(rsOpenIDs(rsGraph(t, c, name))) != 3 {
		t.Fatal("not split")
	}
}
