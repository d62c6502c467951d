package reshard

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

var errLost = errors.New("read tcp 127.0.0.1:4567: connection reset by peer")

// lossy loses the answer to one reshard call: the call reaches the fake
// (or, with instead, something else happens to the stream), then the
// client sees errLost.
type lossy struct {
	*fake.Fake
	calls   int
	lose    int    // the reshard call whose answer is lost, 1-based
	instead func() // what happens instead of the call; nil: the call
}

func (l *lossy) reshard(call func() error) error {
	l.calls++
	if l.calls != l.lose {
		return call()
	}
	if l.instead != nil {
		l.instead()
	} else if err := call(); err != nil {
		return err
	}
	return errLost
}

func (l *lossy) SplitShard(ctx context.Context, in *kinesis.SplitShardInput, o ...func(*kinesis.Options)) (*kinesis.SplitShardOutput, error) {
	return &kinesis.SplitShardOutput{}, l.reshard(func() error { _, err := l.Fake.SplitShard(ctx, in, o...); return err })
}

func (l *lossy) MergeShards(ctx context.Context, in *kinesis.MergeShardsInput, o ...func(*kinesis.Options)) (*kinesis.MergeShardsOutput, error) {
	return &kinesis.MergeShardsOutput{}, l.reshard(func() error { _, err := l.Fake.MergeShards(ctx, in, o...); return err })
}

func (l *lossy) UpdateShardCount(ctx context.Context, in *kinesis.UpdateShardCountInput, o ...func(*kinesis.Options)) (*kinesis.UpdateShardCountOutput, error) {
	return &kinesis.UpdateShardCountOutput{}, l.reshard(func() error { _, err := l.Fake.UpdateShardCount(ctx, in, o...); return err })
}

// A step whose answer was lost counts as done when the listing shows the
// layout the plan expects after it, and only then: the executor looks
// (EventCheck), records it (Result.Lost), and a lost last step is success.
func TestTookEffect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shards  int
		goal    Goal
		lose    int
		instead func(fk *fake.Fake)
		want    bool
		// done: the closed and opened shards of every step in res.Done.
		done [][2][]string
	}{
		{name: "split", shards: 2, goal: SplitGoal{Shard: sid(1)}, lose: 1, want: true,
			done: [][2][]string{{{sid(1)}, {sid(2), sid(3)}}}},
		{name: "merge", shards: 3, goal: MergeGoal{Shards: [2]string{sid(1), sid(2)}}, lose: 1, want: true,
			done: [][2][]string{{{sid(1), sid(2)}, {sid(3)}}}},
		{name: "update shard count", shards: 2, goal: ScaleGoal{Target: 3}, lose: 1, want: true,
			done: [][2][]string{{{sid(0), sid(1)}, {sid(2), sid(3), sid(4)}}}},
		// The second split of a shard the first step made: the shard it
		// closes has no id in the plan; the listing names it.
		{name: "second step", shards: 1, goal: ScaleGoal{Target: 4, Method: MethodSplits}, lose: 2, want: true,
			done: [][2][]string{{{sid(0)}, {sid(1), sid(2)}}, {{sid(1)}, {sid(3), sid(4)}}}},
		{name: "not sent", shards: 2, goal: SplitGoal{Shard: sid(1)}, lose: 1, instead: func(*fake.Fake) {}, want: false},
		{name: "someone else's split", shards: 2, goal: SplitGoal{Shard: sid(1)}, lose: 1, want: false,
			instead: func(fk *fake.Fake) {
				fk.Split("s", sid(1), new(big.Int).Add(two127.Big(), new(big.Int).Rsh(two126.Big(), 1)))
			}},
		{name: "someone else's merge", shards: 2, goal: ScaleGoal{Target: 3}, lose: 1, want: false,
			instead: func(fk *fake.Fake) { fk.Merge("s", sid(0), sid(1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := fake.New()
			fk.AddStream("s", tc.shards)
			p := planFor(t, fk, "s", tc.goal)
			api := &lossy{Fake: fk, lose: tc.lose}
			if tc.instead != nil {
				api.instead = func() { tc.instead(fk) }
			}
			x := executor(fk, "s", nil)
			x.API = api
			var checks []Event
			x.OnEvent = func(e Event) {
				if e.Kind == EventCheck {
					checks = append(checks, e)
				}
			}
			res, err := x.Run(context.Background(), p)
			if len(checks) != 1 || checks[0].Step != tc.lose || !errors.Is(checks[0].Err, errLost) {
				t.Fatalf("check events %+v, want one for step %d", checks, tc.lose)
			}
			var se *StepError
			last := tc.lose == len(p.Steps)
			switch {
			case tc.want && last:
				// The last step's answer was lost and it took effect: done.
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case !errors.As(err, &se) || se.Sent || se.Step != tc.lose || !errors.Is(err, errLost):
				t.Fatalf("run: %v", err)
			}
			if !tc.want {
				if res.Lost != nil || len(res.Done) != tc.lose-1 {
					t.Fatalf("res: %d steps done, lost %v", len(res.Done), res.Lost)
				}
				return
			}
			if res.Lost == nil || res.Lost.Step != tc.lose || !errors.Is(res.Lost.Err, errLost) {
				t.Fatalf("lost %+v, want step %d", res.Lost, tc.lose)
			}
			g, err := lineage.Load(context.Background(), fk, lineage.ListOptions{StreamName: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Done) != len(tc.done) {
				t.Fatalf("%d steps done, want %d", len(res.Done), len(tc.done))
			}
			for i, d := range res.Done {
				if d.Step != i+1 || d.Call != p.Steps[i].Call || !slices.Equal(d.Closed, tc.done[i][0]) || !slices.Equal(d.Opened, tc.done[i][1]) {
					t.Fatalf("step %d: %+v, want closed %v opened %v", i+1, d, tc.done[i][0], tc.done[i][1])
				}
			}
			if !slices.Equal(res.Layout, LayoutOf(g)) {
				t.Fatalf("layout %v, listing %v", res.Layout, LayoutOf(g))
			}
			if tc.goal.action() != ActionScale || tc.lose > 1 {
				if !slices.Equal(ranges(res.Layout), ranges(mustLayoutAfter(t, p, tc.lose-1))) {
					t.Fatalf("layout %v is not the planned one", res.Layout)
				}
			}
		})
	}
	// A step the executor saw fail after sending it is not a lost answer.
	fk := fake.New()
	fk.AddStream("s", 2)
	p := planFor(t, fk, "s", SplitGoal{Shard: sid(1)})
	fk.SplitHalf("s", sid(1))
	g, err := lineage.Load(context.Background(), fk, lineage.ListOptions{StreamName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Done: []DoneStep{}}
	if tookEffect(p, res, &StepError{Step: 1, Total: 1, Sent: true, Err: errLost}, g) || len(res.Done) != 0 {
		t.Fatalf("a sent step counted: %+v", res)
	}
}

func mustLayoutAfter(t *testing.T, p *Plan, i int) []Slot {
	t.Helper()
	l, err := p.LayoutAfter(i)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
