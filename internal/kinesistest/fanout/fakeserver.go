package fanout

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
)

// FakeOptions tune a FakeServer. The zero value streams the way AWS does,
// an event every 5 ms.
type FakeOptions struct {
	// Tick is the time between two events of a subscription (default
	// 5 ms); each holds the records that came since the last one, up to
	// MaxEventRecords, or none.
	Tick time.Duration
	// MaxEventRecords is the most records one event holds (default 1000).
	MaxEventRecords int
	// Lifetime of a subscription: it ends cleanly this long after the call
	// (AWS: 5 minutes, the default).
	Lifetime time.Duration
	// NeverEnd keeps a closed shard's subscription going with empty events
	// instead of ending it with the final event (kinesis-mock's way).
	NeverEnd bool
}

func (o *FakeOptions) defaults() {
	if o.Tick <= 0 {
		o.Tick = 5 * time.Millisecond
	}
	if o.MaxEventRecords <= 0 {
		o.MaxEventRecords = 1000
	}
	if o.Lifetime <= 0 {
		o.Lifetime = 5 * time.Minute
	}
}

// FakeServer serves SubscribeToShard (and DescribeStreamConsumer) over
// loopback HTTP from the records of an in-memory fake.Fake, so that the
// scheduler tests that script reshard histories on the fake can read them
// through enhanced fan-out too, with the SDK's real event stream decoding:
// events from the starting position on, the shard's end as a final event
// with no continuation naming the children (none when the fake has
// NoChildShards; never, with NeverEnd), a ResourceNotFoundException in the
// stream once a shard is trimmed. Every consumer ARN of a fake stream is
// ACTIVE until Deregister; faults are scripted per call as on the Stub
// (Fail).
type FakeServer struct {
	URL string

	f       *fake.Fake
	opts    FakeOptions
	srv     *httptest.Server
	enc     *encoder
	closing chan struct{}
	once    sync.Once

	mu     sync.Mutex
	faults map[string][]Fault
	calls  []Call
	gone   map[string]bool // deregistered consumers
}

// NewFakeServer starts a server over f that closes when the test ends.
func NewFakeServer(t testing.TB, f *fake.Fake, o FakeOptions) *FakeServer {
	t.Helper()
	o.defaults()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &FakeServer{f: f, opts: o, enc: newEncoder(), closing: make(chan struct{}), faults: map[string][]Fault{}, gone: map[string]bool{}}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close ends every subscription and stops the server; idempotent.
func (s *FakeServer) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client is an SDK client of the server (one attempt per call).
func (s *FakeServer) Client() *kinesis.Client {
	return kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1})
}

// ConsumerARN is the ARN of a consumer of a fake stream.
func (s *FakeServer) ConsumerARN(stream, name string) string {
	return s.f.StreamARN(stream) + "/consumer/" + name + ":1764496800"
}

// Fail queues faults for the next SubscribeToShard calls of a shard, one
// per call, in order.
func (s *FakeServer) Fail(shard string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[shard] = append(s.faults[shard], faults...)
}

// Deregister makes a consumer unknown from now on (subscriptions that
// run go on, as on kinesis-mock).
func (s *FakeServer) Deregister(consumerARN string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[consumerARN] = true
}

// Calls returns the SubscribeToShard calls so far, in order.
func (s *FakeServer) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *FakeServer) serve(w http.ResponseWriter, r *http.Request) {
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	switch op {
	case "SubscribeToShard":
		s.subscribe(w, r, body)
	case "DescribeStreamConsumer":
		var req consumerRequest
		_ = json.Unmarshal(body, &req)
		stream, ok := s.consumer(req.ConsumerARN)
		if !ok {
			writeError(w, "ResourceNotFoundException", "consumer "+req.ConsumerARN+" not found")
			return
		}
		ref, _ := parseConsumerARN(req.ConsumerARN)
		writeJSON(w, map[string]any{"ConsumerDescription": map[string]any{"ConsumerName": ref.Name, "ConsumerARN": req.ConsumerARN,
			"ConsumerStatus": types.ConsumerStatusActive, "ConsumerCreationTimestamp": 1764496800, "StreamARN": s.f.StreamARN(stream)}})
	default:
		writeError(w, "UnknownOperationException", "fanout fake server: "+op+" is not served")
	}
}

// consumer is the stream of a consumer ARN that is registered.
func (s *FakeServer) consumer(arn string) (string, bool) {
	ref, err := parseConsumerARN(arn)
	if err != nil {
		return "", false
	}
	stream := ref.StreamARN[strings.LastIndex(ref.StreamARN, "/")+1:]
	s.mu.Lock()
	gone := s.gone[arn]
	s.mu.Unlock()
	return stream, !gone && s.f.StreamARN(stream) == ref.StreamARN
}

func (s *FakeServer) subscribe(w http.ResponseWriter, r *http.Request, body []byte) {
	var req subscribeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, "SerializationException", err.Error())
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, callOf(&req, r, time.Now()))
	var fault Fault
	if q := s.faults[req.ShardID]; len(q) > 0 {
		fault, s.faults[req.ShardID] = q[0], q[1:]
	}
	if answerFault(w, r, fault, s.closing, s.mu.Unlock) {
		return
	}
	s.mu.Unlock()
	stream, ok := s.consumer(req.ConsumerARN)
	if !ok {
		writeError(w, "ResourceNotFoundException", "consumer "+req.ConsumerARN+" not found")
		return
	}
	p := req.StartingPosition
	var ts time.Time
	if p.Timestamp != nil {
		ts = time.UnixMilli(int64(math.Round(*p.Timestamp * 1000)))
	}
	idx, listed, err := s.f.StartIndex(stream, req.ShardID, types.ShardIteratorType(p.Type), p.SequenceNumber, ts)
	switch {
	case !listed:
		writeError(w, "ResourceNotFoundException", "shard "+req.ShardID+" of stream "+stream+" not found")
		return
	case err != nil:
		writeError(w, "InvalidArgumentException", err.Error())
		return
	}
	s.stream(w, r, stream, req.ShardID, max(0, idx-fault.Repeat), fault)
}

// stream sends the initial-response, then an event every Tick from record
// index idx on, until the shard's end, the lifetime, a fault, the client
// leaving or the server closing.
func (s *FakeServer) stream(w http.ResponseWriter, r *http.Request, stream, shard string, idx int, fault Fault) {
	send, ok := s.enc.openStream(w)
	if !ok {
		return
	}
	lifetime := time.NewTimer(s.opts.Lifetime)
	defer lifetime.Stop()
	tick := time.NewTicker(s.opts.Tick)
	defer tick.Stop()
	for events := 0; ; events++ {
		if events == fault.AfterEvents && s.enc.endByFault(w, r, fault, s.closing, send, func() eventstream.Message {
			msg, _, _ := s.event(stream, shard, idx)
			return msg
		}) {
			return
		}
		msg, next, final := s.event(stream, shard, idx)
		if !send(msg) || final {
			return
		}
		idx = next
		select {
		case <-tick.C:
		case <-lifetime.C:
			return
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// event is the next event of a subscription at record index idx, the
// index the one after it starts at, and whether it is the last.
func (s *FakeServer) event(stream, shard string, idx int) (eventstream.Message, int, bool) {
	rd := s.f.ReadShard(stream, shard, idx, s.opts.MaxEventRecords)
	if !rd.Listed {
		return exceptionMessage("ResourceNotFoundException", fmt.Sprintf("shard %s of stream %s not found", shard, stream)), 0, true
	}
	ev := &wireEvent{Records: make([]json.RawMessage, len(rd.Records))}
	for i, rec := range rd.Records {
		ev.Records[i] = wireRecordJSON(rec.Seq, rec.PartitionKey, rec.Data, rec.Arrival)
	}
	if rd.Behind {
		ev.MillisBehindLatest = 1000
	}
	final := rd.Closed && !rd.Behind && !s.opts.NeverEnd
	if final {
		for _, c := range rd.Children {
			ev.ChildShards = append(ev.ChildShards, childJSON(c))
		}
	} else {
		cont := rd.StartSeq
		switch {
		case len(rd.Records) > 0:
			cont = rd.Records[len(rd.Records)-1].Seq
		case rd.LastSeq != "":
			cont = rd.LastSeq
		}
		ev.ContinuationSequenceNumber = &cont
	}
	msg, _ := subscribeEventMessage(ev)
	return msg, rd.Next, final
}
