package consumer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

func id(n int) string { return fmt.Sprintf("shardId-%012d", n) }

// testGraph: 0 splits into 1 and 2; 2 and 3 (a root) merge into 4; 5 is
// the child of 9, which retention trimmed (it is not listed).
func testGraph(t *testing.T) *lineage.Graph {
	t.Helper()
	sh := func(n int, start, end string, closed bool, parents ...int) types.Shard {
		s := types.Shard{ShardId: aws.String(id(n)), HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String(start), EndingHashKey: aws.String(end)},
			SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if len(parents) > 0 {
			s.ParentShardId = aws.String(id(parents[0]))
		}
		if len(parents) > 1 {
			s.AdjacentParentShardId = aws.String(id(parents[1]))
		}
		if closed {
			s.SequenceNumberRange.EndingSequenceNumber = aws.String("9")
		}
		return s
	}
	q := func(n int) string { // quarter boundaries of the key space
		return [...]string{"0", "85070591730234615865843651857942052864", "170141183460469231731687303715884105728", "255211775190703847597530955573826158592"}[n]
	}
	e := func(n int) string { // the key before quarter n
		return [...]string{"", "85070591730234615865843651857942052863", "170141183460469231731687303715884105727", "255211775190703847597530955573826158591", "340282366920938463463374607431768211455"}[n]
	}
	g, err := lineage.Build([]types.Shard{
		sh(0, q(0), e(2), true),
		sh(3, q(2), e(3), true),
		sh(1, q(0), e(1), false, 0),
		sh(2, q(1), e(2), true, 0),
		sh(4, q(1), e(3), false, 2, 3),
		sh(5, q(3), e(4), false, 9),
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// standing is the part of a ShardLag the sources decide.
type standing struct {
	state     State
	position  string
	sub       int64 // -1: none
	blockedBy []string
	owner     string
	from      *from
}

func standings(shards []ShardLag) map[string]standing {
	out := map[string]standing{}
	for _, s := range shards {
		st := standing{state: s.State, position: s.Position, sub: -1, blockedBy: s.BlockedBy, owner: s.Owner, from: s.from}
		if s.SubSequenceNumber != nil {
			st.sub = *s.SubSequenceNumber
		}
		out[s.ShardID] = st
	}
	return out
}

var (
	trimHorizon = &from{kind: types.ShardIteratorTypeTrimHorizon}
	after       = func(seq string) *from { return &from{kind: types.ShardIteratorTypeAfterSequenceNumber, seq: seq} }
	at          = func(seq string) *from { return &from{kind: types.ShardIteratorTypeAtSequenceNumber, seq: seq} }
)

func checkStandings(t *testing.T, got []ShardLag, g *lineage.Graph, want map[string]standing) {
	t.Helper()
	var order []string
	for _, s := range got {
		order = append(order, s.ShardID)
	}
	var graphOrder []string
	for _, s := range g.Shards() {
		graphOrder = append(graphOrder, s.ID)
	}
	if !reflect.DeepEqual(order, graphOrder) {
		t.Errorf("shards %v, want the lineage order %v", order, graphOrder)
	}
	gotS := standings(got)
	for shard, w := range want {
		if !reflect.DeepEqual(gotS[shard], w) {
			t.Errorf("%s: %+v (from %+v), want %+v (from %+v)", shard, gotS[shard], gotS[shard].from, w, w.from)
		}
	}
}

// A tail checkpoint: tail's ordering rule decides what is blocked, and
// each position says where its call starts.
func TestFromCheckpoint(t *testing.T) {
	g := testGraph(t)
	cases := []struct {
		name string
		pos  map[string]tail.Position
		want map[string]standing
	}{
		{"nothing read yet", map[string]tail.Position{}, map[string]standing{
			id(0): {state: StateNotStarted, sub: -1, from: trimHorizon},
			id(3): {state: StateNotStarted, sub: -1, from: trimHorizon},
			id(1): {state: StateBlocked, sub: -1, blockedBy: []string{id(0)}, from: trimHorizon},
			id(2): {state: StateBlocked, sub: -1, blockedBy: []string{id(0)}, from: trimHorizon},
			id(4): {state: StateBlocked, sub: -1, blockedBy: []string{id(2), id(3)}, from: trimHorizon},
			// Its parent is trimmed: nothing holds it back.
			id(5): {state: StateNotStarted, sub: -1, from: trimHorizon},
			id(9): {state: StateTrimmed, sub: -1},
		}},
		{"a reshard half read", map[string]tail.Position{
			id(0): {ShardEnd: true},
			id(1): {SequenceNumber: "49590338271490256608559692538361571095921575989136588898"},
			id(2): {ShardEnd: true},
			id(3): {SequenceNumber: "12", SubSequence: 4, Aggregated: true},
			id(9): {SequenceNumber: "7"},
		}, map[string]standing{
			id(0): {state: StateFinished, position: "SHARD_END", sub: -1},
			id(1): {state: StateReading, position: "49590338271490256608559692538361571095921575989136588898", sub: -1,
				from: after("49590338271490256608559692538361571095921575989136588898")},
			id(2): {state: StateFinished, position: "SHARD_END", sub: -1},
			// Inside a KPL aggregate: the rest of it is read again.
			id(3): {state: StateReading, position: "12", sub: 4, from: at("12")},
			id(4): {state: StateBlocked, sub: -1, blockedBy: []string{id(3)}, from: trimHorizon},
			id(5): {state: StateNotStarted, sub: -1, from: trimHorizon},
			// Retention took it before the consumer finished it.
			id(9): {state: StateTrimmed, position: "7", sub: -1},
		}},
		{"every parent finished", map[string]tail.Position{
			id(0): {ShardEnd: true}, id(2): {ShardEnd: true}, id(3): {ShardEnd: true}, id(9): {ShardEnd: true},
		}, map[string]standing{
			id(4): {state: StateNotStarted, sub: -1, from: trimHorizon},
			id(9): {state: StateFinished, position: "SHARD_END", sub: -1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkStandings(t, FromCheckpoint(g, tc.pos), g, tc.want)
		})
	}
}

// A lease table: the KCL's rule (leases.Diagnose) decides what is blocked;
// sentinels are starting points; the owner comes along.
func TestFromLeases(t *testing.T) {
	g := testGraph(t)
	rows := []leases.Lease{
		{ShardID: id(0), Checkpoint: leases.ShardEnd},
		{ShardID: id(1), Checkpoint: "4959", Owner: "worker-a"},
		{ShardID: id(2), Checkpoint: "33", SubSequence: 2, Owner: "worker-b"},
		{ShardID: id(3), Checkpoint: leases.AtTimestamp, Owner: "worker-a"},
		{ShardID: id(4), Checkpoint: leases.TrimHorizon, Parents: []string{id(2), id(3)}},
		{ShardID: id(5), Checkpoint: leases.TrimHorizon, Owner: "worker-b"},
		{ShardID: id(9), Checkpoint: "5"},
	}
	d := leases.Diagnose(g, rows, leases.StreamID{Name: "orders"})
	got := FromLeases(g, d)
	checkStandings(t, got, g, map[string]standing{
		id(0): {state: StateFinished, position: "SHARD_END", sub: -1},
		id(1): {state: StateReading, position: "4959", sub: -1, owner: "worker-a", from: after("4959")},
		id(2): {state: StateReading, position: "33", sub: 2, owner: "worker-b", from: at("33")},
		// The time of an AT_TIMESTAMP lease is not kept: nothing to measure.
		id(3): {state: StateNotStarted, position: "AT_TIMESTAMP", sub: -1, owner: "worker-a"},
		id(4): {state: StateBlocked, position: "TRIM_HORIZON", sub: -1, blockedBy: []string{id(2), id(3)}, from: trimHorizon},
		// The KCL's rule: a parent's lease that is not SHARD_END blocks,
		// also when retention took the parent (until the KCL deletes it).
		id(5): {state: StateBlocked, position: "TRIM_HORIZON", sub: -1, blockedBy: []string{id(9)}, owner: "worker-b", from: trimHorizon},
		id(9): {state: StateTrimmed, position: "5", sub: -1},
	})
	for _, s := range got {
		if s.ShardID == id(3) && s.Note == "" {
			t.Error("the AT_TIMESTAMP lease has no note saying why it is not measured")
		}
	}
	// No lease at all: from TRIM_HORIZON, where the KCL creates leases; a
	// LATEST lease from the tip.
	// An AT_TIMESTAMP lease that tail wrote carries its time: from there.
	stamped := standings(FromLeases(g, leases.Diagnose(g, []leases.Lease{{ShardID: id(3), Checkpoint: leases.AtTimestamp, From: 1764496800123}}, leases.StreamID{Name: "orders"})))
	if st := stamped[id(3)]; st.state != StateNotStarted || st.from == nil || st.from.kind != types.ShardIteratorTypeAtTimestamp || !st.from.ts.Equal(time.UnixMilli(1764496800123)) {
		t.Errorf("shard 3 at AT_TIMESTAMP with its time: %+v (from %+v)", st, st.from)
	}
	none := standings(FromLeases(g, leases.Diagnose(g, []leases.Lease{{ShardID: id(5), Checkpoint: leases.Latest}}, leases.StreamID{Name: "orders"})))
	if st := none[id(4)]; st.state != StateNotStarted || st.from == nil || *st.from != *trimHorizon {
		t.Errorf("shard 4 without leases: %+v", st)
	}
	if st := none[id(5)]; st.state != StateNotStarted || st.position != "LATEST" || st.from == nil || st.from.kind != types.ShardIteratorTypeLatest {
		t.Errorf("shard 5 at LATEST: %+v", st)
	}
}

// stubAPI answers GetShardIterator and GetRecords from scripts keyed by
// shard, recording every call.
type stubAPI struct {
	mu      sync.Mutex
	iters   []kinesis.GetShardIteratorInput
	records []kinesis.GetRecordsInput
	// answers[shard] are the GetRecords answers, in turn; the last repeats.
	answers map[string][]answer
	turn    map[string]int
}

type answer struct {
	behind *int64
	err    error
}

func (s *stubAPI) GetShardIterator(_ context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iters = append(s.iters, *in)
	return &kinesis.GetShardIteratorOutput{ShardIterator: in.ShardId}, nil
}

func (s *stubAPI) GetRecords(_ context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, *in)
	shard := aws.ToString(in.ShardIterator)
	as := s.answers[shard]
	a := as[min(s.turn[shard], len(as)-1)]
	s.turn[shard]++
	if a.err != nil {
		return nil, a.err
	}
	return &kinesis.GetRecordsOutput{MillisBehindLatest: a.behind, NextShardIterator: in.ShardIterator}, nil
}

// staticSource is a Source with fixed standings.
type staticSource []ShardLag

func (s staticSource) Ref() SourceRef { return SourceRef{Kind: SourceCheckpoint, Name: "cp.json"} }
func (s staticSource) Read(context.Context, *lineage.Graph, *kstream.Summary) ([]ShardLag, string, error) {
	return append([]ShardLag(nil), s...), "", nil
}

func ms(n int64) *int64 { return &n }

// Lag makes one GetShardIterator at each position and one GetRecords of
// Limit 1 per shard to measure, none for finished or trimmed shards,
// retries throttles with a backoff, and names the worst shard.
func TestLagMeasures(t *testing.T) {
	throttle := &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}
	api := &stubAPI{turn: map[string]int{}, answers: map[string][]answer{
		id(1): {{behind: ms(1200)}},
		id(2): {{err: throttle}, {err: throttle}, {behind: ms(5000)}},
		id(4): {{behind: ms(5000)}},
		id(5): {{}},                                                                                 // no figure
		id(6): {{err: &types.InvalidArgumentException{Message: aws.String("bad sequence number")}}}, // not retried
	}}
	src := staticSource{
		{ShardID: id(0), State: StateFinished, Position: "SHARD_END"},
		{ShardID: id(1), State: StateReading, Position: "40", from: after("40")},
		{ShardID: id(2), State: StateReading, Position: "7", from: at("7")},
		{ShardID: id(4), State: StateBlocked, BlockedBy: []string{id(2)}, from: trimHorizon},
		{ShardID: id(5), State: StateNotStarted, from: trimHorizon},
		{ShardID: id(6), State: StateReading, Position: "1", from: after("1")},
		{ShardID: id(9), State: StateTrimmed},
	}
	var slept []time.Duration
	var mu sync.Mutex
	o := Options{Measure: true, Workers: 2, Seed: 1, Sleep: func(_ context.Context, d time.Duration) error {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		return nil
	}}
	r, err := Lag(t.Context(), api, kstream.Ref{Name: "orders"}, nil, &kstream.Summary{Name: "orders"}, src, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range r.Shards {
		v := "-"
		if s.MillisBehindLatest != nil {
			v = fmt.Sprint(*s.MillisBehindLatest)
		}
		got[s.ShardID] = v + "|" + s.Error
	}
	invalid := &types.InvalidArgumentException{Message: aws.String("bad sequence number")}
	want := map[string]string{
		id(0): "-|", id(1): "1200|", id(2): "5000|", id(4): "5000|",
		id(5): "-|" + errNoFigure.Error(), id(6): "-|" + invalid.Error(), id(9): "-|",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	// The tie between 2 and 4 goes to 2, first in lineage order.
	if r.MaxMillisBehindLatest == nil || *r.MaxMillisBehindLatest != 5000 || r.WorstShard != id(2) {
		t.Errorf("worst %v %s", r.MaxMillisBehindLatest, r.WorstShard)
	}
	if len(r.Failed()) != 2 || r.Count(StateReading) != 3 {
		t.Errorf("failed %d, reading %d", len(r.Failed()), r.Count(StateReading))
	}
	// One iterator per measured shard, at its position; the throttled
	// shard keeps its iterator across the retries.
	iters := map[string]string{}
	for _, in := range api.iters {
		iters[aws.ToString(in.ShardId)] += string(in.ShardIteratorType) + " " + aws.ToString(in.StartingSequenceNumber) + ";"
	}
	wantIters := map[string]string{
		id(1): "AFTER_SEQUENCE_NUMBER 40;", id(2): "AT_SEQUENCE_NUMBER 7;", id(4): "TRIM_HORIZON ;",
		id(5): "TRIM_HORIZON ;", id(6): "AFTER_SEQUENCE_NUMBER 1;",
	}
	if !reflect.DeepEqual(iters, wantIters) {
		t.Errorf("iterators %v, want %v", iters, wantIters)
	}
	calls := map[string]int{}
	for _, in := range api.records {
		calls[aws.ToString(in.ShardIterator)]++
		if aws.ToInt32(in.Limit) != 1 {
			t.Errorf("GetRecords with Limit %d", aws.ToInt32(in.Limit))
		}
	}
	if want := map[string]int{id(1): 1, id(2): 3, id(4): 1, id(5): 1, id(6): 1}; !reflect.DeepEqual(calls, want) {
		t.Errorf("GetRecords calls %v, want %v", calls, want)
	}
	// Two throttles, two backoffs of at least a second each.
	if len(slept) != 2 || slept[0] < time.Second || slept[1] < slept[0]/2 {
		t.Errorf("backoffs %v", slept)
	}

	// Without Measure: not one call.
	api2 := &stubAPI{turn: map[string]int{}}
	r, err = Lag(t.Context(), api2, kstream.Ref{Name: "orders"}, nil, &kstream.Summary{Name: "orders"}, src, Options{})
	if err != nil || len(api2.iters)+len(api2.records) != 0 || r.MaxMillisBehindLatest != nil {
		t.Errorf("unmeasured: err %v, %d calls, max %v", err, len(api2.iters)+len(api2.records), r.MaxMillisBehindLatest)
	}
}

// A shard throttled past its budget gives up with the throttle as the
// reason; the others are measured.
func TestLagThrottledPastBudget(t *testing.T) {
	throttle := &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}
	api := &stubAPI{turn: map[string]int{}, answers: map[string][]answer{id(1): {{err: throttle}}, id(2): {{behind: ms(0)}}}}
	src := staticSource{{ShardID: id(1), State: StateReading, from: after("4")}, {ShardID: id(2), State: StateReading, from: after("5")}}
	r, err := Lag(t.Context(), api, kstream.Ref{Name: "orders"}, nil, &kstream.Summary{Name: "orders"}, src,
		Options{Measure: true, ShardBudget: 3 * time.Second, Seed: 1, Sleep: func(ctx context.Context, d time.Duration) error { return awscall.Sleep(ctx, time.Millisecond) }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards[0].MillisBehindLatest != nil || !strings.Contains(r.Shards[0].Error, "gave up within the shard's 3s") || !strings.Contains(r.Shards[0].Error, "Rate exceeded for shard") {
		t.Errorf("throttled shard: %+v", r.Shards[0])
	}
	if r.Shards[1].MillisBehindLatest == nil || *r.Shards[1].MillisBehindLatest != 0 || r.WorstShard != id(2) {
		t.Errorf("other shard: %+v, worst %s", r.Shards[1], r.WorstShard)
	}
}

// A checkpoint file written by a tail with --shard or --key stands for the
// shards that tail reads; a file of another stream is refused.
func TestCheckpointFileFilters(t *testing.T) {
	g := testGraph(t)
	sum := &kstream.Summary{Name: "orders", ARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", Created: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	write := func(filter tail.Filter) string {
		path := filepath.Join(t.TempDir(), "cp.json")
		st, err := tail.OpenFilteredFile(path, tail.StreamIdentity{Name: sum.Name, ARN: sum.ARN, Created: sum.Created}, filter, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Save(t.Context(), map[string]tail.Position{id(0): {ShardEnd: true}}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A key in shard 4's range (the second and third quarters): 0, 2, 4.
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("key-", i); g.Shard(id(2)).Range.Contains(lineage.PartitionKeyHash(k)) {
			key = k
		}
	}
	for _, tc := range []struct {
		filter tail.Filter
		shards []string
		note   string
	}{
		{tail.Filter{}, []string{id(0), id(3), id(9), id(1), id(2), id(4), id(5)}, ""},
		{tail.Filter{Shard: id(2)}, []string{id(2), id(4)}, "the file was written by a tail with --shard " + id(2) + ": only the shards it reads are shown"},
		{tail.Filter{Key: key}, []string{id(0), id(2), id(4)}, "the file was written by a tail with --key " + key +
			": only the shards it reads are shown, and its positions are of that key's records: BEHIND counts the other keys' records too"},
	} {
		got, note, err := CheckpointFile{Path: write(tc.filter)}.Read(t.Context(), g, sum)
		if err != nil {
			t.Fatal(err)
		}
		// In the lineage's order.
		var ids, want []string
		for _, s := range got {
			ids = append(ids, s.ShardID)
		}
		for _, s := range g.Shards() {
			if slices.Contains(tc.shards, s.ID) {
				want = append(want, s.ID)
			}
		}
		if !slices.Equal(ids, want) || note != tc.note {
			t.Errorf("%v: shards %v, note %q; want %v, %q", tc.filter, ids, note, tc.shards, tc.note)
		}
	}
	other := *sum
	other.Created = other.Created.Add(time.Hour) // re-created under the same name
	if _, _, err := (CheckpointFile{Path: write(tail.Filter{})}).Read(t.Context(), g, &other); !errors.Is(err, ErrForeign) {
		t.Errorf("a file of the stream before it was re-created: %v", err)
	}
}

// A position inside a CloudWatch Logs batch (tail --cwlogs), in a
// checkpoint file or a lease table: the rest of the batch is unread, so the
// call starts at the record, and the report says which event it stopped at.
func TestInBatchPositions(t *testing.T) {
	g := testGraph(t)
	fromFile := FromCheckpoint(g, map[string]tail.Position{
		id(0): {ShardEnd: true},
		id(1): {SequenceNumber: "12", InBatch: true, LogEventIndex: 3},
		id(2): {SequenceNumber: "13", Aggregated: true, SubSequence: 1, InBatch: true, LogEventIndex: 0},
	})
	d := leases.Diagnose(g, []leases.Lease{
		{ShardID: id(0), Checkpoint: leases.ShardEnd},
		{ShardID: id(1), Checkpoint: "12", HasLogEvent: true, LogEvent: 3},
		{ShardID: id(2), Checkpoint: "13", SubSequence: 1, HasLogEvent: true},
	}, leases.StreamID{Name: "orders"})
	for name, got := range map[string][]ShardLag{"checkpoint": fromFile, "lease table": FromLeases(g, d)} {
		want := map[string]struct {
			sub, event int64
			from       *from
		}{id(1): {-1, 3, at("12")}, id(2): {1, 0, at("13")}}
		for _, s := range got {
			w, ok := want[s.ShardID]
			if !ok {
				continue
			}
			sub, event := int64(-1), int64(-1)
			if s.SubSequenceNumber != nil {
				sub = *s.SubSequenceNumber
			}
			if s.LogEventIndex != nil {
				event = *s.LogEventIndex
			}
			if sub != w.sub || event != w.event || !reflect.DeepEqual(s.from, w.from) {
				t.Errorf("%s: %s: sub %d, event %d, from %+v; want %d, %d, %+v", name, s.ShardID, sub, event, s.from, w.sub, w.event, w.from)
			}
		}
	}
}

// timedAPI is stubAPI recording when each call was made.
type timedAPI struct {
	stubAPI
	times map[string][]time.Time // GetRecords calls per shard
}

func (s *timedAPI) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, o ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	s.mu.Lock()
	s.times[aws.ToString(in.ShardIterator)] = append(s.times[aws.ToString(in.ShardIterator)], time.Now())
	s.mu.Unlock()
	return s.stubAPI.GetRecords(ctx, in, o...)
}

// lag's probes are paced as every reader of a shard is (awscall.Pacer): in
// virtual time, a shard throttled again and again, and one failing now and
// then, never see more than 5 calls in a second, and never a call within
// a second after a throttle (two after two in a row, and so on).
func TestLagProbesKeepTheShardQuotas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		throttle := &types.ProvisionedThroughputExceededException{Message: aws.String("Rate exceeded for shard")}
		boom := &types.InternalFailureException{Message: aws.String("boom")}
		api := &timedAPI{times: map[string][]time.Time{}, stubAPI: stubAPI{turn: map[string]int{}, answers: map[string][]answer{
			id(1): {{err: throttle}, {err: throttle}, {err: throttle}, {err: throttle}, {behind: ms(7)}},
			id(2): {{err: boom}, {err: boom}, {err: boom}, {behind: ms(9)}},
		}}}
		src := staticSource{{ShardID: id(1), State: StateReading, from: after("4")}, {ShardID: id(2), State: StateReading, from: after("5")}}
		r, err := Lag(t.Context(), api, kstream.Ref{Name: "orders"}, nil, &kstream.Summary{Name: "orders"}, src, Options{Measure: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Shards {
			if s.MillisBehindLatest == nil {
				t.Fatalf("shard %s not measured: %s", s.ShardID, s.Error)
			}
		}
		for shard, ts := range api.times {
			for i := range ts {
				n := 0
				for _, u := range ts[i:] {
					if u.Sub(ts[i]) < time.Second {
						n++
					}
				}
				if n > 5 {
					t.Errorf("shard %s: %d calls in the second from %v", shard, n, ts[i])
				}
				if i > 0 && ts[i].Sub(ts[i-1]) < awscall.MinCallInterval {
					t.Errorf("shard %s: calls %d and %d %v apart", shard, i, i+1, ts[i].Sub(ts[i-1]))
				}
			}
		}
		thr := api.times[id(1)]
		for i := 1; i < len(thr); i++ {
			if quiet := min(awscall.ThrottleQuiet<<(i-1), 8*time.Second); thr[i].Sub(thr[i-1]) < quiet {
				t.Errorf("throttle %d in a row followed after %v, want at least %v", i, thr[i].Sub(thr[i-1]), quiet)
			}
		}
	})
}
