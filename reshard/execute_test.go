package reshard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

var _ API = (*kinesis.Client)(nil)
var _ API = (*fake.Fake)(nil)
var _ SampleAPI = (*kinesis.Client)(nil)

// planFor lists the fake stream and plans a goal.
func planFor(t *testing.T, fk *fake.Fake, stream string, g Goal) *Plan {
	t.Helper()
	ctx := context.Background()
	sum, err := kstream.Describe(ctx, fk, kstream.Ref{Name: stream})
	if err != nil {
		t.Fatal(err)
	}
	gr, err := lineage.Load(ctx, fk, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Input{Stream: Stream{Name: stream, Status: sum.Status, Mode: sum.Mode}, Graph: gr}, g)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s string
	switch e.Kind {
	case EventSend:
		s = fmt.Sprintf("send %d/%d %s", e.Step, e.Total, e.Desc)
	case EventWait:
		s = fmt.Sprintf("wait %d %s", e.Step, e.Status)
	case EventDone:
		s = fmt.Sprintf("done %d closed %v opened %v", e.Step, e.Done.Closed, e.Done.Opened)
	}
	r.events = append(r.events, s)
}

func executor(fk *fake.Fake, stream string, r *recorder) *Executor {
	x := &Executor{API: fk, Stream: kstream.Ref{Name: stream}, Wait: kstream.WaitOptions{MinDelay: time.Millisecond, MaxDelay: time.Millisecond}, SettleDelay: time.Millisecond}
	if r != nil {
		x.OnEvent = r.on
	}
	return x
}

// updatingAfterReshard makes the fake answer UPDATING to the first n
// DescribeStreamSummary calls after each reshard call, then ACTIVE.
func updatingAfterReshard(fk *fake.Fake, stream string, n int, also func(op string) error) {
	left := 0
	fk.Hook = func(op string, in any) error {
		if also != nil {
			if err := also(op); err != nil {
				return err
			}
		}
		switch op {
		case "SplitShard", "MergeShards", "UpdateShardCount":
			left = n
		case "DescribeStreamSummary":
			if left > 0 {
				left--
				fk.SetStatus(stream, types.StreamStatusUpdating)
			} else {
				fk.SetStatus(stream, types.StreamStatusActive)
			}
		}
		return nil
	}
}

func TestExecuteSplit(t *testing.T) {
	fk := fake.New()
	fk.AddStream("s", 2)
	p := planFor(t, fk, "s", SplitGoal{Shard: sid(1)})
	updatingAfterReshard(fk, "s", 2, nil)
	rec := &recorder{}
	res, err := executor(fk, "s", rec).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"send 1/1 SplitShard shardId-000000000001 at hash key 255211775190703847597530955573826158592",
		"wait 1 UPDATING", "wait 1 UPDATING", "wait 1 ACTIVE",
		"done 1 closed [shardId-000000000001] opened [shardId-000000000002 shardId-000000000003]",
	}
	if !slices.Equal(rec.events, want) {
		t.Fatalf("events\n%q\nwant\n%q", rec.events, want)
	}
	if !slices.Equal(ranges(res.Layout), ranges(p.After)) || res.Layout[1].ID != sid(2) || res.Layout[2].ID != sid(3) {
		t.Fatalf("layout %v", res.Layout)
	}
	d := res.Done[0]
	if len(res.Done) != 1 || d.Call != SplitShard || d.Args.ShardToSplit.ID != sid(1) || *d.Args.NewStartingHashKey != *p.Steps[0].Args.NewStartingHashKey {
		t.Fatalf("done %+v", res.Done)
	}
	if !slices.Equal(fk.OpenShards("s"), []string{sid(0), sid(2), sid(3)}) || fk.Calls("SplitShard") != 1 {
		t.Fatalf("fake: %v", fk.OpenShards("s"))
	}
}

func TestExecuteSplitsPlanResolvesNewShards(t *testing.T) {
	fk := fake.New()
	fk.AddStream("s", 4)
	p := planFor(t, fk, "s", ScaleGoal{Target: 5, Method: MethodSplits})
	if len(p.Steps) != 7 {
		t.Fatalf("%d steps", len(p.Steps))
	}
	rec := &recorder{}
	res, err := executor(fk, "s", rec).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ranges(res.Layout), evenLayout(t, 5)) || len(res.Done) != 7 {
		t.Fatalf("layout %v, %d done", res.Layout, len(res.Done))
	}
	// Step 2 merges the upper child of step 1's split (shardId-4..., made
	// by the service) with shard 1: its id was resolved from the listing.
	m := res.Done[1]
	if m.Call != MergeShards || m.Args.ShardToMerge.ID != sid(5) || m.Args.AdjacentShardToMerge.ID != sid(1) ||
		!slices.Equal(m.Closed, []string{sid(5), sid(1)}) || !slices.Equal(m.Opened, []string{sid(6)}) {
		t.Fatalf("step 2 %+v", m)
	}
	if !slices.Contains(rec.events, "send 2/7 MergeShards shardId-000000000005 with shardId-000000000001") {
		t.Fatalf("events %q", rec.events)
	}
	if fk.Calls("SplitShard") != 4 || fk.Calls("MergeShards") != 3 {
		t.Fatalf("calls %d %d", fk.Calls("SplitShard"), fk.Calls("MergeShards"))
	}
}

func TestExecuteStopsAtFirstFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"daily limit", &types.LimitExceededException{Message: aws.String("Exceeded the limit of UpdateShardCount calls")}},
		{"someone else's change", &types.ResourceInUseException{Message: aws.String("Stream s under account 123456789012 not ACTIVE, instead in state UPDATING")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := fake.New()
			fk.AddStream("s", 1)
			p := planFor(t, fk, "s", ScaleGoal{Target: 4, Method: MethodSplits})
			splits := 0
			updatingAfterReshard(fk, "s", 1, func(op string) error {
				if op == "SplitShard" {
					if splits++; splits == 2 {
						return tc.err
					}
				}
				return nil
			})
			res, err := executor(fk, "s", nil).Run(context.Background(), p)
			var se *StepError
			if !errors.As(err, &se) || !errors.Is(err, tc.err) || se.Step != 2 || se.Total != 3 || se.Sent {
				t.Fatalf("err %#v", err)
			}
			// Step 2 splits the lower child of step 1, made by the service as shard 1.
			wantCtx := "step 2 of 3 (SplitShard shardId-000000000001 at hash key 85070591730234615865843651857942052864) failed"
			if se.Context() != wantCtx || err.Error() != wantCtx+": "+tc.err.Error() {
				t.Fatalf("error %q", err.Error())
			}
			// One step done; the layout is as it is now, listed after the failure.
			if len(res.Done) != 1 || !slices.Equal(ranges(res.Layout), evenLayout(t, 2)) || res.Layout[0].ID != sid(1) || res.Layout[1].ID != sid(2) {
				t.Fatalf("done %v layout %v", res.Done, res.Layout)
			}
			if splits != 2 || fk.Calls("SplitShard") != 2 {
				t.Fatalf("%d split calls: a failed call must not be retried or followed", fk.Calls("SplitShard"))
			}
		})
	}
}

func TestExecuteWaitTimesOut(t *testing.T) {
	fk := fake.New()
	fk.AddStream("s", 1)
	p := planFor(t, fk, "s", SplitGoal{Shard: sid(0)})
	updatingAfterReshard(fk, "s", 1<<30, nil)
	x := executor(fk, "s", nil)
	x.Wait.Timeout = 30 * time.Millisecond
	res, err := x.Run(context.Background(), p)
	var se *StepError
	var te *kstream.TimeoutError
	if !errors.As(err, &se) || !se.Sent || !errors.As(err, &te) || len(res.Done) != 0 {
		t.Fatalf("%v", err)
	}
	if se.Context() != "step 1 of 1 (SplitShard shardId-000000000000 at hash key 170141183460469231731687303715884105728) was sent, then failed" {
		t.Fatal(se.Context())
	}
	if !slices.Equal(ranges(res.Layout), evenLayout(t, 2)) {
		t.Fatalf("layout %v", res.Layout)
	}
}

func TestExecuteRefusesBeforeSending(t *testing.T) {
	t.Run("layout changed since the plan", func(t *testing.T) {
		fk := fake.New()
		fk.AddStream("s", 2)
		p := planFor(t, fk, "s", MergeGoal{Shards: [2]string{sid(0), sid(1)}})
		fk.SplitHalf("s", sid(1))
		_, err := executor(fk, "s", nil).Run(context.Background(), p)
		if !errors.Is(err, ErrLayoutChanged) || fk.Calls("MergeShards") != 0 ||
			err.Error() != "the open shards of stream s changed after the plan was made (someone else resharded it?); nothing was sent: run the command again for a new plan" {
			t.Fatal(err)
		}
	})
	t.Run("stream updating", func(t *testing.T) {
		fk := fake.New()
		fk.AddStream("s", 2)
		p := planFor(t, fk, "s", SplitGoal{Shard: sid(0)})
		fk.SetStatus("s", types.StreamStatusUpdating)
		_, err := executor(fk, "s", nil).Run(context.Background(), p)
		if !errors.Is(err, ErrNotActive) || fk.Calls("SplitShard") != 0 {
			t.Fatal(err)
		}
	})
}

func TestExecuteUpdateShardCount(t *testing.T) {
	fk := fake.New()
	fk.AddStream("s", 4)
	p := planFor(t, fk, "s", ScaleGoal{Target: 6})
	rec := &recorder{}
	res, err := executor(fk, "s", rec).Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ranges(res.Layout), evenLayout(t, 6)) || fk.Calls("UpdateShardCount") != 1 {
		t.Fatalf("layout %v", res.Layout)
	}
	if rec.events[0] != "send 1/1 UpdateShardCount to 6 shards" ||
		rec.events[len(rec.events)-1] != "done 1 closed [shardId-000000000000 shardId-000000000001 shardId-000000000002 shardId-000000000003] opened [shardId-000000000004 shardId-000000000005 shardId-000000000006 shardId-000000000007 shardId-000000000008 shardId-000000000009]" {
		t.Fatalf("events %q", rec.events)
	}
}

func TestExecuteDetectsUnplannedLayout(t *testing.T) {
	fk := fake.New()
	fk.AddStream("s", 1)
	p := planFor(t, fk, "s", SplitGoal{Shard: sid(0)})
	// Someone splits the new upper child right after our call.
	fk.Hook = func(op string, in any) error {
		if op == "DescribeStreamSummary" && fk.Calls("SplitShard") == 1 && len(fk.OpenShards("s")) == 2 {
			fk.Hook = nil
			fk.SplitHalf("s", sid(2))
		}
		return nil
	}
	res, err := executor(fk, "s", nil).Run(context.Background(), p)
	var se *StepError
	if !errors.As(err, &se) || !se.Sent || !errors.Is(err, ErrLayoutChanged) || len(res.Layout) != 3 {
		t.Fatalf("%v / %v", err, res.Layout)
	}
	if se.Err.Error() != "after the call the open shards of stream s are not the planned ones (3 open, 2 planned): someone else may be resharding it" {
		t.Fatal(se.Err)
	}
}

// TestExecuteNeverRetriesLimitExceeded runs a real SDK client, with the
// SDK's default retryer (which retries LimitExceeded), against a stub that
// answers every SplitShard with LimitExceededException: one call is sent.
func TestExecuteNeverRetriesLimitExceeded(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "Kinesis_20131202.")
		mu.Lock()
		calls[op]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch op {
		case "DescribeStreamSummary":
			fmt.Fprint(w, `{"StreamDescriptionSummary":{"StreamName":"s","StreamARN":"arn:aws:kinesis:us-east-1:123456789012:stream/s","StreamStatus":"ACTIVE","OpenShardCount":1,"RetentionPeriodHours":24,"StreamCreationTimestamp":1700000000,"EnhancedMonitoring":[]}}`)
		case "ListShards":
			fmt.Fprint(w, `{"Shards":[{"ShardId":"shardId-000000000000","HashKeyRange":{"StartingHashKey":"0","EndingHashKey":"340282366920938463463374607431768211455"},"SequenceNumberRange":{"StartingSequenceNumber":"1"}}]}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"LimitExceededException","message":"Exceeded the number of allowed UpdateShardCount calls"}`)
		}
	}))
	defer srv.Close()
	c := kinesis.New(kinesis.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.AnonymousCredentials{}})
	g := layoutGraph(t, lineage.WholeSpace)
	p, err := NewPlan(activeInput(g), SplitGoal{Shard: sid(0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Executor{API: c, Stream: kstream.Ref{Name: "s"}}).Run(context.Background(), p)
	var lee *types.LimitExceededException
	if !errors.As(err, &lee) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["SplitShard"] != 1 {
		t.Fatalf("SplitShard sent %d times", calls["SplitShard"])
	}
}
