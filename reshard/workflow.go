package reshard

import (
	"context"
	"fmt"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Planner makes the plan of a goal against the stream as it is now: the
// first half of the reshard workflow (describe, list, the shard quota when
// the goal may open shards, a traffic sample when asked, the plan), the
// Executor being the second. split, merge and scale use it; the dashboard
// plans from the listing it shows and runs the same Executor.
type Planner struct {
	API    API
	Stream kstream.Ref
	// Sample samples the traffic of the shards the goal needs it for; nil
	// means no sample (the plan then has no traffic shares, and a goal
	// that needs one is refused by NewPlan). The commands wrap
	// SampleTraffic with their progress line.
	Sample func(ctx context.Context, shards []*lineage.Shard) (*Sample, error)
}

// Input describes the stream and lists its shards: the planner's input,
// without quota or sample.
func (pl *Planner) Input(ctx context.Context) (Input, error) {
	sum, err := kstream.Describe(ctx, pl.API, pl.Stream)
	if err != nil {
		return Input{}, err
	}
	g, err := lineage.Load(ctx, pl.API, lineage.ListOptions{StreamName: pl.Stream.Name, StreamARN: pl.Stream.ARN})
	if err != nil {
		return Input{}, err
	}
	return Input{Stream: Stream{Name: pl.Stream.Name, ARN: sum.ARN, Status: sum.Status, Mode: sum.Mode}, Graph: g}, nil
}

// Plan lists the stream, checks the goal (against the account's shard
// quota when it may open shards: a plan that outgrows it would fail
// part-way) and samples traffic when Sample is set: the plan, or why there
// is none.
func (pl *Planner) Plan(ctx context.Context, goal Goal) (*Plan, error) {
	in, err := pl.Input(ctx)
	if err != nil {
		return nil, err
	}
	if MayOpenShards(in, goal) {
		in.Quota, in.QuotaErr = LoadQuota(ctx, pl.API)
	}
	toSample, err := SampleShards(in, goal)
	if err != nil {
		return nil, err
	}
	if pl.Sample != nil {
		if in.Sample, err = pl.Sample(ctx, toSample); err != nil {
			return nil, err
		}
	}
	return NewPlan(in, goal)
}

// Load reads a dry run's plan (the -o json document in b, from the file
// named path) and checks that it does what goal asks and still applies to
// the stream: what runs is what was previewed, or nothing.
func (pl *Planner) Load(ctx context.Context, goal Goal, path string, b []byte) (*Plan, error) {
	plan, err := ReadPlan(path, b)
	if err != nil {
		return nil, err
	}
	if err := plan.CheckGoal(path, goal); err != nil {
		return nil, err
	}
	in, err := pl.Input(ctx)
	if err != nil {
		return nil, err
	}
	if err := plan.CheckStillApplies(path, in); err != nil {
		return nil, err
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("This is the plan previewed in %s, run as it is: the stream still has the open shards it was made from.", path))
	return plan, nil
}
