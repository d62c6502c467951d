package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
)

// startDynalite starts a local DynamoDB for one test.
func startDynalite(t *testing.T) *emulator.Dynalite {
	t.Helper()
	if err := emulator.DynamoAvailable(); err != nil {
		if emulator.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d, err := emulator.StartDynalite(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// runCLIWithDynamo is runCLI with the lease-table client on dynalite.
func runCLIWithDynamo(t *testing.T, d *emulator.Dynalite, args ...string) cliResult {
	t.Helper()
	return runCLIWith(t, func(f *Factory) {
		f.DynamoClient = func(context.Context, string) (*dynamodb.Client, error) { return dynamodb.New(d.ClientOptions()), nil }
	}, "", args...)
}

// A KCL application stuck after a reshard: the tree names the blocked
// child and the parent that blocks it, in every format.
func TestTreeKCLTable(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	d := startDynalite(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	splitShard(t, e, c, stream, "shardId-000000000000") // → 2, 3
	ids := openIDs(t, c, stream)                        // 2, 3, 1 by range
	mergeOpen(t, e, c, stream, 1)                       // 3 + 1 → 4
	_ = ids

	dc := dynamodb.New(d.ClientOptions())
	table := "app-" + stream
	if err := leases.CreateTable(context.Background(), dc, table); err != nil {
		t.Fatal(err)
	}
	for _, item := range []map[string]types.AttributeValue{
		leasestest.KCLRow("shardId-000000000000", "SHARD_END", "", 10),
		leasestest.KCLRow("shardId-000000000001", "49000000000000000000000000000000000000000000000000000000", "worker-dead", 3),
		leasestest.KCLRow("shardId-000000000002", "TRIM_HORIZON", "worker-a", 8, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000003", "SHARD_END", "", 9, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000004", "TRIM_HORIZON", "", 0, "shardId-000000000001", "shardId-000000000003"),
		{"leaseKey": &types.AttributeValueMemberS{Value: "Leader"}, "entityType": &types.AttributeValueMemberS{Value: "LEADER"}},
		leasestest.KCLRow("123456789012:another:1:shardId-000000000000", "LATEST", "x", 1),
	} {
		if _, err := dc.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}

	res := runCLIWithDynamo(t, d, "tree", stream, "--kcl-table", table)
	if os.Getenv("ZZ_SHOW") != "" {
		t.Logf("\n%s%s", res.stdout, res.stderr)
	}
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"⚠ BLOCKS shardId-000000000004 · worker-dead @ …00000000",
		"⛔ BLOCKED by shardId-000000000001 · unowned @ TRIM_HORIZON",
		"SHARD_END",
		"worker-a @ TRIM_HORIZON",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("tree lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "blocked: shard 4 waits for parent 1 (at sequence …00000000, owner worker-dead, not SHARD_END)") ||
		!strings.Contains(res.stderr, "note: 1 lease(s) of other streams") {
		t.Errorf("stderr = %q", res.stderr)
	}

	res = runCLIWithDynamo(t, d, "tree", stream, "--kcl-table", table, "-o", "json")
	var doc struct {
		KCLTable string `json:"kclTable"`
		Shards   []struct {
			ShardID string `json:"shardId"`
			Lease   *struct {
				Owner     string   `json:"owner"`
				Blocked   bool     `json:"blocked"`
				BlockedBy []string `json:"blockedBy"`
				Blocking  []string `json:"blocking"`
				ShardEnd  bool     `json:"shardEnd"`
			} `json:"lease"`
		} `json:"shards"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range doc.Shards {
		if s.Lease == nil {
			t.Fatalf("shard %s without a lease object", s.ShardID)
		}
		got[s.ShardID] = fmt.Sprintf("%s %v %v %v %v", s.Lease.Owner, s.Lease.ShardEnd, s.Lease.Blocked, s.Lease.BlockedBy, s.Lease.Blocking)
	}
	want := map[string]string{
		"shardId-000000000000": " true false [] []",
		"shardId-000000000001": "worker-dead false false [] [shardId-000000000004]",
		"shardId-000000000002": "worker-a false false [] []",
		"shardId-000000000003": " true false [] []",
		"shardId-000000000004": " false true [shardId-000000000001] []",
	}
	if doc.KCLTable != table || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("json leases:\n got %v\nwant %v", got, want)
	}

	// A missing table is one clear error.
	res = runCLIWithDynamo(t, d, "tree", stream, "--kcl-table", "nope")
	if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "lease table does not exist: nope") {
		t.Fatalf("missing table: exit %d, %q, %q", res.code, res.stdout, res.stderr)
	}
}
