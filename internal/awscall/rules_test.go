package awscall

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

func TestDo(t *testing.T) {
	limit := &types.LimitExceededException{Message: aws.String("Rate exceeded for stream orders")}
	denied := &types.AccessDeniedException{Message: aws.String("not authorized")}
	inUse := &types.ResourceInUseException{Message: aws.String("Stream orders is UPDATING")}
	tests := []struct {
		name       string
		op         Op
		errs       []error // the answers of the calls in turn; nil: success
		wantCalls  int
		wantErr    error
		wantPauses []time.Duration
	}{
		{"success", ListShards, []error{nil}, 1, nil, nil},
		{"two limits, then success", ListStreams, []error{limit, limit, nil}, 3, nil, []time.Duration{time.Second, 2 * time.Second}},
		{"a lasting limit is returned after three retries", DescribeStreamSummary, []error{limit, limit, limit, limit, nil}, 4, limit,
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"another error is returned at once", ListShards, []error{denied, nil}, 1, denied, nil},
		{"a limit after a limit, then another error", ListShards, []error{limit, denied, nil}, 2, denied, []time.Duration{time.Second}},
		{"a stream briefly busy is waited out too", ListShards, []error{inUse, nil}, 2, nil, []time.Duration{time.Second}},
		{"not a read-only operation: never retried", Op("SplitShard"), []error{limit, nil}, 1, limit, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pauses []time.Duration
			defer func(p func(context.Context, time.Duration) error) { pause = p }(pause)
			pause = func(_ context.Context, d time.Duration) error { pauses = append(pauses, d); return nil }
			calls := 0
			v, err := Do(context.Background(), tt.op, func() (int, error) {
				err := tt.errs[calls]
				calls++
				return calls, err
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || !slices.Equal(pauses, tt.wantPauses) {
				t.Errorf("calls %d, err %v, pauses %v; want %d, %v, %v", calls, err, pauses, tt.wantCalls, tt.wantErr, tt.wantPauses)
			}
			if v != calls {
				t.Errorf("value %d, want the last call's (%d)", v, calls)
			}
		})
	}
}

// A context that ends during a pause returns the call's error, not the
// context's, and makes no further call.
func TestDoContextEndsDuringPause(t *testing.T) {
	limit := &types.LimitExceededException{Message: aws.String("Rate exceeded")}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := Do(ctx, ListStreams, func() (struct{}, error) {
		calls++
		cancel()
		return struct{}{}, limit
	})
	if calls != 1 || err != error(limit) {
		t.Fatalf("calls %d, err %v; want 1 call and the LimitExceeded", calls, err)
	}
}

func TestReadOnly(t *testing.T) {
	for op, want := range map[string]bool{
		"ListStreams": true, "ListShards": true, "DescribeStreamSummary": true,
		"DescribeLimits": false, "SplitShard": false, "MergeShards": false, "UpdateShardCount": false,
		"CreateStream": false, "PutRecords": false, "GetRecords": false, "": false,
	} {
		if got := ReadOnly(op); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", op, got, want)
		}
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := Sleep(ctx, 0); err != nil {
		t.Fatalf("Sleep(0) = %v", err)
	}
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context = %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on an ended context = %v", err)
	}
}
