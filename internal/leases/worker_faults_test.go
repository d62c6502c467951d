package leases

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// faultyTable is a MemTable whose calls on chosen leases fail: fail
// decides, from the operation, the lease key and the update expression
// (empty for PutItem), whether a call fails with a 500.
type faultyTable struct {
	*leasestest.MemTable
	mu   sync.Mutex
	fail func(op, key, update string) bool
}

var errTable500 = errors.New("InternalServerError: status code: 500")

func (f *faultyTable) fails(op, key, update string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail != nil && f.fail(op, key, update)
}

func (f *faultyTable) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.fails("PutItem", in.Item[attrKey].(*types.AttributeValueMemberS).Value, "") {
		return nil, errTable500
	}
	return f.MemTable.PutItem(ctx, in, o...)
}

func (f *faultyTable) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.fails("UpdateItem", in.Key[attrKey].(*types.AttributeValueMemberS).Value, aws.ToString(in.UpdateExpression)) {
		return nil, errTable500
	}
	return f.MemTable.UpdateItem(ctx, in, o...)
}

// A parent whose lease could not be created while its child's was (one
// failed PutItem of a sync that creates both) still gets its lease at the
// next sync, and the child is given to no worker before the parent is at
// SHARD_END: a child's lease does not make its parent count as finished
// until the child was read past its start.
func TestParentLeaseCreatedAfterAFailedCreate(t *testing.T) {
	m, table := memTable(t)
	parent, child := "shardId-000000000000", "shardId-000000000001"
	ft := &faultyTable{MemTable: m}
	once := true
	ft.fail = func(op, key, _ string) bool {
		if op == "PutItem" && key == parent && once {
			once = false
			return true
		}
		return false
	}
	w, _ := NewWorker(ft, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 10 * time.Second})
	known := []tail.ShardInfo{
		{ID: parent, Closed: true, Listed: true},
		{ID: child, Parents: []string{parent}, Listed: true},
	}
	if _, err := w.Sync(context.Background(), known); err == nil {
		t.Fatal("the first sync hid a failed PutItem")
	}
	a, err := w.Sync(context.Background(), known)
	if err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if cp := checkpointOf(m, table, parent); cp != TrimHorizon {
		t.Fatalf("the parent's lease is at %q after the second sync, want TRIM_HORIZON: its records would never be read", cp)
	}
	if _, ok := a.Held[child]; ok {
		t.Fatalf("held %v: the child was given while its parent is unread", a.Held)
	}
	if _, ok := a.Held[parent]; !ok {
		t.Fatalf("held %v, want the parent", a.Held)
	}
}

// The first worker of a table creates the leases of the shards it knows
// where --from-tip or --from-timestamp says, even when one of those
// creates failed in its first sync and is done in a later one: a closed
// shard is still finished, an open one still starts at the tip, not at
// its oldest record.
func TestFirstLeasesStartWhereAskedAfterAFailedCreate(t *testing.T) {
	parent, child, other := "shardId-000000000000", "shardId-000000000001", "shardId-000000000002"
	known := []tail.ShardInfo{
		{ID: parent, Closed: true, Listed: true},
		{ID: child, Parents: []string{parent}, Listed: true},
		{ID: other, Listed: true},
	}
	for _, failing := range []string{parent, other} {
		t.Run(failing, func(t *testing.T) {
			m, table := memTable(t)
			ft := &faultyTable{MemTable: m}
			once := true
			ft.fail = func(op, key, _ string) bool {
				if op == "PutItem" && key == failing && once {
					once = false
					return true
				}
				return false
			}
			w, _ := NewWorker(ft, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 10 * time.Second, Start: tail.StartLatest})
			if _, err := w.Sync(context.Background(), known); err == nil {
				t.Fatal("the first sync hid a failed PutItem")
			}
			if _, err := w.Sync(context.Background(), known); err != nil {
				t.Fatalf("second sync: %v", err)
			}
			for id, want := range map[string]string{parent: ShardEnd, child: Latest, other: Latest} {
				if cp := checkpointOf(m, table, id); cp != want {
					t.Errorf("%s is at %q, want %q", id, cp, want)
				}
			}
		})
	}
}
