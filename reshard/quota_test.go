package reshard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

func withQuota(in Input, limit, open int) Input {
	in.Quota = &Quota{ShardLimit: limit, OpenShards: open}
	return in
}

// The peak of a plan, not its end, is what the quota must allow: evening
// out 4 uneven shards into the even 4-way layout goes through 5.
func TestQuotaCountsThePeak(t *testing.T) {
	uneven := layoutGraph(t, boundariesLayout([]lineage.HashKey{u(1000), two126, two127})...)
	p, err := NewPlan(activeInput(uneven), ScaleGoal{Target: 4, Method: MethodSplits, Even: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := p.growth(); g != 1 {
		t.Fatalf("growth of evening out = %d, want 1 (steps %v)", g, p.Steps)
	}
	// 4 open in the account, limit 4: no room for the fifth.
	_, err = NewPlan(withQuota(activeInput(uneven), 4, 4), ScaleGoal{Target: 4, Method: MethodSplits, Even: true})
	if !errors.Is(err, ErrShardQuota) {
		t.Fatalf("want a quota refusal, got %v", err)
	}
	want := "this scale of stream s opens up to 1 more shard, but the account has 4 of its 4-shard quota in this region open (0 free): ask AWS for a higher shard quota (Service Quotas, Kinesis \"Shards per Region\") or close shards elsewhere first"
	if err.Error() != want {
		t.Fatalf("refusal:\n got %s\nwant %s", err, want)
	}
	// The goal itself needs no more shards, so SampleShards lets it pass
	// and NewPlan is the one that refuses.
	if _, err := SampleShards(withQuota(activeInput(uneven), 4, 4), ScaleGoal{Target: 4, Method: MethodSplits, Even: true}); err != nil {
		t.Fatal(err)
	}
	p, err = NewPlan(withQuota(activeInput(uneven), 5, 4), ScaleGoal{Target: 4, Method: MethodSplits, Even: true})
	if err != nil {
		t.Fatal(err)
	}
	if last := p.Notes[len(p.Notes)-1]; last != "The account has 4 of its 5-shard quota in this region open; this opens up to 1 more shard." {
		t.Fatalf("note %q", last)
	}
}

func TestQuotaPerGoal(t *testing.T) {
	g := layoutGraph(t, evenLayout(t, 4)...)
	cases := []struct {
		name        string
		goal        Goal
		limit, open int
		refused     bool
		early       bool // refused by SampleShards already
	}{
		{"split with room", SplitGoal{Shard: sid(0)}, 5, 4, false, false},
		{"split at the limit", SplitGoal{Shard: sid(0)}, 4, 4, true, true},
		{"split, other streams fill the quota", SplitGoal{Shard: sid(0)}, 100, 100, true, true},
		{"merge needs nothing", MergeGoal{Shards: [2]string{sid(0), sid(1)}}, 4, 4, false, false},
		{"merge over a quota already exceeded", MergeGoal{Shards: [2]string{sid(0), sid(1)}}, 2, 4, false, false},
		{"scale down needs nothing", ScaleGoal{Target: 2}, 4, 4, false, false},
		{"update to 8 with room", ScaleGoal{Target: 8}, 8, 4, false, false},
		{"update to 8, one short", ScaleGoal{Target: 8}, 7, 4, true, true},
		{"splits to 8, one short", ScaleGoal{Target: 8, Method: MethodSplits}, 7, 4, true, true},
		{"splits to 9 with room", ScaleGoal{Target: 9, Method: MethodSplits}, 9, 4, false, false},
		{"splits down to 3 at the limit", ScaleGoal{Target: 3, Method: MethodSplits}, 4, 4, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := withQuota(activeInput(g), c.limit, c.open)
			_, early := SampleShards(in, c.goal)
			p, err := NewPlan(in, c.goal)
			if c.refused != errors.Is(err, ErrShardQuota) || (!c.refused && err != nil) {
				t.Fatalf("NewPlan: %v (want refused %v)", err, c.refused)
			}
			if c.early != errors.Is(early, ErrShardQuota) || (!c.early && early != nil) {
				t.Fatalf("SampleShards: %v (want refused %v)", early, c.early)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "this "+string(c.goal.action())+" of stream s opens up to ") {
					t.Fatalf("refusal %q", err)
				}
				return
			}
			grows := p.growth() > 0
			noted := false
			for _, n := range p.Notes {
				noted = noted || strings.HasPrefix(n, "The account has ")
			}
			if grows != noted {
				t.Fatalf("growth %d, quota note %v: %q", p.growth(), noted, p.Notes)
			}
		})
	}
}

func TestQuotaUnknownIsANoteNotARefusal(t *testing.T) {
	g := layoutGraph(t, evenLayout(t, 2)...)
	in := activeInput(g)
	in.QuotaErr = fakeQuotaErr("not allowed to call kinesis:DescribeLimits")
	p, err := NewPlan(in, SplitGoal{Shard: sid(0)})
	if err != nil {
		t.Fatal(err)
	}
	want := "The account's shard quota was not checked (not allowed to call kinesis:DescribeLimits); this opens up to 1 more shard, which the service refuses (LimitExceeded) if the quota is reached."
	if p.Notes[len(p.Notes)-1] != want {
		t.Fatalf("notes %q", p.Notes)
	}
	// A merge opens nothing: no note at all.
	p, err = NewPlan(in, MergeGoal{Shards: [2]string{sid(1), sid(0)}})
	if err != nil || len(p.Notes) != 0 {
		t.Fatalf("%v %q", err, p.Notes)
	}
	// Neither quota nor reason (a caller that did not ask): silent.
	p, err = NewPlan(activeInput(g), SplitGoal{Shard: sid(0)})
	if err != nil || len(p.Notes) != 0 {
		t.Fatalf("%v %q", err, p.Notes)
	}
}

func fakeQuotaErr(why string) error {
	_, err := LoadQuota(context.Background(), limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) {
		return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: x is not authorized"}
	}))
	if err == nil || reasonOf(err) != why {
		panic("fakeQuotaErr: " + err.Error())
	}
	return err
}

type limitsFunc func() (*kinesis.DescribeLimitsOutput, error)

func (f limitsFunc) DescribeLimits(context.Context, *kinesis.DescribeLimitsInput, ...func(*kinesis.Options)) (*kinesis.DescribeLimitsOutput, error) {
	return f()
}

type limitsCtxFunc func(context.Context) (*kinesis.DescribeLimitsOutput, error)

func (f limitsCtxFunc) DescribeLimits(ctx context.Context, _ *kinesis.DescribeLimitsInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeLimitsOutput, error) {
	return f(ctx)
}

func TestLoadQuota(t *testing.T) {
	ctx := context.Background()
	q, err := LoadQuota(ctx, limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) {
		return &kinesis.DescribeLimitsOutput{ShardLimit: aws.Int32(500), OpenShardCount: aws.Int32(498)}, nil
	}))
	if err != nil || *q != (Quota{ShardLimit: 500, OpenShards: 498}) || q.Free() != 2 {
		t.Fatalf("%+v %v", q, err)
	}
	// The call has its own deadline, whatever the caller's context.
	_, _ = LoadQuota(ctx, limitsCtxFunc(func(ctx context.Context) (*kinesis.DescribeLimitsOutput, error) {
		dl, ok := ctx.Deadline()
		if left := time.Until(dl); !ok || left > QuotaTimeout || QuotaTimeout > 5*time.Second {
			t.Errorf("DescribeLimits deadline in %v (set %v), want within %v", left, ok, QuotaTimeout)
		}
		return nil, context.DeadlineExceeded
	}))
	for _, c := range []struct {
		api  any
		want string
	}{
		{struct{}{}, "the client cannot call DescribeLimits"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) {
			return nil, &smithy.GenericAPIError{Code: "UnknownOperationException"}
		}), "the endpoint does not implement DescribeLimits"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) {
			return nil, &smithy.GenericAPIError{Code: "LimitExceededException"}
		}), "DescribeLimits was throttled (it allows one call per second per account)"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) {
			return nil, &smithy.GenericAPIError{Code: "InternalFailure"}
		}), "DescribeLimits failed with InternalFailure"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) { return nil, context.DeadlineExceeded }), "DescribeLimits did not answer in time"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) { return &kinesis.DescribeLimitsOutput{}, nil }), "DescribeLimits did not return the shard limit"},
		{limitsFunc(func() (*kinesis.DescribeLimitsOutput, error) { return nil, nil }), "DescribeLimits did not return the shard limit"},
	} {
		q, err := LoadQuota(ctx, c.api)
		if q != nil || !errors.Is(err, ErrQuotaUnknown) || reasonOf(err) != c.want {
			t.Errorf("%v %v, want %q", q, err, c.want)
		}
	}
}
