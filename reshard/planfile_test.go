package reshard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// planJSON is what `--dry-run -o json` writes for p.
func planJSON(t *testing.T, p *Plan, dryRun bool, result string) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		*Plan
		DryRun bool            `json:"dryRun"`
		Result json.RawMessage `json:"result,omitempty"`
	}{p, dryRun, json.RawMessage(result)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A dry run's plan, read back, is the same plan: the same steps on the
// same layout, and it still applies to the stream it was made from.
func TestPlanFileRoundTrip(t *testing.T) {
	three := evenLayout(t, 3)
	g := layoutGraph(t, three...)
	in := activeInput(g)
	in.Stream.ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s"
	for _, goal := range []Goal{
		ScaleGoal{Target: 5, Method: MethodSplits},
		ScaleGoal{Target: 2, Method: MethodSplits},
		ScaleGoal{Target: 6},
		SplitGoal{Shard: sid(1)},
		MergeGoal{Shards: [2]string{sid(2), sid(1)}},
	} {
		p := mustPlan(t, in, goal)
		got, err := ReadPlan("plan.json", planJSON(t, p, true, ""))
		if err != nil {
			t.Fatalf("%+v: %v", goal, err)
		}
		if a, b := planJSON(t, got, true, ""), planJSON(t, p, true, ""); string(a) != string(b) {
			t.Fatalf("%+v: read back as\n%s\nnot\n%s", goal, a, b)
		}
		if err := got.CheckGoal("plan.json", goal); err != nil {
			t.Fatalf("%+v: %v", goal, err)
		}
		if err := got.CheckStillApplies("plan.json", in); err != nil {
			t.Fatalf("%+v: %v", goal, err)
		}
	}
}

// A plan file is refused, with the reason in one line, when it is not a
// dry run's plan, does not do what the command asks, or no longer applies.
func TestPlanFileRefusals(t *testing.T) {
	three := evenLayout(t, 3)
	in := activeInput(layoutGraph(t, three...))
	in.Stream.ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s"
	p := mustPlan(t, in, ScaleGoal{Target: 4, Method: MethodSplits})
	good := planJSON(t, p, true, "")
	tampered := strings.Replace(string(good), `"targetShardCount"`, `"x"`, 1)
	var doc map[string]any
	json.Unmarshal(good, &doc)
	doc["after"] = doc["before"]
	lying, _ := json.Marshal(doc)
	for _, tc := range []struct {
		name, file string
		want       string
	}{
		{"not JSON", "{", "is not a plan a dry run wrote"},
		{"another document", `{"stream":"s"}`, "is not a plan a dry run wrote (no stream or action)"},
		{"a run's record", string(planJSON(t, p, false, `{"completed":true}`)), "is the record of a run that was sent"},
		{"steps that do not end on after", string(lying), "its steps do not end on its layout after"},
	} {
		_, err := ReadPlan("plan.json", []byte(tc.file))
		if !errors.Is(err, ErrPlanFile) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := ReadPlan("plan.json", []byte(tampered)); err != nil {
		t.Errorf("a split plan without UpdateShardCount's field: %v", err)
	}

	got, err := ReadPlan("plan.json", good)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Goal{ScaleGoal{Target: 5, Method: MethodSplits}, SplitGoal{Shard: sid(0)}, MergeGoal{Shards: [2]string{sid(0), sid(1)}}} {
		if err := got.CheckGoal("plan.json", g); !errors.Is(err, ErrPlanFile) {
			t.Errorf("%+v: %v", g, err)
		}
	}

	other := in
	other.Stream.Name = "t"
	recreated := in
	recreated.Stream.ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s2"
	resharded := activeInput(layoutGraph(t, evenLayout(t, 2)...))
	resharded.Stream.ARN = in.Stream.ARN
	for name, tc := range map[string]struct {
		in   Input
		want string
		kind error
	}{
		"another stream": {other, "is a plan for stream s, not t", ErrPlanFile},
		"re-created":     {recreated, "deleted and created again?", ErrPlanFile},
		"resharded":      {resharded, "are no longer those plan.json was made from (3 open: [0 1 2] then, 2 open: [0 1] now)", ErrLayoutChanged},
	} {
		if err := got.CheckStillApplies("plan.json", tc.in); !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
