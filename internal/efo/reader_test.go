package efo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }

const shard0 = "shardId-000000000000"

// stubEnv is a stub with an ACTIVE consumer and a client for it.
type stubEnv struct {
	stub     *fanout.Stub
	client   *kinesis.Client
	consumer string
}

// newStub starts a stub with fast timings: events every 20 ms, and no
// limit on calls per second (the readers' pacers space them 30 ms apart;
// TestPacingAtOneCallASecond checks the pace against the real limit).
func newStub(t *testing.T, o fanout.StubOptions) *stubEnv {
	t.Helper()
	if o.Tick == 0 {
		o.Tick = 20 * time.Millisecond
	}
	if o.CallInterval == 0 {
		o.CallInterval = -1
	}
	if o.InUseWindow == 0 {
		o.InUseWindow = -1
	}
	o.CreatingPolls = -1
	s := fanout.NewStub(t, o)
	c := kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), BaseEndpoint: aws.String(s.URL)})
	out, err := c.RegisterStreamConsumer(t.Context(), &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(s.StreamARN), ConsumerName: aws.String("tester")})
	if err != nil {
		t.Fatal(err)
	}
	return &stubEnv{stub: s, client: c, consumer: aws.ToString(out.Consumer.ConsumerARN)}
}

// fast are reader options for the stub: short timeouts and backoffs.
func (e *stubEnv) fast(start efo.Position) efo.Options {
	return efo.Options{
		ConsumerARN: e.consumer, ShardID: shard0, Start: start,
		Pacer:       efo.NewPacer(30 * time.Millisecond),
		CallTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond,
		InUseTimeout: 2 * time.Second, InUseBackoff: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond,
		MaxFailures: 5,
	}
}

func (e *stubEnv) put(from, n int) []string {
	recs := make([]fanout.Record, n)
	for i := range recs {
		recs[i] = fanout.Record{PartitionKey: fmt.Sprintf("k%d", from+i), Data: []byte(fmt.Sprintf("r%d", from+i))}
	}
	return e.stub.Put(shard0, recs...)
}

var children = []types.ChildShard{
	{ShardId: aws.String("shardId-000000000001"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("0"), EndingHashKey: aws.String("99")}},
	{ShardId: aws.String("shardId-000000000002"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("100"), EndingHashKey: aws.String("199")}},
}

// collector keeps what a reader hands over.
type collector struct {
	mu      sync.Mutex
	seqs    []string
	batches []efo.Batch
	// conts[i] is the last continuation handed over before record i's
	// batch, to check where re-subscriptions start.
	hook func(efo.Batch) error
}

func (c *collector) deliver(_ context.Context, b efo.Batch) error {
	if c.hook != nil {
		if err := c.hook(b); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, b)
	for _, r := range b.Records {
		c.seqs = append(c.seqs, aws.ToString(r.SequenceNumber))
	}
	return nil
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs)
}

func run(t *testing.T, api efo.API, o efo.Options, c *collector) (*efo.End, error) {
	t.Helper()
	r, err := efo.NewReader(api, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return r.Run(ctx, c.deliver)
}

func childIDs(end *efo.End) []string {
	var ids []string
	for _, c := range end.ChildShards {
		ids = append(ids, aws.ToString(c.ShardId)+"<"+strings.Join(c.ParentShards, "+"))
	}
	return ids
}

var wantChildren = []string{"shardId-000000000001<" + shard0, "shardId-000000000002<" + shard0}

func TestReadToShardEnd(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 2})
	want := e.put(0, 5)
	e.stub.CloseShard(shard0, children...)
	var c collector
	end, err := run(t, e.client, e.fast(efo.TrimHorizon()), &c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.got(), want) || !slices.Equal(childIDs(end), wantChildren) {
		t.Fatalf("records %v children %v", c.got(), childIDs(end))
	}
	// Events of at most 2 records, the last one ending the shard.
	if n := len(c.batches); n != 3 || c.batches[n-1].Continuation != "" || c.batches[0].MillisBehindLatest == 0 {
		t.Fatalf("batches %+v", c.batches)
	}
	if calls := e.stub.Calls(); len(calls) != 1 || calls[0].Position() != "TRIM_HORIZON" {
		t.Fatalf("calls %+v", calls)
	}
}

// startPositions: each start reads what it should.
func TestStartPositions(t *testing.T) {
	e := newStub(t, fanout.StubOptions{})
	seqs := e.put(0, 4)
	time.Sleep(3 * time.Millisecond) // arrival times are in milliseconds
	cut := time.Now()
	later := e.put(4, 2)
	e.stub.CloseShard(shard0, children...)
	all := append(slices.Clone(seqs), later...)
	for _, tt := range []struct {
		start efo.Position
		want  []string
	}{
		{efo.TrimHorizon(), all},
		{efo.AtSequence(seqs[2]), all[2:]},
		{efo.AfterSequence(seqs[2]), all[3:]},
		{efo.AtTimestamp(cut), later},
		{efo.Latest(), nil},
	} {
		t.Run(tt.start.String(), func(t *testing.T) {
			var c collector
			if _, err := run(t, e.client, e.fast(tt.start), &c); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.got(), tt.want) {
				t.Fatalf("records %v, want %v", c.got(), tt.want)
			}
		})
	}
}

// Subscriptions end (here every 150 ms, as AWS ends them after 5
// minutes) while records keep coming: each new subscription starts AFTER
// the continuation last handed over, and nothing is skipped or repeated.
func TestResubscribeNoGapNoRepeat(t *testing.T) {
	e := newStub(t, fanout.StubOptions{Lifetime: 150 * time.Millisecond, MaxEventRecords: 3})
	var want []string
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			want = append(want, e.put(i*2, 2)...)
			time.Sleep(40 * time.Millisecond)
		}
		e.stub.CloseShard(shard0, children...)
	})
	var (
		c     collector
		mu    sync.Mutex
		conts []string // the continuation handed over last, per subscription
	)
	c.hook = func(b efo.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		for len(conts) < b.Subscription {
			conts = append(conts, "")
		}
		conts[b.Subscription-1] = b.Continuation
		return nil
	}
	end, err := run(t, e.client, e.fast(efo.TrimHorizon()), &c)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.got(), want) || !slices.Equal(childIDs(end), wantChildren) {
		t.Fatalf("records %v\nwant %v\nchildren %v", c.got(), want, childIDs(end))
	}
	calls := e.stub.Calls()
	if len(calls) < 3 {
		t.Fatalf("only %d calls: the subscriptions did not end", len(calls))
	}
	for i, call := range calls[1:] {
		want := "AFTER_SEQUENCE_NUMBER " + conts[i]
		if call.Position() != want {
			t.Fatalf("call %d from %s, want %s", i+2, call.Position(), want)
		}
	}
}

// Over HTTP/1.1 (kinesis-mock, the stub) the SDK used to lose about one
// stream in ten to its own request body (see HTTP1StreamFix): many short
// subscriptions in a row must all end cleanly.
func TestHTTP1StreamsEndCleanly(t *testing.T) {
	e := newStub(t, fanout.StubOptions{Lifetime: 15 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o := e.fast(efo.TrimHorizon())
	r, err := efo.NewReader(e.client, o)
	if err != nil {
		t.Fatal(err)
	}
	c := collector{hook: func(b efo.Batch) error {
		if b.Subscription == 60 {
			cancel()
		}
		return nil
	}}
	if _, err := r.Run(ctx, c.deliver); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Failures != 0 || st.Subscriptions != 60 {
		t.Fatalf("stats %+v", st)
	}
}

// A LATEST start whose first subscription ends before any record came
// subscribes again AFTER the continuation of the last event it read (an
// empty event still says where the stream was); if none came either, AT_TIMESTAMP
// of its first call. Either way what was written in between is read, and
// nothing from before the start; once records came, AFTER the last one.
func TestLatestResubscribesWithoutSkipping(t *testing.T) {
	for _, c := range []struct {
		name  string
		first fanout.Fault
	}{
		{"after an empty event", fanout.Fault{AfterEvents: 1, End: true}},
		{"before any event", fanout.Fault{Drop: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newStub(t, fanout.StubOptions{MaxEventRecords: 1})
			old := e.put(0, 2)
			time.Sleep(3 * time.Millisecond) // arrival times are in milliseconds
			e.stub.Fail(shard0, c.first, fanout.Fault{AfterEvents: 1, End: true})
			o := e.fast(efo.Latest())
			o.LatestMargin = -1
			o.Pacer = efo.NewPacer(100 * time.Millisecond)
			var (
				col  collector
				mu   sync.Mutex
				want []string
				cont string
				once sync.Once
			)
			// Written after the first call, while the reader waits to
			// subscribe again.
			write := func() {
				once.Do(func() {
					mu.Lock()
					defer mu.Unlock()
					want = e.put(2, 2)
					e.stub.CloseShard(shard0, children...)
				})
			}
			col.hook = func(b efo.Batch) error {
				mu.Lock()
				if cont == "" {
					cont = b.Continuation
				}
				mu.Unlock()
				write()
				return nil
			}
			go func() {
				for len(e.stub.Calls()) == 0 {
					time.Sleep(time.Millisecond)
				}
				write()
			}()
			if _, err := run(t, e.client, o, &col); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(col.got(), want) {
				t.Fatalf("records %v, want %v (not the older %v)", col.got(), want, old)
			}
			calls := e.stub.Calls()
			if len(calls) != 3 || calls[0].Position() != "LATEST" || calls[2].Position() != "AFTER_SEQUENCE_NUMBER "+want[0] {
				t.Fatalf("calls %+v", calls)
			}
			if c.first.End {
				if cont == "" || calls[1].Position() != "AFTER_SEQUENCE_NUMBER "+cont {
					t.Fatalf("second call at %s, want after the empty event's continuation %q", calls[1].Position(), cont)
				}
				return
			}
			// The timestamp is the first call's, as the reader saw it.
			if ts := calls[1].Start.Timestamp; calls[1].Start.Type != types.ShardIteratorTypeAtTimestamp || ts.After(calls[0].At) || calls[0].At.Sub(ts) > time.Second {
				t.Fatalf("second call at %s for a first call at %v", calls[1].Position(), calls[0].At)
			}
		})
	}
}

// With the service's own timings (one call a second per consumer and
// shard), the reader never calls too soon.
func TestPacingAtOneCallASecond(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	e := newStub(t, fanout.StubOptions{CallInterval: time.Second, Lifetime: 50 * time.Millisecond})
	e.stub.Fail(shard0, fanout.Fault{CallError: "ResourceInUseException"}, fanout.Fault{Status: 503})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o := e.fast(efo.TrimHorizon())
	o.Pacer = nil // the default
	r, err := efo.NewReader(e.client, o)
	if err != nil {
		t.Fatal(err)
	}
	c := collector{hook: func(b efo.Batch) error {
		if b.Subscription == 3 {
			cancel()
		}
		return nil
	}}
	if _, err := r.Run(ctx, c.deliver); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	calls := e.stub.Calls()
	if st := e.stub.Stats(); st.TooSoon != 0 || len(calls) != 5 {
		t.Fatalf("%d calls, %d too soon", len(calls), st.TooSoon)
	}
	for i := 1; i < len(calls); i++ {
		if d := calls[i].At.Sub(calls[i-1].At); d < time.Second {
			t.Fatalf("calls %d and %d %s apart", i, i+1, d)
		}
	}
}

func TestDebugLines(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 2})
	seqs := e.put(0, 3)
	e.stub.CloseShard(shard0, children...)
	e.stub.Fail(shard0, fanout.Fault{AfterEvents: 1, End: true})
	var (
		mu    sync.Mutex
		lines []string
	)
	o := e.fast(efo.TrimHorizon())
	o.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	if _, err := run(t, e.client, o, &collector{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"shard " + shard0 + ": subscription #1 of consumer tester from TRIM_HORIZON",
		"shard " + shard0 + ": subscription #1 from TRIM_HORIZON ended after * (the stream ended): 1 events, 2 records",
		"shard " + shard0 + ": subscription #2 of consumer tester from AFTER_SEQUENCE_NUMBER " + seqs[1],
		"shard " + shard0 + ": subscription #2 from AFTER_SEQUENCE_NUMBER " + seqs[1] + " ended after * (shard end): 1 events, 1 records",
		"shard " + shard0 + ": shard end after 2 subscriptions, 2 events, 3 records; children shardId-000000000001, shardId-000000000002",
	}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", strings.Join(lines, "\n"))
	}
	for i, w := range want {
		pre, post, _ := strings.Cut(w, "*")
		if !strings.HasPrefix(lines[i], pre) || !strings.HasSuffix(lines[i], post) {
			t.Fatalf("line %d %q, want %q", i+1, lines[i], w)
		}
	}
}
