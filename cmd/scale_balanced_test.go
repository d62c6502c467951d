package cmd

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// TestScaleBalancedSkewedTraffic: a two-shard stream whose first shard
// takes three times the records of the second is scaled to four shards
// balanced by traffic: each ends with a quarter of the records written.
func TestScaleBalancedSkewedTraffic(t *testing.T) {
	e, c, name := rsStream(t, 2)
	open := rsOpenRanges(rsGraph(t, c, name))
	var recs []emulator.Rec
	var hashes []lineage.HashKey
	perShard := [2]int{}
	want := [2]int{1200, 400}
	for i := 0; perShard[0] < want[0] || perShard[1] < want[1]; i++ {
		k := fmt.Sprintf("user-%d", i)
		h := lineage.PartitionKeyHash(k)
		s := 0
		if !open[0].Contains(h) {
			s = 1
		}
		if perShard[s] == want[s] {
			continue
		}
		perShard[s]++
		recs = append(recs, emulator.Rec{PartitionKey: k, Data: []byte("x")})
		hashes = append(hashes, h)
	}
	e.Put(t, c, name, recs)

	// A preview first: by bytes by default.
	r := runCLI(t, "", "", "scale", name, "--to", "4", "--balanced", "--sample", "2000", "--dry-run", "-o", "json")
	rsOK(t, r)
	if d := rsParse(t, r.stdout); d.Method != "splits" || !strings.Contains(d.Description, "balanced by sampled bytes") {
		t.Fatalf("dry run: %s %q", d.Method, d.Description)
	}
	if !strings.Contains(r.stderr, "sampled 1600 records of 2 shards") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}

	r = runCLI(t, "", "", "scale", name, "--to", "4", "--balanced", "--by", "records", "--sample", "2000", "--yes", "-o", "json")
	rsOK(t, r)
	d := rsParse(t, r.stdout)
	// The quartiles: two boundaries inside the busy shard; the third is
	// where the shards already meet.
	if len(d.Steps) != 2 || d.Steps[0].Call != "SplitShard" || d.Steps[1].Call != "SplitShard" || !d.Result.Completed {
		t.Fatalf("plan %+v", d)
	}
	for _, s := range d.After {
		if s.TrafficFraction == nil || math.Abs(*s.TrafficFraction-0.25) > 1e-9 {
			t.Fatalf("after: %+v", d.After)
		}
	}
	// The real traffic of the new layout: the whole window was sampled, so
	// each open shard holds exactly a quarter of the records written.
	now := rsOpenRanges(rsGraph(t, c, name))
	if len(now) != 4 || lineage.CheckCoverage(now) != nil {
		t.Fatalf("open %v", now)
	}
	for _, rg := range now {
		n := 0
		for _, h := range hashes {
			if rg.Contains(h) {
				n++
			}
		}
		if n != 400 {
			t.Fatalf("shard %s holds %d of the %d records", rg, n, len(hashes))
		}
	}
}

func TestScaleBalancedFlags(t *testing.T) {
	e := emulator.Require(t)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"--balanced", "--method", "update-shard-count"}, "--balanced places each boundary itself, with SplitShard and MergeShards calls: it does not go with --method update-shard-count"},
		{[]string{"--balanced", "--method", "splits", "--even"}, "--balanced and --even do not go together: balance the traffic or the key space"},
		{[]string{"--balanced", "--by", "keys"}, "--by \"keys\" is not known: use bytes or records"},
		{[]string{"--by", "records"}, "--by says what traffic shares count: it goes with --balanced or --sample"},
		{[]string{"--balanced", "--sample", "0"}, "--balanced needs a sample: --sample must be at least 1, not 0"},
	}
	for _, tc := range cases {
		r := runCLI(t, e.Endpoint, "", append([]string{"scale", "s", "--to", "4", "--yes"}, tc.args...)...)
		if r.code != 2 || r.stdout != "" || r.stderr != "error: "+tc.msg+"\n" {
			t.Fatalf("%v: %+v", tc.args, r)
		}
	}
}

// TestScaleRunsThePreviewedPlan: the plan a dry run wrote (-o json) is run
// as it is with --plan, whatever a new sample would say: the layout that
// results is the one previewed. Once the stream has changed, the same
// plan is refused and nothing is sent; so is a plan for another target.
func TestScaleRunsThePreviewedPlan(t *testing.T) {
	e, c, name := rsStream(t, 2)
	var recs []emulator.Rec
	for i := range 1500 {
		recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("user-%d", i%700), Data: []byte("x")})
	}
	e.Put(t, c, name, recs)
	// A sample smaller than the window: another run would sample anew.
	r := runCLI(t, "", "", "scale", name, "--to", "5", "--balanced", "--sample", "300", "--dry-run", "-o", "json")
	rsOK(t, r)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	preview := rsParse(t, r.stdout)

	// Another target than the plan's: refused before anything is sent.
	r = runCLI(t, "", "", "scale", name, "--to", "4", "--balanced", "--plan", planFile, "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "ends with 5 open shards, not 4,") || len(lines(r.stderr)) != 1 {
		t.Fatalf("another target: exit %d, %q", r.code, r.stderr)
	}
	if got := rsOpenRanges(rsGraph(t, c, name)); len(got) != 2 {
		t.Fatalf("a refused plan changed the stream: %v", got)
	}
	// --plan takes no new sample.
	r = runCLI(t, "", "", "scale", name, "--to", "5", "--balanced", "--plan", planFile, "--sample", "300", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, "--plan runs the previewed plan as it is") {
		t.Fatalf("--plan --sample: exit %d, %q", r.code, r.stderr)
	}

	r = runCLI(t, "", "", "scale", name, "--to", "5", "--balanced", "--plan", planFile, "--yes", "-o", "json")
	rsOK(t, r)
	d := rsParse(t, r.stdout)
	if !d.Result.Completed || len(d.Steps) != len(preview.Steps) {
		t.Fatalf("run: %+v", d)
	}
	now := rsOpenRanges(rsGraph(t, c, name))
	if len(now) != len(preview.After) {
		t.Fatalf("open %v, previewed %+v", now, preview.After)
	}
	for i, s := range preview.After {
		if now[i].Start.String() != s.HashKeyRange.Start || now[i].End.String() != s.HashKeyRange.End {
			t.Fatalf("shard %d is %v, previewed %+v", i, now[i], s.HashKeyRange)
		}
	}

	// The stream has changed since the preview: refused, nothing sent.
	r = runCLI(t, "", "", "scale", name, "--to", "5", "--balanced", "--plan", planFile, "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "are no longer those "+planFile+" was made from") || len(lines(r.stderr)) != 1 {
		t.Fatalf("a stale plan: exit %d, %q", r.code, r.stderr)
	}
	if got := rsOpenRanges(rsGraph(t, c, name)); len(got) != 5 {
		t.Fatalf("a stale plan changed the stream: %v", got)
	}
}
