package cmd

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/kpl"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// replayedLine is what this test reads of tail's JSON lines.
type replayedLine struct {
	ShardID         string `json:"shardId"`
	PartitionKey    string `json:"partitionKey"`
	ExplicitHashKey string `json:"explicitHashKey"`
	Data            string `json:"data"`
	DataEncoding    string `json:"dataEncoding"`
}

// The replay of the README: `tail A -o json | put B --format json` copies a
// stream that was split and merged (plain records, binary payloads, KPL
// user records with and without an explicit hash key) into a stream of
// another layout; B then holds every record once, each key's records in
// the order they were written to A, and each explicit hash key's record
// on the shard of B whose range holds it.
func TestPutReplaysAReshardedStream(t *testing.T) {
	e, c, a, b := replayStreams(t, 3)

	w := &keyedWriter{t: t, e: e, c: c, stream: a, keys: 8, written: map[string][]string{}}
	// KPL user records of three keys, one aggregate per round (so each key's
	// order is the aggregates' order), two of them with an explicit hash
	// key: the first and last hash keys of the space land on B's first and
	// last shards whatever their partition keys hash to.
	ehks := map[string]string{"kpl-0": "0", "kpl-1": "", "kpl-2": "340282366920938463463374607431768211455"}
	aggRound := func(n int) {
		var users []kpl.Record
		for _, k := range []string{"kpl-0", "kpl-1", "kpl-2"} {
			payload := fmt.Sprintf("%s#%d", k, n)
			w.written[k] = append(w.written[k], payload)
			users = append(users, kpl.Record{PartitionKey: k, ExplicitHashKey: ehks[k], Data: []byte(payload)})
		}
		e.Put(t, c, a, []emulator.Rec{{PartitionKey: "aggregate", Data: kpl.Aggregate(users)}})
	}
	// Binary payloads go through tail as base64 and must come back as bytes.
	binRound := func(n int) {
		payload := string([]byte{0xff, 0xfe, byte(n), 0})
		w.written["bin"] = append(w.written["bin"], payload)
		e.Put(t, c, a, []emulator.Rec{{PartitionKey: "bin", Data: []byte(payload)}})
	}
	step := func(n int) {
		w.round(2)
		aggRound(n)
		binRound(n)
	}
	step(0)
	splitShard(t, e, c, a, openIDs(t, c, a)[0])
	step(1)
	mergeOpen(t, e, c, a, 1)
	step(2)
	splitShard(t, e, c, a, openIDs(t, c, a)[1])
	step(3)

	bin := binary(t)
	env := tailEnv(e, t, "")
	pipe := exec.Command("bash", "-c", `set -o pipefail; "$BIN" tail "$A" -o json --idle-exit 3s --no-checkpoint | "$BIN" put "$B" --format json`)
	pipe.Env = append(env, "BIN="+bin, "A="+a, "B="+b)
	out, err := pipe.CombinedOutput()
	if err != nil {
		t.Fatalf("tail | put: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("put %d records", w.total()); !strings.Contains(string(out), want) {
		t.Fatalf("summary does not say %q:\n%s", want, out)
	}

	got, shardOf := replayedKeys(t, env, b)
	if len(got) != len(w.written) {
		t.Fatalf("B holds %d keys, A was written %d", len(got), len(w.written))
	}
	for k, want := range w.written {
		if !slices.Equal(got[k], want) {
			t.Errorf("key %s on B: %q\nwritten to A: %q", k, got[k], want)
		}
	}
	// Each record with an explicit hash key sits on the shard holding it.
	g := streamGraph(t, c, b)
	for k, h := range ehks {
		if h == "" {
			continue
		}
		hk, err := lineage.ParseHashKey(h)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range shardOf[k] {
			if !g.Shard(id).Range.Contains(hk) {
				t.Errorf("key %s record %d with explicit hash key %s is on %s (range %v)", k, i, h, id, g.Shard(id).Range)
			}
		}
	}
}

// The incident replay: with --filter, only the records it keeps are
// written (here the errors, in KPL user records and plain records), each
// key's in its order, and nothing of the keys it drops.
func TestPutReplaysFilteredRecords(t *testing.T) {
	e, c, a, b := replayStreams(t, 1)
	w := &keyedWriter{t: t, e: e, c: c, stream: a, keys: 4, written: map[string][]string{}}
	want := map[string][]string{}
	kept := func(n int) {
		var users []kpl.Record
		for _, k := range []string{"kpl-0", "kpl-1"} {
			payload := fmt.Sprintf(`{"level":"error","key":%q,"n":%d}`, k, n)
			want[k] = append(want[k], payload)
			users = append(users, kpl.Record{PartitionKey: k, Data: []byte(payload)})
		}
		e.Put(t, c, a, []emulator.Rec{{PartitionKey: "aggregate", Data: kpl.Aggregate(users)}})
		payload := fmt.Sprintf(`{"level":"error","key":"err","n":%d}`, n)
		want["err"] = append(want["err"], payload)
		e.Put(t, c, a, []emulator.Rec{{PartitionKey: "err", Data: []byte(payload)}})
	}
	for n := range 4 {
		w.round(2) // "key-NN#i": not JSON, dropped
		kept(n)
		if n == 1 {
			splitShard(t, e, c, a, openIDs(t, c, a)[0])
		}
	}
	env := tailEnv(e, t, "")
	pipe := exec.Command("bash", "-c", `set -o pipefail; "$BIN" tail "$A" -o json --idle-exit 3s --no-checkpoint --filter '.payload.level == "error"' | "$BIN" put "$B" --format json`)
	pipe.Env = append(env, "BIN="+binary(t), "A="+a, "B="+b)
	if out, err := pipe.CombinedOutput(); err != nil || !strings.Contains(string(out), "put 12 records") {
		t.Fatalf("tail --filter | put: %v\n%s", err, out)
	}
	got, _ := replayedKeys(t, env, b)
	if len(got) != len(want) {
		t.Fatalf("B holds the keys %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for k, recs := range want {
		if !slices.Equal(got[k], recs) {
			t.Errorf("key %s on B: %q\nwant %q", k, got[k], recs)
		}
	}
}

// replayStreams makes the streams of a replay: A with two shards, to be
// resharded while it is written (skipped on a backend that cannot), and B
// with the given number.
func replayStreams(t *testing.T, shardsB int) (*emulator.Emulator, *kinesis.Client, string, string) {
	t.Helper()
	e := emulator.Require(t)
	if !e.Caps.Reshard {
		t.Skipf("%s cannot reshard", e.Backend)
	}
	c := e.Client(t)
	a, b := emulator.StreamName(t)+"-a", emulator.StreamName(t)+"-b"
	e.CreateStream(t, c, a, 2)
	e.CreateStream(t, c, b, shardsB)
	return e, c, a, b
}

// replayedKeys reads a stream back: each key's payloads in order, and the
// shards they are on.
func replayedKeys(t *testing.T, env []string, stream string) (got, shardOf map[string][]string) {
	t.Helper()
	res := runBinary(t, env, "", "tail", stream, "-o", "json", "--idle-exit", "3s", "--no-checkpoint")
	if res.code != 0 {
		t.Fatalf("tail %s: exit %d\n%s", stream, res.code, res.stderr)
	}
	got, shardOf = map[string][]string{}, map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	for sc.Scan() {
		var l replayedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if l.ExplicitHashKey != "" {
			t.Fatalf("a plain record of %s shows an explicit hash key: %s", stream, sc.Text())
		}
		data := l.Data
		if l.DataEncoding == "base64" {
			data = decodeB64(t, data)
		}
		got[l.PartitionKey] = append(got[l.PartitionKey], data)
		shardOf[l.PartitionKey] = append(shardOf[l.PartitionKey], l.ShardID)
	}
	return got, shardOf
}

func streamGraph(t *testing.T, c lineage.ShardLister, stream string) *lineage.Graph {
	t.Helper()
	shards, err := lineage.ListShards(context.Background(), c, lineage.ListOptions{StreamName: stream})
	if err != nil {
		t.Fatal(err)
	}
	g, err := lineage.Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func decodeB64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
