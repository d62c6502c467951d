package hotstub

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// The service's read limits the stub enforces by default.
const (
	CallsPerSecond     = 5
	ReadBytesPerSecond = 2 << 20
	MaxPageRecords     = 10000
	MaxPageBytes       = 10 << 20
	ThrottlePenalty    = time.Second
)

// Options describe the stream and the limits. The zero value is one shard
// written at 1,000 records of 1,000 bytes a second, under AWS's limits.
type Options struct {
	Stream string // default "hot"
	Shards int    // open shards in the even layout; default 1
	// Start is when the first record of every shard arrived; zero: an hour
	// before Now at Start.
	Start time.Time
	// Rate is each shard's records per second (index = shard number);
	// shards beyond the slice, and zero entries, get 1,000.
	Rate []float64
	// RecordSize is each record's data in bytes; default 1,000.
	RecordSize int
	// Key gives record i of a shard its partition key; default: a cycle of
	// 1,000 keys that hash into the shard (KeysIn).
	Key func(shard, i int) string
	// Now is the stub's clock; default time.Now.
	Now func() time.Time
	// Limits; 0 means AWS's value, a negative one switches it off.
	CallsPerSecond     int           // GetRecords (and, apart, GetShardIterator) calls per second per shard
	ReadBytesPerSecond int           // after a response of B bytes, refuse calls for B / this
	ThrottlePenalty    time.Duration // a throttled call refuses calls for this long
	Listen             string        // default 127.0.0.1:0
}

// ShardStats count what one shard served.
type ShardStats struct {
	GetRecords, Throttled      int   // calls, and those refused
	Iterators, IteratorsDenied int   // GetShardIterator calls, and those refused
	Records, Bytes             int64 // served (bytes: data + partition keys)
	MaxResponseBytes           int   // the largest response, in record bytes
	Limits                     []int // the Limit of each GetRecords call admitted (0: none)
}

// Server is a running stub.
type Server struct {
	URL     string
	opts    Options
	arn     string
	ranges  []lineage.HashRange
	keys    [][]string // default keys per shard
	period  []time.Duration
	data    []byte
	created time.Time
	srv     *http.Server
	served  chan struct{}

	mu     sync.Mutex
	shards []*shardState
}

type shardState struct {
	calls, iterCalls []time.Time // admitted or not, within the last second
	blockedUntil     time.Time
	stats            ShardStats
}

// Start listens on loopback and serves until Close.
func Start(o Options) (*Server, error) {
	if o.Stream == "" {
		o.Stream = "hot"
	}
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.RecordSize <= 0 {
		o.RecordSize = 1000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Start.IsZero() {
		o.Start = o.Now().Add(-time.Hour)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	o.CallsPerSecond = orDefault(o.CallsPerSecond, CallsPerSecond)
	o.ReadBytesPerSecond = orDefault(o.ReadBytesPerSecond, ReadBytesPerSecond)
	if o.ThrottlePenalty == 0 {
		o.ThrottlePenalty = ThrottlePenalty
	}
	ranges, err := lineage.EvenLayout(o.Shards)
	if err != nil {
		return nil, fmt.Errorf("hotstub: %w", err)
	}
	s := &Server{opts: o, ranges: ranges, created: o.Start.Add(-time.Minute).Truncate(time.Second), served: make(chan struct{})}
	s.arn = "arn:aws:kinesis:us-east-1:000000000000:stream/" + o.Stream
	s.data = []byte(strings.Repeat("x", o.RecordSize))
	for i := range o.Shards {
		rate := 1000.0
		if i < len(o.Rate) && o.Rate[i] > 0 {
			rate = o.Rate[i]
		}
		s.period = append(s.period, time.Duration(float64(time.Second)/rate))
		s.shards = append(s.shards, &shardState{})
		if o.Key == nil {
			s.keys = append(s.keys, KeysIn(ranges[i], 1000))
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("hotstub: %w", err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// KeysIn returns n partition keys ("k-0", "k-1", … skipping those that
// hash elsewhere) whose hash lies in r.
func KeysIn(r lineage.HashRange, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := "k-" + strconv.Itoa(i)
		if r.Contains(lineage.PartitionKeyHash(k)) {
			out = append(out, k)
		}
	}
	return out
}

// Close stops the server.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.served
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Range is the hash range of shard i.
func (s *Server) Range(i int) lineage.HashRange { return s.ranges[i] }

// Arrival is when record i of a shard arrived.
func (s *Server) Arrival(shard, i int) time.Time {
	return s.opts.Start.Add(time.Duration(i) * s.period[shard])
}

// Key is the partition key of record i of a shard.
func (s *Server) Key(shard, i int) string {
	if s.opts.Key != nil {
		return s.opts.Key(shard, i)
	}
	ks := s.keys[shard]
	return ks[i%len(ks)]
}

// RecordsBetween is how many records of a shard arrived in [from, until).
func (s *Server) RecordsBetween(shard int, from, until time.Time) int {
	return s.firstAt(shard, until) - s.firstAt(shard, from)
}

// Block refuses GetRecords on a shard until t, as after another
// consumer's 10 MiB read.
func (s *Server) Block(shard int, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards[shard].blockedUntil = t
}

// Stats returns each shard's counters.
func (s *Server) Stats() []ShardStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ShardStats, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.stats
		out[i].Limits = append([]int(nil), sh.stats.Limits...)
	}
	return out
}

// firstAt is the index of the first record of shard that arrives at or
// after t.
func (s *Server) firstAt(shard int, t time.Time) int {
	d := t.Sub(s.opts.Start)
	if d <= 0 {
		return 0
	}
	p := s.period[shard]
	return int((d + p - 1) / p)
}

// arrived is how many records of shard have arrived by now.
func (s *Server) arrived(shard int, now time.Time) int {
	if now.Before(s.opts.Start) {
		return 0
	}
	return int(now.Sub(s.opts.Start)/s.period[shard]) + 1
}

const seqBase = "49654812345678901234567890123456789012345678"

func seqOf(shard, i int) string { return fmt.Sprintf("%s%02d%012d", seqBase, shard, i) }

func parseSeq(seq string) (shard, i int, ok bool) {
	rest, found := strings.CutPrefix(seq, seqBase)
	if !found || len(rest) != 14 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(rest[:2])
	b, err2 := strconv.Atoi(rest[2:])
	return a, b, err1 == nil && err2 == nil
}
