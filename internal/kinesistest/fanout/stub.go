package fanout

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// StubOptions describe the stream a Stub serves. The zero value is one
// open shard, shardId-000000000000, with AWS's timings.
type StubOptions struct {
	Stream  string   // default "efo-stub"
	Account string   // 12 digits; default 123456789012
	Region  string   // default us-east-1
	Shards  []string // shard ids; default shardId-000000000000
	// Lifetime of a subscription: it ends cleanly this long after the
	// call (AWS: 5 minutes).
	Lifetime time.Duration
	// Tick: a subscription sends an event at least this often, an empty
	// one when nothing is new (default 1 s); records go out as they come.
	Tick time.Duration
	// MaxEventRecords is the most records one event holds (default 1000).
	MaxEventRecords int
	// InUseWindow: a call within this long of the successful call of an
	// active subscription of the same consumer and shard is refused with
	// ResourceInUseException; a later one takes over, and the old
	// subscription ends with a ResourceInUseException in its stream
	// (AWS: 5 s).
	InUseWindow time.Duration
	// CallInterval: calls for one consumer and shard closer together than
	// this are refused with LimitExceededException (AWS: one a second).
	CallInterval time.Duration
	// CreatingPolls is how many DescribeStreamConsumer answers a new
	// consumer stays CREATING (default 2; negative: ACTIVE at once).
	// DeletingPolls likewise for DELETING after a deregister (default 1).
	CreatingPolls, DeletingPolls int
	// MaxConsumers per stream (default 20).
	MaxConsumers int
	// ListPageSize is the most consumers a ListStreamConsumers page holds
	// (default 100, or MaxResults when smaller).
	ListPageSize int
	// TLS serves HTTPS with HTTP/2; the client must trust Certificate().
	TLS bool
}

func (o *StubOptions) defaults() {
	if o.Stream == "" {
		o.Stream = "efo-stub"
	}
	if o.Account == "" {
		o.Account = "123456789012"
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if len(o.Shards) == 0 {
		o.Shards = []string{"shardId-000000000000"}
	}
	if o.Lifetime <= 0 {
		o.Lifetime = 5 * time.Minute
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.MaxEventRecords <= 0 {
		o.MaxEventRecords = 1000
	}
	if o.InUseWindow == 0 {
		o.InUseWindow = 5 * time.Second
	}
	if o.CallInterval == 0 {
		o.CallInterval = time.Second
	}
	if o.CreatingPolls == 0 {
		o.CreatingPolls = 2
	}
	if o.DeletingPolls == 0 {
		o.DeletingPolls = 1
	}
	if o.MaxConsumers <= 0 {
		o.MaxConsumers = 20
	}
	if o.ListPageSize <= 0 {
		o.ListPageSize = 100
	}
}

// Record is a record to Put into a stub shard.
type Record struct {
	PartitionKey string
	Data         []byte
	Arrival      time.Time // zero: now
}

// Fault is what one SubscribeToShard call gets instead of a plain
// subscription. Either the call itself fails (CallError or Status), or the
// subscription starts and, after AfterEvents events, ends one of the other
// ways. The zero Fault is a plain subscription.
type Fault struct {
	CallError string // HTTP 400 with this error code, e.g. ResourceInUseException
	Status    int    // this HTTP status with a body no API error decodes from (500, 503)
	Hang      bool   // no answer at all until the client leaves

	// Repeat starts the stream this many records before the position asked
	// for: a service that repeats itself.
	Repeat int

	AfterEvents int
	StreamError string // an exception message in the stream, e.g. InternalFailureException
	Drop        bool   // the connection cut halfway through the next event
	End         bool   // a clean end, as after the subscription's lifetime
	Stall       bool   // nothing more, the connection kept open until the client leaves
}

// StubStats count what the stub answered.
type StubStats struct {
	Subscriptions int // successful SubscribeToShard calls
	// TooSoon counts calls refused because the last call for the same
	// consumer and shard was less than CallInterval before.
	TooSoon int
	// InUse counts calls refused because another subscription of the
	// consumer and shard had started less than InUseWindow before.
	InUse     int
	Takeovers int
	Events    int // SubscribeToShardEvent messages sent
}

// Stub is a loopback server for the enhanced fan-out API, with records,
// shard ends and scripted faults; see the package comment.
type Stub struct {
	URL       string
	StreamARN string

	opts StubOptions
	srv  *httptest.Server
	enc  *encoder
	// created is when the stream was made; also the epoch of consumer ARNs.
	created time.Time

	mu        sync.Mutex
	shards    map[string]*stubShard
	order     []string
	consumers []*stubConsumer
	active    map[subKey]*subscription
	lastCall  map[subKey]time.Time
	faults    map[string][]Fault
	opFaults  map[string][]string
	calls     []Call
	stats     StubStats
	changed   chan struct{} // closed (and replaced) when a shard changes
	closing   chan struct{}
	closeOnce sync.Once
}

type subKey struct{ consumer, shard string }

type stubShard struct {
	id       string
	base     *big.Int // the shard's starting sequence number
	records  []stubRecord
	closed   bool
	children []types.ChildShard
}

type stubRecord struct {
	seq     string
	key     string
	data    []byte
	arrival time.Time
}

type stubConsumer struct {
	name, arn string
	created   time.Time
	status    types.ConsumerStatus
	polls     int // answers left in CREATING or DELETING
}

// NewStub starts a stub that closes when the test ends.
func NewStub(t testing.TB, o StubOptions) *Stub {
	t.Helper()
	s, err := StartStub(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartStub starts a stub without a testing.TB; Close it when done.
func StartStub(o StubOptions) (*Stub, error) {
	o.defaults()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fanout: stub: %w", err)
	}
	s := &Stub{
		opts:      o,
		enc:       newEncoder(),
		created:   time.Now().Truncate(time.Second),
		StreamARN: fmt.Sprintf("arn:aws:kinesis:%s:%s:stream/%s", o.Region, o.Account, o.Stream),
		shards:    map[string]*stubShard{},
		active:    map[subKey]*subscription{},
		lastCall:  map[subKey]time.Time{},
		faults:    map[string][]Fault{},
		opFaults:  map[string][]string{},
		changed:   make(chan struct{}),
		closing:   make(chan struct{}),
	}
	for i, id := range o.Shards {
		// Realistic-looking, 56-digit sequence numbers, far apart per shard.
		base, _ := new(big.Int).SetString("49600000000000000000000000000000000000000000000000000000", 10)
		base.Add(base, new(big.Int).Mul(big.NewInt(int64(i)), new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil)))
		s.shards[id] = &stubShard{id: id, base: base}
		s.order = append(s.order, id)
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	if o.TLS {
		s.srv.EnableHTTP2 = true
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	return s, nil
}

// Certificate is the TLS certificate of a stub started with TLS.
func (s *Stub) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Close ends every subscription and stops the stub. It is idempotent.
func (s *Stub) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Put appends records to a shard and returns their sequence numbers.
func (s *Stub) Put(shard string, recs ...Record) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shards[shard]
	if sh == nil {
		panic("fanout: stub: no shard " + shard)
	}
	if sh.closed {
		panic("fanout: stub: shard " + shard + " is closed")
	}
	seqs := make([]string, len(recs))
	for i, r := range recs {
		n := new(big.Int).Add(sh.base, big.NewInt(int64(len(sh.records)+1)*1000))
		if r.Arrival.IsZero() {
			r.Arrival = time.Now()
		}
		r.Arrival = r.Arrival.Truncate(time.Millisecond) // as AWS keeps it
		seqs[i] = n.String()
		sh.records = append(sh.records, stubRecord{seq: seqs[i], key: r.PartitionKey, data: r.Data, arrival: r.Arrival})
	}
	s.notify()
	return seqs
}

// CloseShard closes a shard: once a subscription has sent its last
// records, it sends the final event (no continuation, these children) and
// ends.
func (s *Stub) CloseShard(shard string, children ...types.ChildShard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shards[shard]
	if sh == nil {
		panic("fanout: stub: no shard " + shard)
	}
	sh.closed, sh.children = true, children
	s.notify()
}

// Fail queues faults for the next SubscribeToShard calls of a shard, one
// per call, in order.
func (s *Stub) Fail(shard string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[shard] = append(s.faults[shard], faults...)
}

// FailOp queues error codes for the next calls of another operation
// (RegisterStreamConsumer, DescribeStreamConsumer, ...), one per call.
func (s *Stub) FailOp(op string, codes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opFaults[op] = append(s.opFaults[op], codes...)
}

// Calls returns the SubscribeToShard calls so far, refused ones included.
func (s *Stub) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Stats returns the counts so far.
func (s *Stub) Stats() StubStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Consumers returns the names of the registered consumers (DELETING ones
// included), in the order they were registered.
func (s *Stub) Consumers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, c := range s.consumers {
		names = append(names, c.name)
	}
	return names
}

// notify wakes the subscriptions waiting for a change; s.mu is held.
func (s *Stub) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Stub) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, targetPrefix)
	if r.Method != http.MethodPost || !ok {
		writeError(w, "UnknownOperationException", "fanout stub: no operation "+target)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if code := s.takeOpFault(op); code != "" {
		writeError(w, code, "fanout stub: scripted "+code)
		return
	}
	consumerOps := map[string]func(http.ResponseWriter, *consumerRequest){
		"RegisterStreamConsumer":   s.register,
		"DescribeStreamConsumer":   s.describeConsumer,
		"ListStreamConsumers":      s.listConsumers,
		"DeregisterStreamConsumer": s.deregister,
	}
	if fn := consumerOps[op]; fn != nil {
		var req consumerRequest
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		defer s.mu.Unlock()
		fn(w, &req)
		return
	}
	switch op {
	case "SubscribeToShard":
		s.subscribe(w, r, body)
	case "DescribeStreamSummary":
		s.describeStream(w, body)
	case "ListShards":
		s.listShards(w, body)
	default:
		writeError(w, "UnknownOperationException", "fanout stub: "+op+" is not served")
	}
}

func (s *Stub) takeOpFault(op string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.opFaults[op]
	if len(q) == 0 {
		return ""
	}
	s.opFaults[op] = q[1:]
	return q[0]
}

func writeError(w http.ResponseWriter, code, message string) {
	w.Header().Set("Content-Type", awsJSONType)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", awsJSONType)
	_ = json.NewEncoder(w).Encode(v)
}

// epoch is a timestamp as awsJson1.1 writes it.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

type consumerRequest struct {
	StreamARN    string `json:"StreamARN"`
	ConsumerName string `json:"ConsumerName"`
	ConsumerARN  string `json:"ConsumerARN"`
	MaxResults   int    `json:"MaxResults"`
	NextToken    string `json:"NextToken"`
}

func (s *Stub) consumerJSON(c *stubConsumer, withStream bool) map[string]any {
	m := map[string]any{"ConsumerName": c.name, "ConsumerARN": c.arn, "ConsumerStatus": c.status, "ConsumerCreationTimestamp": epoch(c.created)}
	if withStream {
		m["StreamARN"] = s.StreamARN
	}
	return m
}

// findConsumer looks a consumer up by ARN, or by stream ARN and name;
// s.mu is held.
func (s *Stub) findConsumer(req *consumerRequest) (int, string) {
	if req.ConsumerARN == "" && req.StreamARN != s.StreamARN {
		return -1, "stream " + req.StreamARN + " not found"
	}
	for i, c := range s.consumers {
		if (req.ConsumerARN != "" && c.arn == req.ConsumerARN) || (req.ConsumerARN == "" && c.name == req.ConsumerName) {
			return i, ""
		}
	}
	return -1, "consumer not found"
}

// consumerOr404 is findConsumer, answering ResourceNotFoundException when
// there is none.
func (s *Stub) consumerOr404(w http.ResponseWriter, req *consumerRequest) int {
	i, why := s.findConsumer(req)
	if i < 0 {
		writeError(w, "ResourceNotFoundException", why)
	}
	return i
}

// The consumer operations run with s.mu held.

func (s *Stub) register(w http.ResponseWriter, req *consumerRequest) {
	if req.StreamARN != s.StreamARN {
		writeError(w, "ResourceNotFoundException", "stream "+req.StreamARN+" not found")
		return
	}
	for _, c := range s.consumers {
		if c.name == req.ConsumerName {
			writeError(w, "ResourceInUseException", "consumer "+req.ConsumerName+" already exists")
			return
		}
	}
	if len(s.consumers) >= s.opts.MaxConsumers {
		writeError(w, "LimitExceededException", fmt.Sprintf("stream %s already has %d consumers", s.opts.Stream, len(s.consumers)))
		return
	}
	c := &stubConsumer{name: req.ConsumerName, created: time.Now(), status: types.ConsumerStatusCreating, polls: s.opts.CreatingPolls}
	c.arn = fmt.Sprintf("%s/consumer/%s:%d", s.StreamARN, c.name, c.created.Unix())
	if c.polls < 0 {
		c.status = types.ConsumerStatusActive
	}
	s.consumers = append(s.consumers, c)
	writeJSON(w, map[string]any{"Consumer": s.consumerJSON(c, false)})
}

func (s *Stub) describeConsumer(w http.ResponseWriter, req *consumerRequest) {
	i := s.consumerOr404(w, req)
	if i < 0 {
		return
	}
	c := s.consumers[i]
	out := s.consumerJSON(c, true)
	// The answer shows the state before this poll; the poll moves it on.
	switch c.polls--; {
	case c.status == types.ConsumerStatusCreating && c.polls <= 0:
		c.status = types.ConsumerStatusActive
	case c.status == types.ConsumerStatusDeleting && c.polls <= 0:
		s.consumers = append(s.consumers[:i], s.consumers[i+1:]...)
	}
	writeJSON(w, map[string]any{"ConsumerDescription": out})
}

func (s *Stub) listConsumers(w http.ResponseWriter, req *consumerRequest) {
	if req.StreamARN != s.StreamARN {
		writeError(w, "ResourceNotFoundException", "stream "+req.StreamARN+" not found")
		return
	}
	from := 0
	if req.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.NextToken, "page-"))
		if err != nil || n < 0 || n > len(s.consumers) {
			writeError(w, "InvalidArgumentException", "bad NextToken")
			return
		}
		from = n
	}
	size := s.opts.ListPageSize
	if req.MaxResults > 0 && req.MaxResults < size {
		size = req.MaxResults
	}
	to := min(from+size, len(s.consumers))
	list := []map[string]any{}
	for _, c := range s.consumers[from:to] {
		list = append(list, s.consumerJSON(c, false))
	}
	out := map[string]any{"Consumers": list}
	if to < len(s.consumers) {
		out["NextToken"] = fmt.Sprintf("page-%d", to)
	}
	writeJSON(w, out)
}

func (s *Stub) deregister(w http.ResponseWriter, req *consumerRequest) {
	i := s.consumerOr404(w, req)
	if i < 0 {
		return
	}
	c := s.consumers[i]
	if s.opts.DeletingPolls < 0 {
		s.consumers = append(s.consumers[:i], s.consumers[i+1:]...)
	} else {
		c.status, c.polls = types.ConsumerStatusDeleting, s.opts.DeletingPolls
	}
	writeJSON(w, map[string]any{})
}

func (s *Stub) describeStream(w http.ResponseWriter, body []byte) {
	var req struct{ StreamName, StreamARN string }
	_ = json.Unmarshal(body, &req)
	if req.StreamName != s.opts.Stream && req.StreamARN != s.StreamARN {
		writeError(w, "ResourceNotFoundException", "stream not found")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	open := 0
	for _, sh := range s.shards {
		if !sh.closed {
			open++
		}
	}
	writeJSON(w, map[string]any{"StreamDescriptionSummary": map[string]any{
		"StreamName": s.opts.Stream, "StreamARN": s.StreamARN, "StreamStatus": types.StreamStatusActive,
		"StreamModeDetails": map[string]any{"StreamMode": types.StreamModeProvisioned}, "RetentionPeriodHours": 24,
		"StreamCreationTimestamp": epoch(s.created), "EnhancedMonitoring": []any{}, "EncryptionType": types.EncryptionTypeNone,
		"OpenShardCount": open, "ConsumerCount": len(s.consumers),
	}})
}

// recordJSON is a stub record as the wire carries it.
func recordJSON(r *stubRecord) json.RawMessage {
	return wireRecordJSON(r.seq, r.key, r.data, r.arrival)
}

// wireRecordJSON is a record as the wire carries it.
func wireRecordJSON(seq, key string, data []byte, arrival time.Time) json.RawMessage {
	b, _ := json.Marshal(wireRecord{ApproximateArrivalTimestamp: epoch(arrival), Data: data, EncryptionType: "NONE",
		PartitionKey: key, SequenceNumber: seq})
	return b
}

// childJSON is a child shard as the wire carries it.
func childJSON(c types.ChildShard) wireChildShard {
	w := wireChildShard{ShardID: aws.ToString(c.ShardId), ParentShards: c.ParentShards}
	if c.HashKeyRange != nil {
		w.HashKeyRange = wireHashKeyRange{StartingHashKey: aws.ToString(c.HashKeyRange.StartingHashKey), EndingHashKey: aws.ToString(c.HashKeyRange.EndingHashKey)}
	}
	return w
}
