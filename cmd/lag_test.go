package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/internal/leases/leasestest"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// lagDoc is `lag -o json`.
type lagDoc struct {
	Stream string `json:"stream"`
	Source struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"source"`
	Shards []struct {
		ShardID            string   `json:"shardId"`
		State              string   `json:"state"`
		Position           string   `json:"position"`
		MillisBehindLatest *int64   `json:"millisBehindLatest"`
		Owner              string   `json:"owner"`
		BlockedBy          []string `json:"blockedBy"`
		Error              string   `json:"error"`
	} `json:"shards"`
	MaxMillisBehindLatest *int64 `json:"maxMillisBehindLatest"`
	WorstShardID          string `json:"worstShardId"`
}

func parseLag(t *testing.T, res cliResult) lagDoc {
	t.Helper()
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var doc lagDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("%v: %s", err, res.stdout)
	}
	return doc
}

// standing is "state position behind owner blockedBy" with behind as
// "0", ">0" or "-" (not measured): what the tests can know of a figure.
func (d lagDoc) standing() map[string]string {
	out := map[string]string{}
	for _, s := range d.Shards {
		behind := "-"
		switch {
		case s.MillisBehindLatest == nil:
		case *s.MillisBehindLatest == 0:
			behind = "0"
		case *s.MillisBehindLatest > 0:
			behind = ">0"
		}
		out[s.ShardID] = strings.TrimSpace(fmt.Sprintf("%s %s %s %s %s %s", s.State, s.Position, behind, s.Owner, strings.Join(s.BlockedBy, ","), s.Error))
	}
	return out
}

func checkStanding(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for shard, w := range want {
		if got[shard] != w {
			t.Errorf("%s: %s is %q, want %q", what, shard, got[shard], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d shards, want %d: %v", what, len(got), len(want), got)
	}
}

// putSpread writes n records per round to the stream, rounds apart, so
// that kinesis-mock's MillisBehindLatest (the arrival of the latest record
// less that of the answer's last one) is more than 0 behind old records.
func putSpread(t *testing.T, e *emulator.Emulator, c *kinesis.Client, stream string, rounds, n int, tag string) {
	t.Helper()
	for r := range rounds {
		var recs []emulator.Rec
		for i := range n {
			recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("k-%d", i), Data: fmt.Appendf(nil, "%s-%d-%d", tag, r, i)})
		}
		e.Put(t, c, stream, recs)
		time.Sleep(150 * time.Millisecond)
	}
}

// A checkpoint file from a partial `tail` (the real binary), a reshard
// after it, then a tail to the end: lag reads the file while a tail holds
// its lock, never changes it, and shows each shard's state, position and
// how far behind it is.
func TestLagCheckpointFromPartialTail(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	if !e.Caps.MillisBehind {
		t.Skipf("%s answers MillisBehindLatest 0 always", e.Backend)
	}
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	putSpread(t, e, c, stream, 6, 20, "a") // 120 records over about a second
	env := tailEnv(e, t, "")
	cp := filepath.Join(t.TempDir(), "orders.checkpoint")
	if res := runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--max-records", "30", "--format", "raw"); res.code != 0 {
		t.Fatalf("tail: exit %d: %s", res.code, res.stderr)
	}
	_, pos, err := tail.ReadCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	const s0, s1, s2, s3 = "shardId-000000000000", "shardId-000000000001", "shardId-000000000002", "shardId-000000000003"
	want := map[string]string{}
	for _, id := range []string{s0, s1} {
		if p := pos[id]; p.SequenceNumber != "" {
			want[id] = "reading " + p.SequenceNumber + " >0"
		} else {
			want[id] = "not-started  >0" // from TRIM_HORIZON: the whole backlog
		}
	}
	splitShard(t, e, c, stream, s0) // 0 closes with unread records: 2 and 3 wait for it
	want[s2], want[s3] = "blocked  0  "+s0, "blocked  0  "+s0

	// A second tail holds the file's lock (as a running tail does); lag
	// reads it all the same, and leaves it exactly as it was.
	sum, err := kstream.Describe(t.Context(), c, kstream.Ref{Name: stream})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cp)
	st, _ := os.Stat(cp)
	store, err := tail.OpenFile(cp, tail.StreamIdentity{Name: stream, ARN: sum.ARN, Created: sum.Created}, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseLag(t, runBinary(t, env, "", "lag", stream, "--checkpoint", cp, "-o", "json"))
	store.Close()
	checkStanding(t, "after a partial tail", doc.standing(), want)
	after, _ := os.ReadFile(cp)
	st2, _ := os.Stat(cp)
	if !bytes.Equal(before, after) || !st.ModTime().Equal(st2.ModTime()) || st.Mode() != st2.Mode() {
		t.Error("lag changed the checkpoint file")
	}
	if doc.Stream != stream || doc.Source.Kind != "checkpoint" || doc.Source.Name != cp || doc.MaxMillisBehindLatest == nil || *doc.MaxMillisBehindLatest <= 0 {
		t.Errorf("document: %+v", doc)
	}
	var worst int64
	for _, s := range doc.Shards {
		if s.MillisBehindLatest != nil && *s.MillisBehindLatest > worst {
			worst = *s.MillisBehindLatest
		}
	}
	if doc.MaxMillisBehindLatest == nil || *doc.MaxMillisBehindLatest != worst || doc.standing()[doc.WorstShardID] == "" {
		t.Errorf("worst %v on %q, the largest figure %d", doc.MaxMillisBehindLatest, doc.WorstShardID, worst)
	}

	// The rest of the stream, parents first: everything at the tip.
	if res := runBinary(t, env, "", "tail", stream, "--checkpoint", cp, "--idle-exit", "1s", "--format", "raw"); res.code != 0 {
		t.Fatalf("tail: exit %d: %s", res.code, res.stderr)
	}
	doc = parseLag(t, runBinary(t, env, "", "lag", stream, "--checkpoint", cp, "-o", "json"))
	_, pos, _ = tail.ReadCheckpoint(cp)
	want = map[string]string{s0: "finished SHARD_END -", s1: "reading " + pos[s1].SequenceNumber + " 0"}
	for _, id := range []string{s2, s3} { // no record was written to them
		want[id] = "not-started  0"
	}
	checkStanding(t, "after the whole stream", doc.standing(), want)
	res := runBinary(t, env, "", "lag", stream, "--checkpoint", cp)
	if res.code != 0 || !strings.Contains(res.stdout, "Every measured shard is at the tip; 4 shards: 1 reading, 2 not started, 1 finished") {
		t.Errorf("exit %d, table:\n%s%s", res.code, res.stdout, res.stderr)
	}

	// A checkpoint file of another stream is refused.
	other := emulator.StreamName(t) + "-other"
	e.CreateStream(t, c, other, 1)
	res = runBinary(t, env, "", "lag", other, "--checkpoint", cp)
	if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "error: the positions belong to another stream: checkpoint file "+cp+" is for "+sum.ARN) {
		t.Errorf("another stream's file: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
}

// The lease table of `tail --lease-table` workers on dynalite: a worker
// that read everything and was then killed still owns its leases; records
// written since are its lag.
func TestLagTailLeaseTable(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.MillisBehind {
		t.Skipf("%s answers MillisBehindLatest 0 always", e.Backend)
	}
	d := startDynalite(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	putSpread(t, e, c, stream, 2, 20, "a")
	table := "tail-" + stream
	env := append(tailEnv(e, t, ""), d.Env()...)
	p := startTail(t, env, stream, "--lease-table", table, "--create-lease-table", "--worker-id", "w1", "--checkpoint-interval", "200ms", "--poll-interval", "200ms")
	dc := dynamodb.New(d.ClientOptions())
	read := func() map[string]leases.Lease {
		out := map[string]leases.Lease{}
		ls, err := leases.Scan(context.Background(), dc, table)
		if err != nil {
			return out
		}
		for _, l := range ls {
			out[l.ShardID] = l
		}
		return out
	}
	waitFor(t, 30*time.Second, "every record read and checkpointed", func() bool {
		ls := read()
		return len(p.output()) == 40 && len(ls) == 2 && ls["shardId-000000000000"].Checkpoint != leases.TrimHorizon && ls["shardId-000000000001"].Checkpoint != leases.TrimHorizon
	})
	time.Sleep(500 * time.Millisecond) // the last checkpoint
	p.cmd.Process.Kill()
	p.wait(t, 10*time.Second)
	ls := read()
	putSpread(t, e, c, stream, 4, 20, "b")

	doc := parseLag(t, runCLIWithDynamo(t, d, "lag", stream, "--lease-table", table, "-o", "json"))
	checkStanding(t, "tail lease table", doc.standing(), map[string]string{
		"shardId-000000000000": "reading " + ls["shardId-000000000000"].Checkpoint + " >0 w1",
		"shardId-000000000001": "reading " + ls["shardId-000000000001"].Checkpoint + " >0 w1",
	})
	if doc.Source.Kind != "lease-table" || doc.Source.Name != table {
		t.Errorf("source %+v", doc.Source)
	}

	// A KCL application's table (it names no stream) is refused, with
	// the flag that reads it.
	kcl := "kcl-" + stream
	if err := leases.CreateTable(context.Background(), dc, kcl); err != nil {
		t.Fatal(err)
	}
	put(t, dc, kcl, leasestest.KCLRow("shardId-000000000000", "TRIM_HORIZON", "x", 1))
	res := runCLIWithDynamo(t, d, "lag", stream, "--lease-table", kcl)
	if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "error: lease table "+kcl+" is not a table of tail workers (it names no stream): for a KCL application's lease table use --kcl-table") {
		t.Errorf("a KCL table as --lease-table: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
}

func put(t *testing.T, dc *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := dc.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// A KCL application's lease table (a fixture on dynalite) after a split
// and a merge: the merge child is blocked by the parent whose lease is not
// at SHARD_END, a lease at a sequence number is measured from just after
// it, each with its owner; nothing is written to the table.
func TestLagKCLTable(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	d := startDynalite(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 2)
	// Two calls a moment apart: from the first call's first record of
	// shard 1, kinesis-mock's figure is more than 0.
	var first1 string
	for round := range 2 {
		var recs []emulator.Rec
		for i := range 40 {
			recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("k-%d", i), Data: []byte("x")})
		}
		for _, r := range e.Put(t, c, stream, recs) {
			if aws.ToString(r.ShardId) == "shardId-000000000001" && first1 == "" {
				first1 = aws.ToString(r.SequenceNumber)
			}
		}
		if round == 0 {
			time.Sleep(300 * time.Millisecond)
		}
	}
	splitShard(t, e, c, stream, "shardId-000000000000") // → 2, 3
	mergeOpen(t, e, c, stream, 1)                       // 3 + 1 → 4

	dc := dynamodb.New(d.ClientOptions())
	table := "app-" + stream
	if err := leases.CreateTable(context.Background(), dc, table); err != nil {
		t.Fatal(err)
	}
	for _, item := range []map[string]types.AttributeValue{
		leasestest.KCLRow("shardId-000000000000", "SHARD_END", "", 10),
		leasestest.KCLRow("shardId-000000000001", first1, "worker-dead", 3),
		leasestest.KCLRow("shardId-000000000002", "TRIM_HORIZON", "worker-a", 8, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000003", "SHARD_END", "", 9, "shardId-000000000000"),
		leasestest.KCLRow("shardId-000000000004", "TRIM_HORIZON", "", 0, "shardId-000000000001", "shardId-000000000003"),
		{"leaseKey": &types.AttributeValueMemberS{Value: "Leader"}, "entityType": &types.AttributeValueMemberS{Value: "LEADER"}},
	} {
		put(t, dc, table, item)
	}
	before, err := leases.Scan(context.Background(), dc, table)
	if err != nil {
		t.Fatal(err)
	}

	doc := parseLag(t, runCLIWithDynamo(t, d, "lag", stream, "--kcl-table", table, "-o", "json"))
	behind := ">0"
	if !e.Caps.MillisBehind {
		behind = "0" // kinesalite answers 0 always
	}
	checkStanding(t, "KCL table", doc.standing(), map[string]string{
		"shardId-000000000000": "finished SHARD_END -",
		"shardId-000000000001": "reading " + first1 + " " + behind + " worker-dead",
		"shardId-000000000002": "not-started TRIM_HORIZON 0 worker-a",
		"shardId-000000000003": "finished SHARD_END -",
		"shardId-000000000004": "blocked TRIM_HORIZON 0  shardId-000000000001",
	})
	res := runCLIWithDynamo(t, d, "lag", stream, "--kcl-table", table)
	for _, want := range []string{"consumer positions from KCL lease table " + table, "waits for shardId-000000000001 (not finished)", "worker-dead",
		"5 shards: 1 reading, 1 blocked, 1 not started, 2 finished"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, res.stdout)
		}
	}
	after, err := leases.Scan(context.Background(), dc, table)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("lag changed the KCL table: %+v, was %+v", after, before)
	}
}
