package efo_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

// mockEnv is a one-shard stream on kinesis-mock with an ACTIVE consumer,
// and a client that reaches it through the shim.
type mockEnv struct {
	t        *testing.T
	e        *emulator.Emulator
	direct   *kinesis.Client
	via      *kinesis.Client
	shim     *fanout.Shim
	stream   string
	shard    string
	consumer string
}

func (m *mockEnv) logf(format string, args ...any) { m.t.Logf(format, args...) }

func newMock(t *testing.T, o fanout.ShimOptions) *mockEnv {
	t.Helper()
	e := emulator.Require(t)
	if !e.Caps.Consumers {
		t.Skipf("emulator: %s has no enhanced fan-out", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	cons := e.RegisterConsumer(t, c, e.StreamARN(t, c, name), "efo-test")
	shim := fanout.NewShim(t, e.Endpoint, o)
	via := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(shim.URL) })
	ls, err := c.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return &mockEnv{t: t, e: e, direct: c, via: via, shim: shim, stream: name, shard: aws.ToString(ls.Shards[0].ShardId), consumer: aws.ToString(cons.ConsumerARN)}
}

func (m *mockEnv) put(t *testing.T, from, n int) []string {
	t.Helper()
	recs := make([]emulator.Rec, n)
	for i := range recs {
		recs[i] = emulator.Rec{PartitionKey: fmt.Sprintf("k%d", from+i), Data: []byte(fmt.Sprintf("r%d", from+i))}
	}
	var seqs []string
	for _, r := range m.e.Put(t, m.direct, m.stream, recs) {
		seqs = append(seqs, aws.ToString(r.SequenceNumber))
	}
	return seqs
}

// options for kinesis-mock: its events come once a second, and it
// releases a consumer and shard 1 to 2 s after a subscription closes.
func (m *mockEnv) options(start efo.Position) efo.Options {
	return efo.Options{ConsumerARN: m.consumer, ShardID: m.shard, Start: start,
		InUseBackoff: 300 * time.Millisecond, RetryBackoff: 100 * time.Millisecond, Logf: m.logf}
}

// Records written while subscriptions come and go (the shim ends each after
// 2.5 s, as AWS does after 5 minutes) are all read once, in order; after a
// split, the parent's subscription ends with its children.
func TestKinesisMockResubscribeAndShardEnd(t *testing.T) {
	m := newMock(t, fanout.ShimOptions{EndAfter: 2500 * time.Millisecond})
	want := m.put(t, 0, 5)
	var c collector
	var once sync.Once
	var wg sync.WaitGroup
	c.hook = func(b efo.Batch) error {
		if b.Subscription > 1 {
			once.Do(func() {
				wg.Go(func() {
					// A second batch, then split: the parent closes.
					want = append(want, m.put(t, 5, 3)...)
					_, err := m.direct.SplitShard(context.Background(), &kinesis.SplitShardInput{StreamName: aws.String(m.stream),
						ShardToSplit: aws.String(m.shard), NewStartingHashKey: aws.String("170141183460469231731687303715884105728")})
					if err != nil {
						t.Error(err)
					}
				})
			})
		}
		return nil
	}
	o := m.options(efo.TrimHorizon())
	r, err := efo.NewReader(m.via, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	end, err := r.Run(ctx, c.deliver)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.got(), want) {
		t.Fatalf("records %v\nwant %v", c.got(), want)
	}
	ls, err := m.direct.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(m.stream)})
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, s := range ls.Shards {
		if aws.ToString(s.ParentShardId) == m.shard {
			kids = append(kids, aws.ToString(s.ShardId)+"<"+m.shard)
		}
	}
	if len(kids) != 2 || !slices.Equal(childIDs(end), kids) {
		t.Fatalf("children %v, want %v", childIDs(end), kids)
	}
	st := r.Stats()
	if st.Resubscriptions < 1 || st.Duplicates != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Every subscription after the first started after a record read.
	calls := m.shim.Calls()
	if calls[0].Position() != "TRIM_HORIZON" {
		t.Fatalf("first call from %s", calls[0].Position())
	}
	for _, call := range calls[1:] {
		if call.Start.Type != types.ShardIteratorTypeAfterSequenceNumber || !slices.Contains(want, call.Start.SequenceNumber) {
			t.Fatalf("a call from %s", call.Position())
		}
	}
}

// kinesis-mock's empty LATEST events carry the continuation "0" on a
// shard without records: the reader must not resume after it (that is the
// shard's start) but AT the time of its first call; with records it is
// the last one's, and the reader resumes after it. Either way, only what
// was written since the start is read.
func TestKinesisMockLatest(t *testing.T) {
	m := newMock(t, fanout.ShimOptions{EndAfter: 1500 * time.Millisecond})
	old := m.put(t, 0, 3)
	time.Sleep(10 * time.Millisecond)
	o := m.options(efo.Latest())
	o.LatestMargin = -1
	r, err := efo.NewReader(m.via, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var (
		c    collector
		want []string
		once sync.Once
	)
	c.hook = func(b efo.Batch) error {
		if b.Subscription > 1 {
			once.Do(func() { want = m.put(t, 3, 2) })
		}
		if len(b.Records) > 0 {
			cancel()
		}
		return nil
	}
	_, err = r.Run(ctx, c.deliver)
	if ctx.Err() == nil {
		t.Fatalf("Run ended before any record: %v", err)
	}
	if got := c.got(); len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v (not the older %v)", got, want, old)
	}
	calls := m.shim.Calls()
	if calls[0].Position() != "LATEST" || calls[1].Start.Type == types.ShardIteratorTypeLatest {
		t.Fatalf("calls from %s, %s", calls[0].Position(), calls[1].Position())
	}
}

// Straight to kinesis-mock, with no shim: its streams start with an event,
// not the initial-response the SDK reads first; the reader supplies it, so
// it reads records (and kinesis-mock's refusals inside the stream) as
// through the shim.
func TestKinesisMockWithoutTheShim(t *testing.T) {
	m := newMock(t, fanout.ShimOptions{})
	want := m.put(t, 0, 4)
	o := m.options(efo.TrimHorizon())
	r, err := efo.NewReader(m.direct, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var c collector
	c.hook = func(b efo.Batch) error {
		if len(c.got())+len(b.Records) >= len(want) {
			cancel()
		}
		return nil
	}
	if _, err := r.Run(ctx, c.deliver); ctx.Err() == nil {
		t.Fatalf("Run: %v", err)
	}
	if !slices.Equal(c.got(), want) {
		t.Fatalf("records %v, want %v", c.got(), want)
	}
	// A second reader at once: kinesis-mock refuses the consumer and shard
	// for a second or two inside the stream; the reader asks again.
	r2, err := efo.NewReader(m.direct, m.options(efo.AfterSequence(want[len(want)-1])))
	if err != nil {
		t.Fatal(err)
	}
	more := m.put(t, 4, 2)
	ctx2, cancel2 := context.WithTimeout(t.Context(), time.Minute)
	defer cancel2()
	var c2 collector
	c2.hook = func(b efo.Batch) error {
		if len(c2.got())+len(b.Records) >= len(more) {
			cancel2()
		}
		return nil
	}
	if _, err := r2.Run(ctx2, c2.deliver); ctx2.Err() == nil {
		t.Fatalf("second Run: %v", err)
	}
	if !slices.Equal(c2.got(), more) {
		t.Fatalf("records %v, want %v", c2.got(), more)
	}
	t.Logf("second reader: %+v", r2.Stats())
}
