package lineage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

const testARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"

// fakeLister serves a fixed listing in pages the way the service does, and
// records every input it was sent. Its NextToken is "t<generation>-<offset>".
type fakeLister struct {
	shards      []types.Shard
	defaultPage int // page size when MaxResults is unset (kinesis-mock: 100)
	maxPage     int // the service's cap on MaxResults (1,000)

	calls []kinesis.ListShardsInput
	// hook, when set, runs first on every call (numbered from 1) and may
	// replace the answer with an error, or reshape the page.
	hook      func(call int, in *kinesis.ListShardsInput) error
	noToken   bool // like kinesalite: never send a NextToken
	shapePage func(call int, page []types.Shard) []types.Shard
}

func (f *fakeLister) ListShards(ctx context.Context, in *kinesis.ListShardsInput, _ ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	f.calls = append(f.calls, *in)
	call := len(f.calls)
	if f.hook != nil {
		if err := f.hook(call, in); err != nil {
			return nil, err
		}
	}
	if in.NextToken != nil && (in.StreamName != nil || in.StreamARN != nil || in.ShardFilter != nil || in.ExclusiveStartShardId != nil || in.StreamCreationTimestamp != nil) {
		// What the service answers (docs/KINESIS-NOTES.md §4).
		return nil, &types.InvalidArgumentException{Message: aws.String("NextToken and ShardFilter cannot be provided together.")}
	}
	offset := 0
	if in.NextToken != nil {
		_, off, ok := strings.Cut(*in.NextToken, "-")
		n, err := strconv.Atoi(off)
		if !ok || err != nil {
			return nil, &types.InvalidArgumentException{Message: aws.String("bad token")}
		}
		offset = n
	} else if in.StreamName == nil && in.StreamARN == nil {
		return nil, &types.InvalidArgumentException{Message: aws.String("no stream")}
	}
	size := f.defaultPage
	if in.MaxResults != nil {
		size = min(int(*in.MaxResults), f.maxPage)
	}
	end := min(offset+size, len(f.shards))
	out := &kinesis.ListShardsOutput{Shards: slices.Clone(f.shards[offset:end])}
	if f.shapePage != nil {
		out.Shards = f.shapePage(call, out.Shards)
	}
	if end < len(f.shards) && !f.noToken {
		out.NextToken = aws.String(fmt.Sprintf("t%d-%d", call, end))
	}
	return out, nil
}

func newFake(n int) *fakeLister {
	f := &fakeLister{defaultPage: 100, maxPage: 1000}
	layout, _ := EvenLayout(max(n, 1))
	for i := range n {
		f.shards = append(f.shards, listedShard(sid(i), layout[i], true))
	}
	return f
}

// checkCalls asserts the paging contract: the first call of each round
// names the stream (the ARN when given) and filter, later calls carry only
// NextToken and MaxResults.
func checkCalls(t *testing.T, calls []kinesis.ListShardsInput, o ListOptions, firstCalls []int) {
	t.Helper()
	for i, in := range calls {
		wantMax := o.PageSize > 0
		if (in.MaxResults != nil) != wantMax || wantMax && *in.MaxResults != o.PageSize {
			t.Errorf("call %d: MaxResults %v, want %d", i+1, in.MaxResults, o.PageSize)
		}
		in.MaxResults = nil
		if slices.Contains(firstCalls, i+1) {
			want := kinesis.ListShardsInput{ShardFilter: o.Filter}
			if o.StreamARN != "" {
				want.StreamARN = aws.String(o.StreamARN)
			} else {
				want.StreamName = aws.String(o.StreamName)
			}
			if aws.ToString(in.StreamARN) != aws.ToString(want.StreamARN) || aws.ToString(in.StreamName) != aws.ToString(want.StreamName) ||
				(in.StreamARN == nil) != (want.StreamARN == nil) || (in.StreamName == nil) != (want.StreamName == nil) ||
				in.ShardFilter != want.ShardFilter || in.NextToken != nil || in.ExclusiveStartShardId != nil || in.StreamCreationTimestamp != nil {
				t.Errorf("call %d (a first page): %+v, want stream and filter only", i+1, in)
			}
			continue
		}
		if in.NextToken == nil || *in.NextToken == "" {
			t.Errorf("call %d: no NextToken", i+1)
		}
		in.NextToken = nil
		if in != (kinesis.ListShardsInput{}) {
			t.Errorf("call %d: carries more than NextToken and MaxResults: %+v", i+1, in)
		}
	}
}

func checkIDs(t *testing.T, got []types.Shard, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d shards, want %d", len(got), n)
	}
	for i, s := range got {
		if *s.ShardId != sid(i) {
			t.Fatalf("shard %d is %s, want %s", i, *s.ShardId, sid(i))
		}
	}
}

func TestListShardsPaging(t *testing.T) {
	atLatest := &types.ShardFilter{Type: types.ShardFilterTypeAtLatest}
	tests := []struct {
		name   string
		shards int
		opts   ListOptions
		calls  int
	}{
		{"name, service page size 100", 250, ListOptions{StreamName: "orders"}, 3},
		{"ARN preferred, page size 1000", 2500, ListOptions{StreamName: "orders", StreamARN: testARN, PageSize: 1000}, 3},
		{"filter and page size 100", 1000, ListOptions{StreamName: "orders", Filter: atLatest, PageSize: 100}, 10},
		{"page size above the cap", 2100, ListOptions{StreamARN: testARN, PageSize: 5000}, 3},
		{"exact multiple", 300, ListOptions{StreamName: "orders", PageSize: 100}, 3},
		{"one page", 5, ListOptions{StreamName: "orders"}, 1},
		{"tiny pages", 7, ListOptions{StreamName: "orders", PageSize: 1}, 7},
		{"no shards", 0, ListOptions{StreamName: "orders"}, 1},
		{"10,000 shards", 10000, ListOptions{StreamARN: testARN}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.shards)
			got, err := ListShards(context.Background(), f, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkIDs(t, got, tt.shards)
			if len(f.calls) != tt.calls {
				t.Errorf("%d calls, want %d", len(f.calls), tt.calls)
			}
			checkCalls(t, f.calls, tt.opts, []int{1})
		})
	}
}

func TestListShardsOddPages(t *testing.T) {
	t.Run("missing NextToken ends the listing", func(t *testing.T) {
		f := newFake(250)
		f.noToken = true
		got, err := ListShards(context.Background(), f, ListOptions{StreamName: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, got, 100)
		if len(f.calls) != 1 {
			t.Errorf("%d calls", len(f.calls))
		}
	})
	t.Run("empty page with a token goes on", func(t *testing.T) {
		f := newFake(30)
		f.shapePage = func(call int, page []types.Shard) []types.Shard {
			if call == 2 {
				return nil // and the shards it held come on no page: the listing says what the service says
			}
			return page
		}
		got, err := ListShards(context.Background(), f, ListOptions{StreamName: "orders", PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 20 || *got[9].ShardId != sid(9) || *got[10].ShardId != sid(20) || len(f.calls) != 3 {
			t.Errorf("got %d shards in %d calls", len(got), len(f.calls))
		}
	})
	t.Run("shards repeated across pages are kept once", func(t *testing.T) {
		f := newFake(30)
		f.shapePage = func(call int, page []types.Shard) []types.Shard {
			if call > 1 {
				return append([]types.Shard{f.shards[0], f.shards[(call-1)*10-1]}, page...)
			}
			return page
		}
		got, err := ListShards(context.Background(), f, ListOptions{StreamName: "orders", PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, got, 30)
	})
	t.Run("the same token twice is an error", func(t *testing.T) {
		f := &stuckLister{}
		_, err := ListShards(context.Background(), f, ListOptions{StreamName: "orders"})
		if err == nil || !strings.Contains(err.Error(), "the service returned the same NextToken again") {
			t.Fatalf("err = %v", err)
		}
		if f.calls != 2 {
			t.Errorf("%d calls, want 2", f.calls)
		}
	})
}

// stuckLister always answers with the same token.
type stuckLister struct{ calls int }

func (s *stuckLister) ListShards(context.Context, *kinesis.ListShardsInput, ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	s.calls++
	return &kinesis.ListShardsOutput{NextToken: aws.String("same")}, nil
}

func TestListShardsExpiredToken(t *testing.T) {
	expired := &types.ExpiredNextTokenException{Message: aws.String("The timestamp of the token has expired.")}
	opts := ListOptions{StreamARN: testARN, Filter: &types.ShardFilter{Type: types.ShardFilterTypeFromTrimHorizon}, PageSize: 100}

	t.Run("expiry on page 3 restarts once", func(t *testing.T) {
		f := newFake(500)
		f.hook = func(call int, in *kinesis.ListShardsInput) error {
			if call == 3 {
				return expired
			}
			return nil
		}
		got, err := ListShards(context.Background(), f, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkIDs(t, got, 500) // no shard twice although pages 1-2 were fetched twice
		// Calls: 1, 2, 3 (expired), then 4..8 = pages 1..5 again.
		if len(f.calls) != 8 {
			t.Fatalf("%d calls, want 8", len(f.calls))
		}
		checkCalls(t, f.calls, opts, []int{1, 4})
	})
	t.Run("persistent expiry gives up after three restarts", func(t *testing.T) {
		f := newFake(500)
		f.hook = func(call int, in *kinesis.ListShardsInput) error {
			if in.NextToken != nil {
				return expired
			}
			return nil
		}
		got, err := ListShards(context.Background(), f, opts)
		var e *types.ExpiredNextTokenException
		if !errors.As(err, &e) || got != nil {
			t.Fatalf("got %d shards, err %v; want ExpiredNextTokenException", len(got), err)
		}
		if len(f.calls) != 8 { // four rounds of page 1 + page 2
			t.Fatalf("%d calls, want 8", len(f.calls))
		}
		checkCalls(t, f.calls, opts, []int{1, 3, 5, 7})
		if want := "list shards of " + testARN + " (page 2): ExpiredNextTokenException: The timestamp of the token has expired."; err.Error() != want {
			t.Errorf("error = %q\nwant    %q", err, want)
		}
	})
}

func TestListShardsErrors(t *testing.T) {
	t.Run("service error is wrapped", func(t *testing.T) {
		f := newFake(10)
		f.hook = func(int, *kinesis.ListShardsInput) error {
			return &types.ResourceNotFoundException{Message: aws.String("Stream orders under account 123456789012 not found.")}
		}
		_, err := ListShards(context.Background(), f, ListOptions{StreamName: "orders"})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) || !strings.HasPrefix(err.Error(), "list shards of orders (page 1): ") {
			t.Fatalf("err = %v", err)
		}
		if len(f.calls) != 1 {
			t.Errorf("%d calls", len(f.calls))
		}
	})
	t.Run("no stream", func(t *testing.T) {
		f := newFake(10)
		_, err := ListShards(context.Background(), f, ListOptions{})
		if !errors.Is(err, ErrNoStream) || len(f.calls) != 0 {
			t.Fatalf("err = %v after %d calls", err, len(f.calls))
		}
	})
	t.Run("cancelled between pages", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := newFake(500)
		f.hook = func(call int, _ *kinesis.ListShardsInput) error {
			if call == 2 {
				cancel() // the page is still answered; the next must not be asked for
			}
			return nil
		}
		got, err := ListShards(ctx, f, ListOptions{StreamName: "orders"})
		if !errors.Is(err, context.Canceled) || got != nil {
			t.Fatalf("got %d shards, err %v", len(got), err)
		}
		if len(f.calls) != 2 {
			t.Errorf("%d calls, want 2", len(f.calls))
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f := newFake(5)
		if _, err := ListShards(ctx, f, ListOptions{StreamName: "orders"}); !errors.Is(err, context.Canceled) || len(f.calls) != 0 {
			t.Fatalf("err %v after %d calls", err, len(f.calls))
		}
	})
	t.Run("deadline during expiry restarts", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		f := newFake(500)
		f.hook = func(call int, in *kinesis.ListShardsInput) error {
			if in.NextToken != nil {
				cancel()
				return &types.ExpiredNextTokenException{}
			}
			return nil
		}
		_, err := ListShards(ctx, f, ListOptions{StreamName: "orders"})
		if len(f.calls) != 2 {
			t.Errorf("%d calls after cancellation, want 2", len(f.calls))
		}
		var e *types.ExpiredNextTokenException
		if !errors.As(err, &e) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestLoad(t *testing.T) {
	listing := genHistory(10000, 42)
	f := &fakeLister{shards: listing, defaultPage: 1000, maxPage: 1000}
	g, err := Load(context.Background(), f, ListOptions{StreamARN: testARN})
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != len(listing) || len(f.calls) != 10 {
		t.Fatalf("Len %d from %d calls", g.Len(), len(f.calls))
	}
	checkInvariants(t, g, listing)
	if err := g.CheckOpenCoverage(); err != nil {
		t.Error(err)
	}

	bad := newFake(3)
	bad.shards[2].ParentShardId = aws.String(sid(2))
	_, err = Load(context.Background(), bad, ListOptions{StreamName: "orders"})
	if !errors.Is(err, ErrSelfParent) || err.Error() != `shards of orders: shard "shardId-000000000002" names itself as its parent` {
		t.Fatalf("err = %v", err)
	}
}

// The client this package is written for satisfies the interface.
var _ ShardLister = (*kinesis.Client)(nil)

// A rate limit on one page is waited out; a lasting one is returned.
func TestListShardsRidesOutRateLimits(t *testing.T) {
	defer func(r awscall.Rule) { awscall.Rules[awscall.ControlRead] = r }(awscall.Rules[awscall.ControlRead])
	awscall.Rules[awscall.ControlRead].First = time.Millisecond
	calls := 0
	api := listerFunc(func(ctx context.Context, in *kinesis.ListShardsInput, _ ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
		calls++
		if calls <= 2 {
			return nil, &types.LimitExceededException{Message: aws.String("Rate exceeded")}
		}
		return &kinesis.ListShardsOutput{Shards: []types.Shard{{ShardId: aws.String("shardId-000000000000")}}}, nil
	})
	shards, err := ListShards(context.Background(), api, ListOptions{StreamName: "s"})
	if err != nil || len(shards) != 1 || calls != 3 {
		t.Fatalf("shards %d, err %v, calls %d", len(shards), err, calls)
	}
	calls = -100
	if _, err := ListShards(context.Background(), api, ListOptions{StreamName: "s"}); err == nil {
		t.Fatal("a lasting rate limit was not returned")
	}
}

type listerFunc func(ctx context.Context, in *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)

func (f listerFunc) ListShards(ctx context.Context, in *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	return f(ctx, in, optFns...)
}
