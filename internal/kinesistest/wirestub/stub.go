package wirestub

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Service limits the stub's pages follow (docs/KINESIS-NOTES.md §1).
const (
	MaxPageRecords = 10000    // GetRecords: at most 10,000 records
	MaxPageBytes   = 10 << 20 // and at most 10 MiB
	maxListPage    = 1000     // ListShards: MaxResults' maximum
)

// Forever as Options.Pages keeps every shard behind for ever.
const Forever = -1

// Options describe the stream the stub serves. The zero value is one shard,
// caught up (no records), named "bench".
type Options struct {
	Stream string // default "bench"
	Shards int    // open shards; default 1
	// RecordSize is each record's payload in bytes (default 1024).
	RecordSize int
	// RecordsPerPage is how many records a GetRecords page holds; 0 means
	// a full page: 10,000 records or as many as fit 10 MiB.
	RecordsPerPage int
	// Pages is how many full pages each shard serves before it is caught up
	// (MillisBehindLatest 0 and empty pages from then on); Forever keeps
	// every shard behind. 0: shards are caught up from the start.
	Pages int
	// Binary payloads are random bytes (not UTF-8: tail's json output
	// base64-encodes them); otherwise they are JSON-looking text lines.
	Binary bool
	// ListPageSize is the most shards one ListShards page holds (default
	// 1000); smaller pages exercise NextToken paging.
	ListPageSize int
	// Listen is the address to listen on; default 127.0.0.1:0.
	Listen string
}

func (o *Options) defaults() error {
	if o.Stream == "" {
		o.Stream = "bench"
	}
	if o.Shards == 0 {
		o.Shards = 1
	}
	if o.RecordSize == 0 {
		o.RecordSize = 1024
	}
	if o.ListPageSize <= 0 || o.ListPageSize > maxListPage {
		o.ListPageSize = maxListPage
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	switch {
	case o.Shards < 0 || o.Shards > 100000:
		return fmt.Errorf("wirestub: %d shards (want 1..100000)", o.Shards)
	case o.RecordSize < 1 || o.RecordSize > 1<<20:
		return fmt.Errorf("wirestub: record size %d (want 1..1 MiB)", o.RecordSize)
	case o.Pages < Forever:
		return fmt.Errorf("wirestub: pages %d", o.Pages)
	}
	if o.RecordsPerPage <= 0 {
		o.RecordsPerPage = FullPage(o.RecordSize)
	}
	if o.RecordsPerPage > MaxPageRecords {
		return fmt.Errorf("wirestub: %d records per page (at most %d)", o.RecordsPerPage, MaxPageRecords)
	}
	return nil
}

// FullPage is how many records of size bytes (with the stub's partition
// keys) fill one GetRecords page.
func FullPage(size int) int {
	return min(MaxPageRecords, MaxPageBytes/(size+keyLen))
}

// Stats count what the stub served.
type Stats struct {
	Calls          map[string]int64 // per operation
	RecordsServed  int64
	PayloadServed  int64 // payload + partition key bytes of the records served
	ResponseBytes  int64 // GetRecords response bodies
	BehindPages    int64 // GetRecords pages with records
	CaughtUpPages  int64 // empty GetRecords pages
	ConnsAccepted  int64
	MaxActiveConns int64
}

// Server is a running stub.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	opts Options
	arn  string

	page     page
	shards   [][]byte // ListShards JSON of each shard
	created  time.Time
	srv      *http.Server
	ln       net.Listener
	served   chan struct{}
	closeErr error

	calls                                    [numOps]atomic.Int64
	records, payload, body, behind, caughtUp atomic.Int64
	conns, active, maxActive                 atomic.Int64
}

// page is one encoded GetRecords page: the records' JSON joined by commas;
// ends[i] is where record i ends, so a Limit is a prefix.
type page struct {
	json    []byte
	ends    []int
	payload []int // cumulative payload+key bytes
	records []types.Record
}

// Start listens and serves until Close.
func Start(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Server{opts: o, created: time.Now().Truncate(time.Second), served: make(chan struct{})}
	s.arn = "arn:aws:kinesis:us-east-1:000000000000:stream/" + o.Stream
	s.page = buildPage(o, s.created)
	s.shards = buildShards(o.Shards)
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("wirestub: %w", err)
	}
	s.ln = ln
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         s.connState,
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = err
		}
	}()
	return s, nil
}

// Close stops the server and drops its connections.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.served
	return errors.Join(err, s.closeErr)
}

// Options returns the options in effect (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// PageRecords is the decoded form of one full page: what the SDK returns
// for a GetRecords call (for benchmarks of the code after the SDK).
func (s *Server) PageRecords() []types.Record { return s.page.records }

// PageBody is the body of a full GetRecords response (shard 0, behind).
func (s *Server) PageBody() []byte {
	b := append([]byte(recordsPrefix), s.page.json...)
	return fmt.Appendf(b, `],"MillisBehindLatest":60000,"NextShardIterator":"%s/0/1"}`, iterPrefix)
}

// PagePayload is one full page's payload plus partition key bytes.
func (s *Server) PagePayload() int { return s.page.payload[len(s.page.payload)-1] }

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	st := Stats{Calls: map[string]int64{}}
	for i, name := range opNames {
		if n := s.calls[i].Load(); n > 0 {
			st.Calls[name] = n
		}
	}
	st.RecordsServed = s.records.Load()
	st.PayloadServed = s.payload.Load()
	st.ResponseBytes = s.body.Load()
	st.BehindPages = s.behind.Load()
	st.CaughtUpPages = s.caughtUp.Load()
	st.ConnsAccepted = s.conns.Load()
	st.MaxActiveConns = s.maxActive.Load()
	return st
}

func (s *Server) connState(_ net.Conn, cs http.ConnState) {
	switch cs {
	case http.StateNew:
		s.conns.Add(1)
		n := s.active.Add(1)
		for {
			m := s.maxActive.Load()
			if n <= m || s.maxActive.CompareAndSwap(m, n) {
				break
			}
		}
	case http.StateClosed, http.StateHijacked:
		s.active.Add(-1)
	}
}

// Operations.
const (
	opDescribeStreamSummary = iota
	opListStreams
	opListShards
	opGetShardIterator
	opGetRecords
	opOther
	numOps
)

var opNames = [numOps]string{"DescribeStreamSummary", "ListStreams", "ListShards", "GetShardIterator", "GetRecords", "other"}

const targetPrefix = "Kinesis_20131202."

// request holds every input field the stub reads.
type request struct {
	StreamName        string
	StreamARN         string
	NextToken         string
	MaxResults        int
	ShardId           string
	ShardIteratorType string
	ShardIterator     string
	Limit             int
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.fail(w, http.StatusMethodNotAllowed, "SerializationException", "POST only")
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, targetPrefix)
	if !ok {
		s.fail(w, http.StatusBadRequest, "UnknownOperationException", "missing or foreign X-Amz-Target "+strconv.Quote(target))
		return
	}
	var in request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		s.fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	switch op {
	case "GetRecords":
		s.calls[opGetRecords].Add(1)
		s.getRecords(w, &in)
	case "GetShardIterator":
		s.calls[opGetShardIterator].Add(1)
		s.getShardIterator(w, &in)
	case "ListShards":
		s.calls[opListShards].Add(1)
		s.listShards(w, &in)
	case "DescribeStreamSummary":
		s.calls[opDescribeStreamSummary].Add(1)
		s.describe(w, &in)
	case "ListStreams":
		s.calls[opListStreams].Add(1)
		s.reply(w, fmt.Appendf(nil, `{"HasMoreStreams":false,"StreamNames":[%q],"StreamSummaries":[{"StreamName":%q,"StreamARN":%q,"StreamStatus":"ACTIVE","StreamModeDetails":{"StreamMode":"PROVISIONED"},"StreamCreationTimestamp":%d}]}`,
			s.opts.Stream, s.opts.Stream, s.arn, s.created.Unix()))
	default:
		s.calls[opOther].Add(1)
		s.fail(w, http.StatusBadRequest, "UnknownOperationException", "the bench stub does not serve "+op)
	}
}

func (s *Server) stream(in *request) bool {
	return in.StreamName == s.opts.Stream || in.StreamARN == s.arn
}

func (s *Server) notFound(w http.ResponseWriter, in *request) {
	s.fail(w, http.StatusBadRequest, "ResourceNotFoundException", fmt.Sprintf("Stream %s%s under account 000000000000 not found.", in.StreamName, in.StreamARN))
}

func (s *Server) describe(w http.ResponseWriter, in *request) {
	if !s.stream(in) {
		s.notFound(w, in)
		return
	}
	s.reply(w, fmt.Appendf(nil, `{"StreamDescriptionSummary":{"StreamName":%q,"StreamARN":%q,"StreamStatus":"ACTIVE","StreamModeDetails":{"StreamMode":"PROVISIONED"},"RetentionPeriodHours":24,"StreamCreationTimestamp":%d,"EnhancedMonitoring":[{"ShardLevelMetrics":[]}],"EncryptionType":"NONE","OpenShardCount":%d,"ConsumerCount":0}}`,
		s.opts.Stream, s.arn, s.created.Unix(), s.opts.Shards))
}

// listShards pages with NextToken "list/<offset>": as AWS requires, a later
// page carries the token alone.
func (s *Server) listShards(w http.ResponseWriter, in *request) {
	from := 0
	if in.NextToken != "" {
		if in.StreamName != "" || in.StreamARN != "" {
			s.fail(w, http.StatusBadRequest, "InvalidArgumentException", "NextToken and StreamName cannot be provided together.")
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "list/"))
		if err != nil || n < 0 || n > len(s.shards) {
			s.fail(w, http.StatusBadRequest, "InvalidArgumentException", "bad NextToken")
			return
		}
		from = n
	} else if !s.stream(in) {
		s.notFound(w, in)
		return
	}
	size := s.opts.ListPageSize
	if in.MaxResults > 0 {
		size = min(size, in.MaxResults)
	}
	to := min(from+size, len(s.shards))
	b := make([]byte, 0, 256*(to-from)+64)
	b = append(b, `{"Shards":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = append(b, s.shards[i]...)
	}
	b = append(b, ']')
	if to < len(s.shards) {
		b = fmt.Appendf(b, `,"NextToken":"list/%d"`, to)
	}
	b = append(b, '}')
	s.reply(w, b)
}

// Iterators are "<prefix>/<shard>/<page>".
const iterPrefix = "AAAAAAAAAAHwirestubiterator"

func (s *Server) getShardIterator(w http.ResponseWriter, in *request) {
	if !s.stream(in) {
		s.notFound(w, in)
		return
	}
	idx, ok := shardIndex(in.ShardId)
	if !ok || idx >= s.opts.Shards {
		s.fail(w, http.StatusBadRequest, "ResourceNotFoundException", fmt.Sprintf("Shard %s in stream %s under account 000000000000 does not exist", in.ShardId, s.opts.Stream))
		return
	}
	p := 0
	if in.ShardIteratorType == string(types.ShardIteratorTypeLatest) {
		p = s.caughtUpAt()
	}
	s.reply(w, fmt.Appendf(nil, `{"ShardIterator":"%s/%d/%d"}`, iterPrefix, idx, p))
}

// caughtUpAt is the first page number that is empty.
func (s *Server) caughtUpAt() int {
	if s.opts.Pages == Forever {
		return 0
	}
	return s.opts.Pages
}

func shardIndex(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, "shardId-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil && i >= 0
}

const recordsPrefix = `{"Records":[`

func (s *Server) getRecords(w http.ResponseWriter, in *request) {
	rest, ok := strings.CutPrefix(in.ShardIterator, iterPrefix+"/")
	shardStr, pageStr, ok2 := strings.Cut(rest, "/")
	shard, err1 := strconv.Atoi(shardStr)
	pg, err2 := strconv.Atoi(pageStr)
	if !ok || !ok2 || err1 != nil || err2 != nil || shard < 0 || shard >= s.opts.Shards || pg < 0 {
		s.fail(w, http.StatusBadRequest, "InvalidArgumentException", "Invalid ShardIterator.")
		return
	}
	behind := s.opts.Pages == Forever || pg < s.opts.Pages
	next := pg + 1
	if s.opts.Pages == Forever {
		next = 0 // keeps the iterator short; every page is the same
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amzn-Requestid", "wirestub")
	if !behind {
		s.caughtUp.Add(1)
		b := fmt.Appendf(nil, `{"Records":[],"MillisBehindLatest":0,"NextShardIterator":"%s/%d/%d"}`, iterPrefix, shard, pg)
		h.Set("Content-Length", strconv.Itoa(len(b)))
		s.body.Add(int64(len(b)))
		_, _ = w.Write(b)
		return
	}
	n := len(s.page.ends)
	if in.Limit > 0 && in.Limit < n {
		n = in.Limit
	}
	recs := s.page.json[:s.page.ends[n-1]]
	tail := fmt.Appendf(nil, `],"MillisBehindLatest":60000,"NextShardIterator":"%s/%d/%d"}`, iterPrefix, shard, next)
	total := len(recordsPrefix) + len(recs) + len(tail)
	h.Set("Content-Length", strconv.Itoa(total))
	s.behind.Add(1)
	s.records.Add(int64(n))
	s.payload.Add(int64(s.page.payload[n-1]))
	s.body.Add(int64(total))
	if _, err := w.Write([]byte(recordsPrefix)); err != nil {
		return
	}
	if _, err := w.Write(recs); err != nil {
		return
	}
	_, _ = w.Write(tail)
}

func (s *Server) reply(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amzn-Requestid", "wirestub")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func (s *Server) fail(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// KeyLen is the length of every partition key ("pk-" and 6 digits).
const KeyLen = 9

const keyLen = KeyLen

// seqBase makes 56-digit sequence numbers like the service's.
const seqBase = "4965481234567890123456789012345678901234567890"

// buildPage encodes one full page once. Text payloads are JSON-looking
// lines (with quotes, which tail's json output escapes), varied per record.
func buildPage(o Options, at time.Time) page {
	rng := rand.New(rand.NewPCG(1, uint64(o.RecordSize)))
	p := page{ends: make([]int, o.RecordsPerPage), payload: make([]int, o.RecordsPerPage), records: make([]types.Record, o.RecordsPerPage)}
	est := o.RecordsPerPage * (base64.StdEncoding.EncodedLen(o.RecordSize) + 140)
	b := make([]byte, 0, est)
	payloadSum := 0
	for i := range o.RecordsPerPage {
		data := payload(rng, i, o.RecordSize, o.Binary)
		key := fmt.Sprintf("pk-%06d", i%1000000)
		seq := fmt.Sprintf("%s%010d", seqBase, i)
		ts := at.Add(time.Duration(i) * time.Millisecond)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"SequenceNumber":"`...)
		b = append(b, seq...)
		b = append(b, `","ApproximateArrivalTimestamp":`...)
		b = strconv.AppendFloat(b, float64(ts.UnixMilli())/1000, 'f', 3, 64)
		b = append(b, `,"Data":"`...)
		b = base64.StdEncoding.AppendEncode(b, data)
		b = append(b, `","PartitionKey":"`...)
		b = append(b, key...)
		b = append(b, `"}`...)
		p.ends[i] = len(b)
		payloadSum += len(data) + len(key)
		p.payload[i] = payloadSum
		p.records[i] = types.Record{
			Data: data, PartitionKey: aws.String(key), SequenceNumber: aws.String(seq),
			ApproximateArrivalTimestamp: aws.Time(time.UnixMilli(ts.UnixMilli())),
		}
	}
	p.json = b
	return p
}

const filler = "the quick brown fox jumps over the lazy dog 0123456789 "

// TextPayload is the i-th text payload of size bytes a page of this stub
// holds, for other servers that must serve the same records (the bench's
// enhanced fan-out runs).
func TextPayload(i, size int) []byte {
	return payload(rand.New(rand.NewPCG(1, uint64(i))), i, size, false)
}

func payload(rng *rand.Rand, i, size int, binary bool) []byte {
	b := make([]byte, size)
	if binary {
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		b[0] = 0xff // never valid UTF-8
		return b
	}
	head := fmt.Appendf(nil, `{"n":%d,"user":"u-%04d","msg":"`, i, rng.IntN(10000))
	tail := []byte(`"}`)
	if len(head)+len(tail) > size {
		for j := range b {
			b[j] = filler[(i+j)%len(filler)]
		}
		return b
	}
	copy(b, head)
	off := rng.IntN(len(filler))
	for j := len(head); j < size-len(tail); j++ {
		b[j] = filler[(off+j)%len(filler)]
	}
	copy(b[size-len(tail):], tail)
	return b
}

// buildShards lists n open shards with the even layout of CreateStream.
func buildShards(n int) [][]byte {
	space := new(big.Int).Lsh(big.NewInt(1), 128)
	step := new(big.Int).Div(space, big.NewInt(int64(n)))
	last := new(big.Int).Sub(space, big.NewInt(1))
	out := make([][]byte, n)
	for i := range n {
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := last
		if i < n-1 {
			end = new(big.Int).Sub(new(big.Int).Add(start, step), big.NewInt(1))
		}
		out[i] = fmt.Appendf(nil, `{"ShardId":"shardId-%012d","HashKeyRange":{"StartingHashKey":"%s","EndingHashKey":"%s"},"SequenceNumberRange":{"StartingSequenceNumber":"%s%010d"}}`,
			i, start, end, seqBase, 0)
	}
	return out
}
