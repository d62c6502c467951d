package leases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

var dyn *emulator.Dynalite

func TestMain(m *testing.M) {
	var err error
	if emulator.FuzzWorker() {
		os.Exit(m.Run())
	}
	if e := emulator.DynamoAvailable(); e == nil {
		dyn, err = emulator.StartDynalite(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "leases:", err)
			os.Exit(1)
		}
	} else if emulator.InCI() {
		fmt.Fprintln(os.Stderr, "FAIL: leases:", e)
		os.Exit(1)
	}
	code := m.Run()
	if dyn != nil {
		dyn.Stop()
	}
	os.Exit(code)
}

func requireDynamo(t *testing.T) *dynamodb.Client {
	t.Helper()
	if dyn == nil {
		t.Skip("no dynalite: node or node_modules missing (run make emulator)")
	}
	return dyn.Client(t)
}

var tableSeq int

func newTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	tableSeq++
	name := fmt.Sprintf("leases-%d-%s", tableSeq, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
	if len(name) > 200 {
		name = name[:200]
	}
	if err := CheckTable(context.Background(), c, name); !errors.Is(err, ErrNoTable) {
		t.Fatalf("CheckTable of a missing table: %v", err)
	}
	if err := CreateTable(context.Background(), c, name); err != nil {
		t.Fatal(err)
	}
	if err := CheckTable(context.Background(), c, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestParseItem(t *testing.T) {
	multi := leasestest.KCLRow("123456789012:orders:1796040000:shardId-000000000004", "4959000000000000000000000000000000000000000000000000000017", "w1", 9, "shardId-000000000001")
	multi["streamName"] = &types.AttributeValueMemberS{Value: "123456789012:orders:1796040000"}
	multi["shardId"] = &types.AttributeValueMemberS{Value: "shardId-000000000004"}
	multi["childShardIds"] = &types.AttributeValueMemberSS{Value: []string{"shardId-000000000006", "shardId-000000000005"}}
	multi["pendingCheckpointState"] = &types.AttributeValueMemberN{Value: "1"} // some versions write an N
	l, ok, err := ParseItem(multi)
	if err != nil || !ok {
		t.Fatalf("ParseItem: %v %v", ok, err)
	}
	if l.Stream != "123456789012:orders:1796040000" || l.ShardID != "shardId-000000000004" || l.Owner != "w1" || l.Counter != 9 ||
		!slices.Equal(l.Parents, []string{"shardId-000000000001"}) || !slices.Equal(l.Children, []string{"shardId-000000000005", "shardId-000000000006"}) {
		t.Fatalf("lease = %+v", l)
	}
	for name, item := range map[string]map[string]types.AttributeValue{
		"coordinator row": {"leaseKey": &types.AttributeValueMemberS{Value: "Leader"}, "entityType": &types.AttributeValueMemberS{Value: "LEADER"}},
		"worker metrics":  {"leaseKey": &types.AttributeValueMemberS{Value: "w1"}, "entityType": &types.AttributeValueMemberS{Value: "WORKER_METRIC_STATS"}},
	} {
		if _, ok, err := ParseItem(item); ok || err != nil {
			t.Errorf("%s: ok=%v err=%v, want skipped", name, ok, err)
		}
	}
	bad := leasestest.KCLRow("shardId-000000000001", "SHARD_END", "", 1)
	bad["leaseCounter"] = &types.AttributeValueMemberS{Value: "many"}
	if _, _, err := ParseItem(bad); err == nil {
		t.Error("a non-numeric leaseCounter was accepted")
	}
	neg := leasestest.KCLRow("shardId-000000000001", "17", "", 1)
	neg["checkpointLogEventIndex"] = &types.AttributeValueMemberN{Value: "-1"}
	if _, _, err := ParseItem(neg); err == nil || err.Error() != "lease shardId-000000000001: checkpointLogEventIndex -1 is negative" {
		t.Errorf("a negative checkpointLogEventIndex: %v", err)
	}
}

// graph: 0 splits into 1 and 2; 2 and 3 (a root) merge into 4.
func testGraph(t *testing.T) *lineage.Graph {
	t.Helper()
	sh := func(id, start, end, parent, adj string, closed bool) ktypes.Shard {
		s := ktypes.Shard{ShardId: aws.String(id), HashKeyRange: &ktypes.HashKeyRange{StartingHashKey: aws.String(start), EndingHashKey: aws.String(end)},
			SequenceNumberRange: &ktypes.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if parent != "" {
			s.ParentShardId = aws.String(parent)
		}
		if adj != "" {
			s.AdjacentParentShardId = aws.String(adj)
		}
		if closed {
			s.SequenceNumberRange.EndingSequenceNumber = aws.String("9")
		}
		return s
	}
	half := "170141183460469231731687303715884105728"
	g, err := lineage.Build([]ktypes.Shard{
		sh("shardId-000000000000", "0", "170141183460469231731687303715884105727", "", "", true),
		sh("shardId-000000000003", half, "340282366920938463463374607431768211455", "", "", true),
		sh("shardId-000000000001", "0", "85070591730234615865843651857942052863", "shardId-000000000000", "", false),
		sh("shardId-000000000002", "85070591730234615865843651857942052864", "170141183460469231731687303715884105727", "shardId-000000000000", "", true),
		sh("shardId-000000000004", "85070591730234615865843651857942052864", "340282366920938463463374607431768211455", "shardId-000000000002", "shardId-000000000003", false),
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDiagnoseStuckConsumer(t *testing.T) {
	g := testGraph(t)
	rows := []map[string]types.AttributeValue{
		leasestest.KCLRow("shardId-000000000000", "SHARD_END", "", 5),
		leasestest.KCLRow("shardId-000000000001", "4959000000000000000000000000000000000000000000000000000011", "worker-a", 30, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000002", "SHARD_END", "worker-b", 12, "shardId-000000000000"),
		// 3 never reached SHARD_END: its worker stopped checkpointing.
		leasestest.KCLRow("shardId-000000000003", "4959000000000000000000000000000000000000000000000000000099", "worker-dead", 7),
		leasestest.KCLRow("shardId-000000000004", "TRIM_HORIZON", "", 0, "shardId-000000000002", "shardId-000000000003"),
		leasestest.KCLRow("shardId-000000000099", "SHARD_END", "", 1), // a stale row
	}
	other := leasestest.KCLRow("123456789012:other:1:shardId-000000000000", "LATEST", "x", 1)
	var leases []Lease
	for _, r := range append(rows, other) {
		l, ok, err := ParseItem(r)
		if err != nil || !ok {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	d := Diagnose(g, leases, StreamID{Name: "orders"})
	c := d.Shards["shardId-000000000004"]
	if !c.Blocked || !slices.Equal(c.BlockedBy, []string{"shardId-000000000003"}) || !strings.Contains(c.Reason, "waits for parent 3 (at sequence …00000099, owner worker-dead, not SHARD_END)") {
		t.Fatalf("child 4 = %+v", c)
	}
	p := d.Shards["shardId-000000000003"]
	if !slices.Equal(p.Blocking, []string{"shardId-000000000004"}) || p.Reason != "blocks 4: at sequence …00000099, owner worker-dead, not SHARD_END" {
		t.Fatalf("parent 3 = %+v", p)
	}
	if d.Shards["shardId-000000000001"].Blocked || d.Shards["shardId-000000000002"].Blocked {
		t.Fatal("children of a finished parent are not blocked")
	}
	if len(d.Orphans) != 1 || d.Orphans[0].ShardID != "shardId-000000000099" || d.OtherStreams != 1 {
		t.Fatalf("orphans %v, other streams %d", d.Orphans, d.OtherStreams)
	}
	// Multi-stream: only this stream's rows count.
	ms := leasestest.KCLRow("123456789012:orders:1796040000:shardId-000000000004", "TRIM_HORIZON", "", 0)
	l, _, _ := ParseItem(ms)
	d = Diagnose(g, []Lease{l}, StreamID{Name: "orders", Account: "123456789012", Created: time.Unix(1796040000, 0)})
	if d.Shards["shardId-000000000004"].Lease == nil || d.OtherStreams != 0 {
		t.Fatalf("multi-stream lease not matched: %+v", d.Shards["shardId-000000000004"])
	}
	d = Diagnose(g, []Lease{l}, StreamID{Name: "orders", Created: time.Unix(1, 0)})
	if d.Shards["shardId-000000000004"].Lease != nil || d.OtherStreams != 1 {
		t.Fatal("a lease of a re-created stream (other epoch) was matched")
	}
}

// clock is a manual clock shared by workers in a test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func shardsOf(g *lineage.Graph) []tail.ShardInfo {
	var out []tail.ShardInfo
	for _, s := range g.Shards() {
		out = append(out, tail.ShardInfo{ID: s.ID, Parents: s.Parents, Closed: s.State == lineage.StateClosed, Range: s.Range, HaveRange: true})
	}
	return out
}

func held(a *tail.Assignment) []string {
	var out []string
	for id := range a.Held {
		out = append(out, lineage.ShortID(id))
	}
	sort.Strings(out)
	return out
}

func TestWorkersShareParentsFirstAndFailOver(t *testing.T) {
	c := requireDynamo(t)
	table := newTable(t, c)
	clk := &clock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	mk := func(id string) *Worker {
		w, err := NewWorker(c, WorkerOptions{Table: table, WorkerID: id, LeaseDuration: 10 * time.Second, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ctx := context.Background()
	g := testGraph(t)
	known := shardsOf(g)
	a, b := mk("a"), mk("b")

	// The first worker creates every lease; only roots are workable (0 and 3),
	// and alone it takes both.
	as, err := a.Sync(ctx, known)
	if err != nil {
		t.Fatal(err)
	}
	if got := held(as); !slices.Equal(got, []string{"0", "3"}) {
		t.Fatalf("a holds %v, want the roots 0 and 3", got)
	}
	// b joins: nothing free; to even out (share 1 each) it asks a for one,
	// which a hands over at once (its reader stopped at nothing read).
	bs, _ := b.Sync(ctx, known)
	if len(bs.Held) != 0 {
		t.Fatalf("b holds %v before a handed anything over", held(bs))
	}
	as, _ = a.Sync(ctx, known)
	if len(as.Held) != 1 || len(as.HandOff) != 1 {
		t.Fatalf("a holds %v, hands over %v", held(as), as.HandOff)
	}
	for id := range as.HandOff {
		if err := a.HandOff(ctx, id, tail.Position{}); err != nil {
			t.Fatal(err)
		}
	}
	bs, _ = b.Sync(ctx, known)
	if len(bs.Held) != 1 || slices.Equal(held(as), held(bs)) {
		t.Fatalf("after the hand-off: a %v, b %v", held(as), held(bs))
	}
	// Whoever holds 0 finishes it: its children become workable.
	owner0 := a
	if _, ok := bs.Held["shardId-000000000000"]; ok {
		owner0 = b
	}
	if err := owner0.Checkpoint(ctx, "shardId-000000000000", tail.Position{SequenceNumber: "5"}); err != nil {
		t.Fatal(err)
	}
	if err := owner0.Checkpoint(ctx, "shardId-000000000000", tail.Position{ShardEnd: true}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		as, _ = a.Sync(ctx, known)
		bs, _ = b.Sync(ctx, known)
	}
	all := append(held(as), held(bs)...)
	sort.Strings(all)
	if !slices.Equal(all, []string{"1", "2", "3"}) {
		t.Fatalf("held after 0 ended: a %v b %v; want 1, 2, 3 spread (4 waits for 2 and 3)", held(as), held(bs))
	}
	if as.Positions["shardId-000000000000"] != (tail.Position{ShardEnd: true}) {
		t.Fatalf("positions %v", as.Positions)
	}

	// b dies (stops syncing). After a lease duration a takes everything.
	for range 4 {
		clk.Add(4 * time.Second)
		as, _ = a.Sync(ctx, known)
	}
	if got := held(as); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("a holds %v after b died, want 1, 2, 3", got)
	}
	// b comes back: its checkpoints are refused.
	var bShard string
	for id := range bs.Held {
		bShard = id
	}
	if err := b.Checkpoint(ctx, bShard, tail.Position{SequenceNumber: "7"}); !errors.Is(err, tail.ErrLeaseLost) {
		t.Fatalf("checkpoint by a worker that lost the lease: %v", err)
	}
	// The merge child waits for both parents.
	a.Checkpoint(ctx, "shardId-000000000002", tail.Position{ShardEnd: true})
	as, _ = a.Sync(ctx, known)
	if _, ok := as.Held["shardId-000000000004"]; ok {
		t.Fatal("merge child taken while parent 3 is not at SHARD_END")
	}
	a.Checkpoint(ctx, "shardId-000000000003", tail.Position{ShardEnd: true})
	as, _ = a.Sync(ctx, known)
	if _, ok := as.Held["shardId-000000000004"]; !ok || as.Starts["shardId-000000000004"] != tail.StartTrimHorizon {
		t.Fatalf("merge child not taken at TRIM_HORIZON after both parents ended: %v %v", held(as), as.Starts)
	}
	// Release gives everything back at once.
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ls, _ := Scan(ctx, c, table)
	for _, l := range ls {
		if l.Owner != "" {
			t.Fatalf("lease %s still owned by %s after Release", l.ShardID, l.Owner)
		}
	}
}

func TestFirstWorkerFromTip(t *testing.T) {
	c := requireDynamo(t)
	table := newTable(t, c)
	w, _ := NewWorker(c, WorkerOptions{Table: table, WorkerID: "a", Start: tail.StartLatest})
	as, err := w.Sync(context.Background(), shardsOf(testGraph(t)))
	if err != nil {
		t.Fatal(err)
	}
	// Closed shards count as read; the open ones start at the tip.
	if got := held(as); !slices.Equal(got, []string{"1", "4"}) || as.Starts["shardId-000000000001"] != tail.StartLatest || as.Starts["shardId-000000000004"] != tail.StartLatest {
		t.Fatalf("held %v starts %v", got, as.Starts)
	}
}

// FuzzParseItem: rows written by a foreign KCL application never make the
// parser panic, and what it accepts is consistent.
func FuzzParseItem(f *testing.F) {
	f.Add("shardId-000000000001", "SHARD_END", "w1", "7", "shardId-000000000000", "")
	f.Add("123456789012:orders:1796040000:shardId-000000000004", "4959", "", "x", "", "LEASE")
	f.Add("Leader", "", "", "1", "", "LEADER")
	f.Fuzz(func(t *testing.T, key, checkpoint, owner, counter, parent, entity string) {
		item := map[string]types.AttributeValue{
			"leaseKey":     &types.AttributeValueMemberS{Value: key},
			"checkpoint":   &types.AttributeValueMemberS{Value: checkpoint},
			"leaseCounter": &types.AttributeValueMemberN{Value: counter},
		}
		if owner != "" {
			item["leaseOwner"] = &types.AttributeValueMemberS{Value: owner}
		}
		if parent != "" {
			item["parentShardId"] = &types.AttributeValueMemberSS{Value: []string{parent}}
		}
		if entity != "" {
			item["entityType"] = &types.AttributeValueMemberS{Value: entity}
		}
		l, ok, err := ParseItem(item)
		if err != nil || !ok {
			return
		}
		if entity != "" && entity != "LEASE" {
			t.Fatalf("a %s row was taken as a lease", entity)
		}
		if l.Key != key || l.Checkpoint != checkpoint || l.Owner != owner {
			t.Fatalf("lease %+v from key %q checkpoint %q owner %q", l, key, checkpoint, owner)
		}
		stream, shard := SplitLeaseKey(key)
		if l.ShardID != shard || l.Stream != stream {
			t.Fatalf("key %q split as %q/%q, lease has %q/%q", key, stream, shard, l.Stream, l.ShardID)
		}
	})
}

// A KCL application deletes a finished parent's lease once its children are
// under way: the worker must not create it again (that would read the
// whole parent once more and block the children behind it).
func TestNoLeaseForADeletedParent(t *testing.T) {
	c := requireDynamo(t)
	table := newTable(t, c)
	ctx := context.Background()
	// Only the children of 0 have leases; 0 itself was cleaned up.
	for _, item := range []map[string]types.AttributeValue{
		leasestest.KCLRow("shardId-000000000001", "TRIM_HORIZON", "", 0, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000002", "SHARD_END", "", 3, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000003", "TRIM_HORIZON", "", 0),
		leasestest.KCLRow("shardId-000000000004", "TRIM_HORIZON", "", 0, "shardId-000000000002", "shardId-000000000003"),
	} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	w, _ := NewWorker(c, WorkerOptions{Table: table, WorkerID: "a"})
	as, err := w.Sync(ctx, shardsOf(testGraph(t)))
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := Scan(ctx, c, table)
	for _, l := range ls {
		if l.ShardID == "shardId-000000000000" {
			t.Fatal("the deleted parent's lease was created again")
		}
	}
	if got := held(as); !slices.Equal(got, []string{"1", "3"}) {
		t.Fatalf("held %v, want 1 (its parent is gone) and 3", got)
	}
}

// failingRenewals makes every UpdateItem fail (not a conflict: an outage).
type failingRenewals struct {
	DynamoAPI
	fail bool
}

func (f *failingRenewals) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.fail {
		return nil, errors.New("connection reset")
	}
	return f.DynamoAPI.UpdateItem(ctx, in, opts...)
}

// A lease whose renewals keep failing keeps the time of its last answered
// renewal (from when it was sent): the tail stops reading it before then,
// and once that time has passed the lease is not given at all.
func TestUnrenewedLeaseIsNotHeld(t *testing.T) {
	c := requireDynamo(t)
	table := newTable(t, c)
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clk := &clock{now: start}
	api := &failingRenewals{DynamoAPI: c}
	w, _ := NewWorker(api, WorkerOptions{Table: table, WorkerID: "a", LeaseDuration: 9 * time.Second, Now: clk.Now})
	known := shardsOf(testGraph(t))
	as, err := w.Sync(context.Background(), known)
	if err != nil || len(as.Held) != 2 {
		t.Fatalf("held %v, %v", held(as), err)
	}
	clk.Add(3 * time.Second)
	if as, err = w.Sync(context.Background(), known); err != nil || len(as.Held) != 2 {
		t.Fatalf("held %v, %v", held(as), err)
	}
	renewed := clk.Now()
	api.fail = true
	for _, after := range []time.Duration{3 * time.Second, 5 * time.Second} {
		clk.Add(after - clk.Now().Sub(renewed))
		as, err = w.Sync(context.Background(), known)
		if err != nil || len(as.Held) != 2 {
			t.Fatalf("%s after the last renewal: held %v, %v", after, held(as), err)
		}
		for id, until := range as.Held {
			if !until.Equal(renewed.Add(9 * time.Second)) {
				t.Fatalf("%s after the last renewal: %s held until %s, want %s", after, id, until, renewed.Add(9*time.Second))
			}
		}
	}
	clk.Add(5 * time.Second) // 10 s since the last renewal of a 9 s lease
	if as, err = w.Sync(context.Background(), known); err != nil || len(as.Held) != 0 {
		t.Fatalf("after renewals failed for 10 s of a 9 s lease: held %v, %v", held(as), err)
	}
}
