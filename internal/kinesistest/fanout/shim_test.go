package fanout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }

// shimFixture is a stream on kinesis-mock with an ACTIVE consumer, and a
// client that reaches the emulator through a shim.
type shimFixture struct {
	e        *emulator.Emulator
	direct   *kinesis.Client // straight to the emulator
	viaShim  *kinesis.Client
	shim     *Shim
	stream   string
	consumer string // ARN
}

func newShimFixture(t *testing.T, shards int, o ShimOptions) *shimFixture {
	t.Helper()
	e := emulator.Require(t)
	if !e.Caps.Consumers || e.Caps.SubscribeToShard {
		t.Skipf("the shim is for an emulator with consumers but not AWS's SubscribeToShard; %s is not one", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, shards)
	cons := e.RegisterConsumer(t, c, e.StreamARN(t, c, name), "shim-test")
	shim := NewShim(t, e.Endpoint, o)
	via := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(shim.URL); o.RetryMaxAttempts = 1 })
	return &shimFixture{e: e, direct: c, viaShim: via, shim: shim, stream: name, consumer: aws.ToString(cons.ConsumerARN)}
}

// event is what the tests keep of a SubscribeToShardEvent.
type event struct {
	seqs         []string
	continuation *string
	children     []string
}

// subscribe reads one subscription until the stream ends or until stop
// says so, and returns its events and the stream's error. kinesis-mock
// releases a consumer and shard a moment after a subscription ends: a
// ResourceInUseException before any event is waited out.
func subscribe(t *testing.T, c *kinesis.Client, consumer, shard string, pos types.StartingPosition, stop func([]event) bool) ([]event, error) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		evs, err := subscribeOnce(t, c, consumer, shard, pos, stop)
		var riu *types.ResourceInUseException
		if len(evs) > 0 || attempt == 10 || !errors.As(err, &riu) {
			return evs, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func subscribeOnce(t *testing.T, c *kinesis.Client, consumer, shard string, pos types.StartingPosition, stop func([]event) bool) ([]event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// HTTP1StreamFix: without it the SDK loses an HTTP/1.1 stream now and
	// then to its own request body.
	out, err := c.SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(consumer), ShardId: aws.String(shard), StartingPosition: &pos}, efo.HTTP1StreamFix)
	if err != nil {
		return nil, err
	}
	es := out.GetStream()
	defer es.Close()
	var evs []event
	for ev := range es.Events() {
		v, ok := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent)
		if !ok {
			t.Fatalf("unexpected event %T", ev)
		}
		var e event
		for _, r := range v.Value.Records {
			e.seqs = append(e.seqs, aws.ToString(r.SequenceNumber))
		}
		e.continuation = v.Value.ContinuationSequenceNumber
		for _, cs := range v.Value.ChildShards {
			e.children = append(e.children, aws.ToString(cs.ShardId)+"<"+fmt.Sprint(cs.ParentShards))
		}
		evs = append(evs, e)
		if stop != nil && stop(evs) {
			return evs, nil
		}
	}
	return evs, es.Err()
}

func allSeqs(evs []event) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.seqs...)
	}
	return s
}

func putN(t *testing.T, f *shimFixture, n int, from int) []string {
	t.Helper()
	recs := make([]emulator.Rec, n)
	for i := range recs {
		recs[i] = emulator.Rec{PartitionKey: fmt.Sprintf("k%d", from+i), Data: []byte(fmt.Sprintf("r%d", from+i))}
	}
	res := f.e.Put(t, f.direct, f.stream, recs)
	seqs := make([]string, len(res))
	for i, r := range res {
		seqs[i] = aws.ToString(r.SequenceNumber)
	}
	return seqs
}

func shardIDs(t *testing.T, f *shimFixture) []types.Shard {
	t.Helper()
	out, err := f.direct.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(f.stream)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Shards
}

// Without the shim the SDK cannot read kinesis-mock's stream at all; with
// it, every record comes in order with the emulator's continuation.
func TestShimSDKReadsRecords(t *testing.T) {
	f := newShimFixture(t, 1, ShimOptions{})
	want := putN(t, f, 5, 0)
	shard := aws.ToString(shardIDs(t, f)[0].ShardId)

	_, err := subscribe(t, f.e.Client(t, func(o *kinesis.Options) { o.RetryMaxAttempts = 1 }), f.consumer, shard,
		types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}, nil)
	if err == nil {
		t.Fatal("SDK straight to kinesis-mock: no error; the shim would not be needed")
	}

	evs, err := subscribe(t, f.viaShim, f.consumer, shard, types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon},
		func(evs []event) bool { return len(allSeqs(evs)) >= len(want) })
	if err != nil {
		t.Fatal(err)
	}
	if got := allSeqs(evs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	last := evs[len(evs)-1]
	if aws.ToString(last.continuation) != want[len(want)-1] {
		t.Fatalf("continuation %v, want the last record's %s", aws.ToString(last.continuation), want[len(want)-1])
	}
	// The shim saw the calls made through it (retries of a busy shard
	// included), not the one made straight to the emulator.
	calls := f.shim.Calls()
	if len(calls) == 0 {
		t.Fatal("the shim recorded no call")
	}
	for _, c := range calls {
		if c.ShardID != shard || c.ConsumerARN != f.consumer || c.Position() != "TRIM_HORIZON" {
			t.Fatalf("call %+v", c)
		}
	}
}

// A closed, drained shard's subscription ends the way AWS ends it: a last
// event with a null continuation naming the children, then a clean end.
func TestShimShardEnd(t *testing.T) {
	f := newShimFixture(t, 1, ShimOptions{})
	want := putN(t, f, 3, 0)
	parent := shardIDs(t, f)[0]
	id := aws.ToString(parent.ShardId)
	// Split in the middle of the parent's range.
	_, err := f.direct.SplitShard(t.Context(), &kinesis.SplitShardInput{StreamName: aws.String(f.stream), ShardToSplit: aws.String(id),
		NewStartingHashKey: aws.String("170141183460469231731687303715884105728")})
	if err != nil {
		t.Fatal(err)
	}
	f.e.WaitActive(t, f.direct, f.stream)
	var kids []string
	for _, s := range shardIDs(t, f) {
		if aws.ToString(s.ParentShardId) == id {
			kids = append(kids, aws.ToString(s.ShardId)+"<["+id+"]")
		}
	}

	evs, err := subscribe(t, f.viaShim, f.consumer, id, types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := allSeqs(evs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	last := evs[len(evs)-1]
	if last.continuation != nil || !slices.Equal(last.children, kids) {
		t.Fatalf("last event: continuation %v, children %v; want nil and %v", aws.ToString(last.continuation), last.children, kids)
	}
	for _, e := range evs[:len(evs)-1] {
		if e.continuation == nil || len(e.children) > 0 {
			t.Fatalf("an event before the last one ends the shard: %+v", e)
		}
	}
	if f.shim.ShardEnds() != 1 {
		t.Fatalf("shard ends %d", f.shim.ShardEnds())
	}

	// An open shard never ends (the subscription is stopped by the test).
	evs, err = subscribe(t, f.viaShim, f.consumer, aws.ToString(shardIDs(t, f)[1].ShardId), types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon},
		func(evs []event) bool { return len(evs) == 3 })
	if err != nil || len(evs) != 3 || evs[2].continuation == nil {
		t.Fatalf("open shard: %d events, %v", len(evs), err)
	}
}

// PassThrough keeps the emulator's own behaviour: a closed shard's
// subscription goes on with empty events.
func TestShimPassThrough(t *testing.T) {
	f := newShimFixture(t, 1, ShimOptions{PassThrough: true})
	parent := aws.ToString(shardIDs(t, f)[0].ShardId)
	_, err := f.direct.SplitShard(t.Context(), &kinesis.SplitShardInput{StreamName: aws.String(f.stream), ShardToSplit: aws.String(parent),
		NewStartingHashKey: aws.String("170141183460469231731687303715884105728")})
	if err != nil {
		t.Fatal(err)
	}
	f.e.WaitActive(t, f.direct, f.stream)
	evs, err := subscribe(t, f.viaShim, f.consumer, parent, types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon},
		func(evs []event) bool { return len(evs) == 3 })
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for _, e := range evs {
		if e.continuation == nil || len(e.children) > 0 {
			t.Fatalf("pass-through ended the shard: %+v", e)
		}
	}
}

// EndAfter ends a subscription early and cleanly; resuming after its last
// continuation repeats nothing and misses nothing.
func TestShimEndAfter(t *testing.T) {
	f := newShimFixture(t, 1, ShimOptions{EndAfter: 1500 * time.Millisecond})
	shard := aws.ToString(shardIDs(t, f)[0].ShardId)
	first := putN(t, f, 3, 0)
	evs, err := subscribe(t, f.viaShim, f.consumer, shard, types.StartingPosition{Type: types.ShardIteratorTypeTrimHorizon}, nil)
	if err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
	if got := allSeqs(evs); !slices.Equal(got, first) {
		t.Fatalf("first subscription: %v, want %v", got, first)
	}
	cont := aws.ToString(evs[len(evs)-1].continuation)
	second := putN(t, f, 2, 3)
	evs2, err := subscribe(t, f.viaShim, f.consumer, shard, types.StartingPosition{Type: types.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(cont)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := allSeqs(evs2); !slices.Equal(got, second) {
		t.Fatalf("after %s: %v, want %v", cont, got, second)
	}
}
