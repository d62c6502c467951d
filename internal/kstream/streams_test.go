package kstream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/fake"
)

var fiveStreams = []string{"audit", "clicks", "orders", "orders-dlq", "payments"}

// collect drains the iterator: the names yielded, the ARNs, and the error.
func collect(ctx context.Context, api kinesis.ListStreamsAPIClient, pageSize int32) (names, arns []string, err error) {
	for s, e := range ListStreams(ctx, api, pageSize) {
		if e != nil {
			if err != nil {
				return names, arns, errors.New("a second error was yielded")
			}
			err = e
			continue
		}
		if err != nil {
			return names, arns, errors.New("a stream was yielded after the error")
		}
		names, arns = append(names, aws.ToString(s.StreamName)), append(arns, aws.ToString(s.StreamARN))
	}
	return names, arns, err
}

func TestListStreamsPaging(t *testing.T) {
	arn := func(n string) string { return "arn:aws:kinesis:us-east-1:123456789012:stream/" + n }
	tests := []struct {
		name       string
		kinesalite bool
		pageSize   int32
		wantCalls  []kinesis.ListStreamsInput
		wantARNs   []string
	}{
		{name: "NextToken", wantCalls: []kinesis.ListStreamsInput{{}, {NextToken: aws.String("2")}, {NextToken: aws.String("4")}},
			wantARNs: []string{arn("audit"), arn("clicks"), arn("orders"), arn("orders-dlq"), arn("payments")}},
		{name: "NextToken with a page size", pageSize: 3,
			wantCalls: []kinesis.ListStreamsInput{{Limit: aws.Int32(3)}, {NextToken: aws.String("3"), Limit: aws.Int32(3)}},
			wantARNs:  []string{arn("audit"), arn("clicks"), arn("orders"), arn("orders-dlq"), arn("payments")}},
		{name: "kinesalite: names only, ExclusiveStartStreamName", kinesalite: true,
			wantCalls: []kinesis.ListStreamsInput{{}, {ExclusiveStartStreamName: aws.String("clicks")}, {ExclusiveStartStreamName: aws.String("orders-dlq")}},
			wantARNs:  []string{"", "", "", "", ""}},
		{name: "kinesalite with a page size", kinesalite: true, pageSize: 4,
			wantCalls: []kinesis.ListStreamsInput{{Limit: aws.Int32(4)}, {ExclusiveStartStreamName: aws.String("orders-dlq"), Limit: aws.Int32(4)}},
			wantARNs:  []string{"", "", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fake.StreamPages{Names: fiveStreams, PageSize: 2, Kinesalite: tt.kinesalite}
			names, arns, err := collect(context.Background(), api, tt.pageSize)
			if err != nil || !slices.Equal(names, fiveStreams) || !slices.Equal(arns, tt.wantARNs) {
				t.Fatalf("names %q, ARNs %q, err %v; want %q, %q", names, arns, err, fiveStreams, tt.wantARNs)
			}
			if len(api.Inputs) != len(tt.wantCalls) {
				t.Fatalf("%d calls, want %d: %+v", len(api.Inputs), len(tt.wantCalls), api.Inputs)
			}
			for i, got := range api.Inputs {
				want := tt.wantCalls[i]
				if aws.ToString(got.NextToken) != aws.ToString(want.NextToken) || aws.ToString(got.ExclusiveStartStreamName) != aws.ToString(want.ExclusiveStartStreamName) ||
					aws.ToInt32(got.Limit) != aws.ToInt32(want.Limit) || got.NextToken != nil && got.ExclusiveStartStreamName != nil {
					t.Errorf("call %d: %+v, want %+v", i+1, got, want)
				}
			}
		})
	}
}

func TestListStreamsEnds(t *testing.T) {
	denied := &types.AccessDeniedException{Message: aws.String("not authorized")}
	tests := []struct {
		name      string
		answer    func(ctx context.Context, n int) (*kinesis.ListStreamsOutput, error)
		wantNames []string
		wantErr   string // "" for the error denied
		wantCalls int
	}{
		{"a later page fails: the streams before it, then the error", func(_ context.Context, n int) (*kinesis.ListStreamsOutput, error) {
			if n == 2 {
				return nil, denied
			}
			return nil, nil
		}, []string{"audit", "clicks"}, "", 2},
		{"the same NextToken again", func(_ context.Context, n int) (*kinesis.ListStreamsOutput, error) {
			if n > 1 {
				return &kinesis.ListStreamsOutput{StreamNames: []string{"x"}, NextToken: aws.String("2"), HasMoreStreams: aws.Bool(true)}, nil
			}
			return nil, nil
		}, []string{"audit", "clicks", "x"}, "list streams (page 2): the service returned the same NextToken again", 2},
		{"more streams, yet none after the start", func(context.Context, int) (*kinesis.ListStreamsOutput, error) {
			return &kinesis.ListStreamsOutput{StreamNames: []string{"a"}, HasMoreStreams: aws.Bool(true)}, nil
		}, []string{"a"}, `list streams (page 2): the service says there are more streams but lists none after "a"`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fake.StreamPages{Names: fiveStreams, PageSize: 2, Before: tt.answer}
			names, _, err := collect(context.Background(), api, 0)
			if tt.wantErr == "" && !errors.Is(err, denied) || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if !slices.Equal(names, tt.wantNames) || len(api.Inputs) != tt.wantCalls {
				t.Errorf("names %q after %d calls; want %q after %d", names, len(api.Inputs), tt.wantNames, tt.wantCalls)
			}
		})
	}
}

type listStreamsFunc func(ctx context.Context, in *kinesis.ListStreamsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error)

func (f listStreamsFunc) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	return f(ctx, in, optFns...)
}

func TestListStreamsEmptyResponse(t *testing.T) {
	api := listStreamsFunc(func(context.Context, *kinesis.ListStreamsInput, ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
		return nil, nil
	})
	names, _, err := collect(context.Background(), api, 0)
	if err == nil || err.Error() != "list streams (page 1): empty response" || len(names) != 0 {
		t.Fatalf("names %q, err %v", names, err)
	}
}

// A rate limit on a page is waited out under the read-retry policy; the
// listing goes on where it was.
func TestListStreamsRidesOutRateLimits(t *testing.T) {
	defer func(r awscall.Rule) { awscall.Rules[awscall.ControlRead] = r }(awscall.Rules[awscall.ControlRead])
	awscall.Rules[awscall.ControlRead].First = time.Millisecond
	limited := 0
	api := &fake.StreamPages{Names: fiveStreams, PageSize: 2, Before: func(_ context.Context, n int) (*kinesis.ListStreamsOutput, error) {
		if n == 2 || n == 3 {
			limited++
			return nil, &types.LimitExceededException{Message: aws.String("Rate exceeded")}
		}
		return nil, nil
	}}
	names, _, err := collect(context.Background(), api, 0)
	if err != nil || !slices.Equal(names, fiveStreams) || limited != 2 || len(api.Inputs) != 5 {
		t.Fatalf("names %q, err %v, %d limited of %d calls", names, err, limited, len(api.Inputs))
	}
	if aws.ToString(api.Inputs[3].NextToken) != "2" {
		t.Errorf("the retried page was not asked again: %+v", api.Inputs[3])
	}
}

// A consumer that stops early makes no further call.
func TestListStreamsStopsWhenTheConsumerDoes(t *testing.T) {
	api := &fake.StreamPages{Names: fiveStreams, PageSize: 2}
	var names []string
	for s, err := range ListStreams(context.Background(), api, 0) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, aws.ToString(s.StreamName))
		if len(names) == 3 {
			break
		}
	}
	if !slices.Equal(names, fiveStreams[:3]) || len(api.Inputs) != 2 {
		t.Fatalf("names %q after %d calls", names, len(api.Inputs))
	}
}

func TestStreamNames(t *testing.T) {
	// Listed out of order: the names come back sorted.
	api := &fake.StreamPages{Before: func(context.Context, int) (*kinesis.ListStreamsOutput, error) {
		return &kinesis.ListStreamsOutput{StreamNames: []string{"orders", "audit", "orders"}}, nil
	}}
	names, err := StreamNames(context.Background(), api, 0)
	if err != nil || strings.Join(names, " ") != "audit orders" {
		t.Fatalf("names %q, err %v", names, err)
	}
	api = &fake.StreamPages{Before: func(context.Context, int) (*kinesis.ListStreamsOutput, error) { return nil, errors.New("boom") }}
	if names, err := StreamNames(context.Background(), api, 0); err == nil || names != nil {
		t.Fatalf("names %q, err %v", names, err)
	}
}
