package fanout

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
)

const shard0 = "shardId-000000000000"

func stubClient(t *testing.T, s *Stub) *kinesis.Client {
	t.Helper()
	o := kinesis.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint:     aws.String(s.URL),
		RetryMaxAttempts: 1,
	}
	if s.opts.TLS {
		pool := x509.NewCertPool()
		pool.AddCert(s.Certificate())
		o.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	}
	return kinesis.New(o)
}

// activeConsumer registers a consumer and polls it to ACTIVE.
func activeConsumer(t *testing.T, s *Stub, c *kinesis.Client, name string) string {
	t.Helper()
	ctx := t.Context()
	out, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(s.StreamARN), ConsumerName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: out.Consumer.ConsumerARN})
		if err != nil {
			t.Fatal(err)
		}
		if d.ConsumerDescription.ConsumerStatus == types.ConsumerStatusActive {
			return aws.ToString(out.Consumer.ConsumerARN)
		}
	}
	t.Fatal("consumer never ACTIVE")
	return ""
}

func put(s *Stub, shard string, from, n int) []string {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{PartitionKey: fmt.Sprintf("k%d", from+i), Data: []byte(fmt.Sprintf("r%d", from+i))}
	}
	return s.Put(shard, recs...)
}

func fastStub(t *testing.T, o StubOptions) (*Stub, *kinesis.Client, string) {
	t.Helper()
	if o.Tick == 0 {
		o.Tick = 20 * time.Millisecond
	}
	if o.CallInterval == 0 {
		o.CallInterval = -1 // no pacing
	}
	if o.InUseWindow == 0 {
		o.InUseWindow = -1 // a new call takes over at once
	}
	s := NewStub(t, o)
	c := stubClient(t, s)
	return s, c, activeConsumer(t, s, c, "tester")
}

func pos(typ types.ShardIteratorType, seq string) types.StartingPosition {
	p := types.StartingPosition{Type: typ}
	if seq != "" {
		p.SequenceNumber = aws.String(seq)
	}
	return p
}

func TestStubPositions(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{MaxEventRecords: 2})
	seqs := put(s, shard0, 0, 5)
	// Arrival times have millisecond resolution.
	time.Sleep(2 * time.Millisecond)
	tsCut := time.Now()
	later := put(s, shard0, 5, 1)
	all := append(slices.Clone(seqs), later...)
	tests := []struct {
		name string
		pos  types.StartingPosition
		want []string
	}{
		{"trim horizon", pos(types.ShardIteratorTypeTrimHorizon, ""), all},
		{"after", pos(types.ShardIteratorTypeAfterSequenceNumber, seqs[1]), all[2:]},
		{"at", pos(types.ShardIteratorTypeAtSequenceNumber, seqs[1]), all[1:]},
		{"after the shard start", pos(types.ShardIteratorTypeAfterSequenceNumber, "49600000000000000000000000000000000000000000000000000000"), all},
		{"at timestamp", types.StartingPosition{Type: types.ShardIteratorTypeAtTimestamp, Timestamp: aws.Time(tsCut)}, later},
		{"latest", pos(types.ShardIteratorTypeLatest, ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := subscribeOnce(t, c, cons, shard0, tt.pos, func(evs []event) bool { return len(evs) == 5 })
			if err != nil {
				t.Fatal(err)
			}
			if got := allSeqs(evs); !slices.Equal(got, tt.want) {
				t.Fatalf("records %v, want %v", got, tt.want)
			}
			for _, e := range evs {
				if len(e.seqs) > 2 {
					t.Fatalf("an event of %d records (max 2)", len(e.seqs))
				}
			}
		})
	}
}

// Records put while a subscription runs arrive in order; the continuation
// is the last record's, or where the reader stands when none is new.
func TestStubLiveRecordsAndContinuation(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{})
	var want []string
	evs, err := subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeLatest, ""), func(evs []event) bool {
		switch len(evs) {
		case 1:
			want = append(want, put(s, shard0, 0, 3)...)
		case 3:
			want = append(want, put(s, shard0, 3, 2)...)
		}
		return len(allSeqs(evs)) == 5
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := allSeqs(evs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if got := aws.ToString(evs[0].continuation); got != "49600000000000000000000000000000000000000000000000000000" {
		t.Fatalf("first, empty event's continuation %s, want the shard's start", got)
	}
	if got := aws.ToString(evs[len(evs)-1].continuation); got != want[4] {
		t.Fatalf("continuation %s, want %s", got, want[4])
	}
}

func TestStubShardEnd(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{MaxEventRecords: 2})
	want := put(s, shard0, 0, 3)
	kids := []types.ChildShard{
		{ShardId: aws.String("shardId-000000000001"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("0"), EndingHashKey: aws.String("1")}},
		{ShardId: aws.String("shardId-000000000002"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("2"), EndingHashKey: aws.String("3")}},
	}
	s.CloseShard(shard0, kids...)
	evs, err := subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeTrimHorizon, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := allSeqs(evs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	last := evs[len(evs)-1]
	// The last records come with the children, as the last event.
	if last.continuation != nil || !slices.Equal(last.seqs, want[2:]) ||
		!slices.Equal(last.children, []string{"shardId-000000000001<[" + shard0 + "]", "shardId-000000000002<[" + shard0 + "]"}) {
		t.Fatalf("last event %+v", last)
	}
	// Subscribing after the last record gives just the final event.
	evs, err = subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeAfterSequenceNumber, want[2]), nil)
	if err != nil || len(evs) != 1 || len(evs[0].seqs) != 0 || evs[0].continuation != nil || len(evs[0].children) != 2 {
		t.Fatalf("after the end: %+v, %v", evs, err)
	}
}

func TestStubFaults(t *testing.T) {
	var (
		riu  *types.ResourceInUseException
		lee  *types.LimitExceededException
		ife  *types.InternalFailureException
		resp interface{ HTTPStatusCode() int }
	)
	tests := []struct {
		name     string
		fault    Fault
		callErr  func(error) bool
		events   int // events before the end
		streamOK func(error) bool
	}{
		{"in use from the call", Fault{CallError: "ResourceInUseException"}, func(err error) bool { return errors.As(err, &riu) }, 0, nil},
		{"limit from the call", Fault{CallError: "LimitExceededException"}, func(err error) bool { return errors.As(err, &lee) }, 0, nil},
		{"503 from the call", Fault{Status: 503}, func(err error) bool { return errors.As(err, &resp) && resp.HTTPStatusCode() == 503 }, 0, nil},
		{"in use in the stream", Fault{StreamError: "ResourceInUseException"}, nil, 0, func(err error) bool { return errors.As(err, &riu) }},
		{"internal failure in the stream", Fault{AfterEvents: 2, StreamError: "InternalFailureException"}, nil, 2, func(err error) bool { return errors.As(err, &ife) }},
		{"clean end", Fault{AfterEvents: 1, End: true}, nil, 1, func(err error) bool { return err == nil }},
		// A frame cut in half ends the SDK's stream too; whether it says
		// so is the SDK's business (it takes an unexpected EOF as the end).
		{"dropped mid-event", Fault{AfterEvents: 1, Drop: true}, nil, 1, func(error) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, cons := fastStub(t, StubOptions{})
			put(s, shard0, 0, 3)
			s.Fail(shard0, tt.fault)
			evs, err := subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeTrimHorizon, ""), nil)
			if tt.callErr != nil {
				var oe *smithy.OperationError
				if !tt.callErr(err) || !errors.As(err, &oe) {
					t.Fatalf("call error %v (%T)", err, err)
				}
				return
			}
			if !tt.streamOK(err) || len(evs) != tt.events {
				t.Fatalf("%d events, stream error %v", len(evs), err)
			}
			// The next call is a plain subscription again.
			evs, err = subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeTrimHorizon, ""), func(evs []event) bool { return true })
			if err != nil || len(evs[0].seqs) != 3 {
				t.Fatalf("next call: %+v, %v", evs, err)
			}
		})
	}
}

func TestStubStall(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{})
	s.Fail(shard0, Fault{AfterEvents: 1, Stall: true})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	out, err := c.SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(cons), ShardId: aws.String(shard0), StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeLatest}}, efo.HTTP1StreamFix)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range out.GetStream().Events() {
		n++
	}
	if n != 1 || ctx.Err() == nil {
		t.Fatalf("%d events before the stream ended (context %v); want 1, then nothing until the client left", n, ctx.Err())
	}
}

func TestStubLifetime(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{Lifetime: 100 * time.Millisecond})
	want := put(s, shard0, 0, 2)
	evs, err := subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeTrimHorizon, ""), nil)
	if err != nil || !slices.Equal(allSeqs(evs), want) || evs[len(evs)-1].continuation == nil {
		t.Fatalf("%+v, %v", evs, err)
	}
}

// AWS's rules for one consumer and shard: calls at most once a second; a
// second subscription within 5 s of the first is refused, a later one
// takes over and the first ends with ResourceInUseException.
func TestStubInUseAndPacing(t *testing.T) {
	s := NewStub(t, StubOptions{Tick: 20 * time.Millisecond, CallInterval: 200 * time.Millisecond, InUseWindow: 400 * time.Millisecond})
	c := stubClient(t, s)
	cons := activeConsumer(t, s, c, "tester")
	in := &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(cons), ShardId: aws.String(shard0), StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeLatest}}
	first, err := c.SubscribeToShard(t.Context(), in, efo.HTTP1StreamFix)
	if err != nil {
		t.Fatal(err)
	}
	defer first.GetStream().Close()
	var lee *types.LimitExceededException
	if _, err := c.SubscribeToShard(t.Context(), in); !errors.As(err, &lee) {
		t.Fatalf("a second call at once: %v, want LimitExceededException", err)
	}
	time.Sleep(250 * time.Millisecond)
	var riu *types.ResourceInUseException
	if _, err := c.SubscribeToShard(t.Context(), in); !errors.As(err, &riu) {
		t.Fatalf("a second subscription within the window: %v, want ResourceInUseException", err)
	}
	time.Sleep(250 * time.Millisecond)
	second, err := c.SubscribeToShard(t.Context(), in, efo.HTTP1StreamFix)
	if err != nil {
		t.Fatalf("after the window: %v", err)
	}
	defer second.GetStream().Close()
	for range first.GetStream().Events() {
	}
	if err := first.GetStream().Err(); !errors.As(err, &riu) {
		t.Fatalf("the first stream ended with %v, want ResourceInUseException", err)
	}
	if st := s.Stats(); st.TooSoon != 1 || st.InUse != 1 || st.Takeovers != 1 || st.Subscriptions != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStubConsumers(t *testing.T) {
	s := NewStub(t, StubOptions{MaxConsumers: 3, ListPageSize: 2, CreatingPolls: 1})
	c := stubClient(t, s)
	ctx := t.Context()
	arn := aws.String(s.StreamARN)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String(n)}); err != nil {
			t.Fatal(err)
		}
	}
	var lee *types.LimitExceededException
	if _, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("d")}); !errors.As(err, &lee) {
		t.Fatalf("a fourth consumer: %v", err)
	}
	var riu *types.ResourceInUseException
	if _, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("a")}); !errors.As(err, &riu) {
		t.Fatalf("a name taken: %v", err)
	}
	var statuses []types.ConsumerStatus
	for range 3 {
		d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("b")})
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, d.ConsumerDescription.ConsumerStatus)
	}
	if !slices.Equal(statuses, []types.ConsumerStatus{"CREATING", "ACTIVE", "ACTIVE"}) {
		t.Fatalf("statuses %v", statuses)
	}
	var names []string
	p := kinesis.NewListStreamConsumersPaginator(c, &kinesis.ListStreamConsumersInput{StreamARN: arn})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, x := range out.Consumers {
			names = append(names, aws.ToString(x.ConsumerName))
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) || pages != 2 {
		t.Fatalf("listed %v in %d pages", names, pages)
	}
	if _, err := c.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("a")})
	if err != nil || d.ConsumerDescription.ConsumerStatus != types.ConsumerStatusDeleting {
		t.Fatalf("after deregister: %+v, %v", d, err)
	}
	var nf *types.ResourceNotFoundException
	if _, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("a")}); !errors.As(err, &nf) {
		t.Fatalf("gone: %v", err)
	}
	if got := s.Consumers(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("consumers %v", got)
	}
	s.FailOp("RegisterStreamConsumer", "LimitExceededException")
	if _, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("e")}); !errors.As(err, &lee) {
		t.Fatalf("scripted: %v", err)
	}
}

func TestStubTLSHTTP2(t *testing.T) {
	s, c, cons := fastStub(t, StubOptions{TLS: true})
	want := put(s, shard0, 0, 2)
	evs, err := subscribeOnce(t, c, cons, shard0, pos(types.ShardIteratorTypeTrimHorizon, ""), func(evs []event) bool { return len(allSeqs(evs)) == 2 })
	if err != nil || !slices.Equal(allSeqs(evs), want) {
		t.Fatalf("%+v, %v", evs, err)
	}
	if calls := s.Calls(); calls[len(calls)-1].Proto != "HTTP/2.0" {
		t.Fatalf("proto %s", calls[len(calls)-1].Proto)
	}
}

// The listing: every shard in the stub's order with an even share of the
// key space; once a shard is closed, its end and its children (their
// ranges and parents) as the final event names them.
func TestStubListShards(t *testing.T) {
	s, c, _ := fastStub(t, StubOptions{Shards: []string{shard0, "shardId-000000000001", "shardId-000000000002"}})
	seqs := put(s, shard0, 0, 2)
	list := func() []string {
		out, err := c.ListShards(t.Context(), &kinesis.ListShardsInput{StreamARN: aws.String(s.StreamARN)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sh := range out.Shards {
			got = append(got, fmt.Sprintf("%s %s-%s parent=%s end=%s", aws.ToString(sh.ShardId), aws.ToString(sh.HashKeyRange.StartingHashKey),
				aws.ToString(sh.HashKeyRange.EndingHashKey), aws.ToString(sh.ParentShardId), aws.ToString(sh.SequenceNumberRange.EndingSequenceNumber)))
		}
		return got
	}
	// A third of 2^128 is 113427455640312821154458202477256070485.
	want := []string{
		shard0 + " 0-113427455640312821154458202477256070484 parent= end=",
		"shardId-000000000001 113427455640312821154458202477256070485-226854911280625642308916404954512140969 parent= end=",
		"shardId-000000000002 226854911280625642308916404954512140970-340282366920938463463374607431768211455 parent= end=",
	}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("listing\n%q\nwant\n%q", got, want)
	}
	s.CloseShard(shard0,
		types.ChildShard{ShardId: aws.String("shardId-000000000001"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("0"), EndingHashKey: aws.String("99")}},
		types.ChildShard{ShardId: aws.String("shardId-000000000002"), ParentShards: []string{shard0}, HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String("100"), EndingHashKey: aws.String("199")}})
	want = []string{
		shard0 + " 0-113427455640312821154458202477256070484 parent= end=" + seqs[1],
		"shardId-000000000001 0-99 parent=" + shard0 + " end=",
		"shardId-000000000002 100-199 parent=" + shard0 + " end=",
	}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("listing after the close\n%q\nwant\n%q", got, want)
	}
}
