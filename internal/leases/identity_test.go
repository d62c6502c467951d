package leases

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

func TestClaimTable(t *testing.T) {
	c := requireDynamo(t)
	ctx := context.Background()
	table := newTable(t, c)
	created := time.Date(2026, 11, 30, 8, 0, 0, 123e6, time.UTC)
	orders := tail.StreamIdentity{Name: "orders", ARN: "arn:aws:kinesis:us-east-1:111122223333:stream/orders", Created: created}

	// Tails of four streams starting at once on an empty table: exactly
	// one claims it, the others find its claim and are refused.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	ids := make([]tail.StreamIdentity, len(errs))
	for i := range errs {
		ids[i] = orders
		ids[i].Created = created.Add(time.Duration(i) * time.Minute)
		wg.Go(func() { errs[i] = ClaimTable(ctx, c, table, ids[i]) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("streams %d and %d both claimed the table", winner, i)
		case !errors.Is(err, ErrForeignTable):
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody claimed the table")
	}
	orders = ids[winner]
	created = orders.Created
	// The same stream again, several workers at once: all find its claim.
	for i := range errs {
		wg.Go(func() { errs[i] = ClaimTable(ctx, c, table, orders) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// The claim is not a lease for anyone who reads the table.
	if ls, err := Scan(ctx, c, table); err != nil || len(ls) != 0 {
		t.Fatalf("Scan sees %v %v", ls, err)
	}

	// Leases written, then the stream is re-created under the same name.
	w, err := NewWorker(c, WorkerOptions{Table: table, WorkerID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync(ctx, shardsOf(testGraph(t))); err != nil {
		t.Fatal(err)
	}
	recreated := orders
	recreated.Created = created.Add(time.Hour)
	if err := ClaimTable(ctx, c, table, tail.StreamIdentity{Name: "x"}); err == nil || !strings.Contains(err.Error(), "gave no ARN") {
		t.Fatalf("claim without an ARN: %v", err)
	}
	other := tail.StreamIdentity{Name: "clicks", ARN: "arn:aws:kinesis:us-east-1:111122223333:stream/clicks", Created: created}
	for _, id := range []tail.StreamIdentity{recreated, other} {
		err := ClaimTable(ctx, c, table, id)
		want := "lease table belongs to another stream: " + table + " holds the leases of " + orders.ARN + " (created " + created.Format(time.RFC3339) + "), not of " + id.ARN
		if !errors.Is(err, ErrForeignTable) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "a stream deleted and re-created under the same name is another stream") {
			t.Fatalf("claim for %+v: %v", id, err)
		}
	}
	if err := ClaimTable(ctx, c, table, orders); err != nil {
		t.Fatalf("the same stream again: %v", err)
	}
}

// A KCL application's table (leases, no claim) is refused, and left as it
// was.
func TestClaimTableRefusesAKCLTable(t *testing.T) {
	c := requireDynamo(t)
	ctx := context.Background()
	table := newTable(t, c)
	for _, row := range []map[string]types.AttributeValue{
		leasestest.KCLRow("shardId-000000000000", "49650000000000000000000000000000000000000000000000000002", "kcl-worker-1", 41),
		leasestest.KCLRow("shardId-000000000001", ShardEnd, "", 12),
	} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: row}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := Scan(ctx, c, table)
	err := ClaimTable(ctx, c, table, tail.StreamIdentity{ARN: "arn:aws:kinesis:us-east-1:111122223333:stream/orders", Created: time.Now()})
	if !errors.Is(err, ErrForeignTable) || !strings.Contains(err.Error(), "already holds 2 leases that are not tied to a stream (a KCL application's") {
		t.Fatal(err)
	}
	after, _ := Scan(ctx, c, table)
	for i := range before {
		if len(after) != len(before) || after[i].Owner != before[i].Owner || after[i].Counter != before[i].Counter || after[i].Checkpoint != before[i].Checkpoint {
			t.Fatalf("the table changed: %v -> %v", before, after)
		}
	}
	out, _ := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if len(out.Items) != 2 {
		t.Fatalf("%d rows, want the 2 leases and no claim", len(out.Items))
	}
}

// A claim row that is not ours to read is an error, not a silent pass.
func TestClaimTableBadIdentityRow(t *testing.T) {
	c := requireDynamo(t)
	ctx := context.Background()
	table := newTable(t, c)
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		attrKey:        &types.AttributeValueMemberS{Value: identityKey},
		attrEntityType: &types.AttributeValueMemberS{Value: identityEntity},
	}}); err != nil {
		t.Fatal(err)
	}
	err := ClaimTable(ctx, c, table, tail.StreamIdentity{ARN: "arn:aws:kinesis:us-east-1:111122223333:stream/orders", Created: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "its stream identity row is not valid (no stream ARN)") {
		t.Fatal(err)
	}
}
