package fake

import (
	"context"
	"crypto/md5"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Fake is the in-memory service. Its zero value is not usable: use New.
type Fake struct {
	mu      sync.Mutex
	streams map[string]*Stream

	// PageSize caps ListShards pages (kinesis-mock: 100). 0 = 1000.
	PageSize int
	// KinesaliteEnd: a closed shard's last records come with a non-nil
	// iterator, then an empty page with a nil iterator and no ChildShards.
	KinesaliteEnd bool
	// NoChildShards drops ChildShards from end-of-shard responses.
	NoChildShards bool
	// NeverEnd: a closed shard's GetRecords never says it ended (no nil
	// iterator, no ChildShards), as moto answers.
	NeverEnd bool
	// Hook runs before every call (op is the operation name, in its input);
	// a non-nil error is returned instead of the call's result.
	Hook func(op string, in any) error
	// Now is the clock for arrival times; nil = time.Now.
	Now func() time.Time
	// ShardLimit is the account's shard quota DescribeLimits reports (its
	// OpenShardCount counts the open shards of every stream); 0 = 500.
	// CreateStream enforces it; SplitShard does not.
	ShardLimit int
	// Quotas turns on the service's per-shard quotas: 5 GetRecords calls
	// and 2 MiB a second of reads (after an answer of B bytes the shard
	// refuses reads for B / 2 MiB/s), 1,000 records and 1 MiB a second of
	// writes; what goes over them is throttled as the service throttles.
	// Iterators then also expire after five minutes. Off (the zero value):
	// every call is served, as the engines' tests expect.
	Quotas bool
	// StateDelay is how long a stream stays CREATING after CreateStream,
	// UPDATING after a reshard and DELETING after DeleteStream (0: every
	// change is instant).
	StateDelay time.Duration
	// Faults, when set, answers a share of the calls with faults instead
	// of serving them (ParseFaults).
	Faults *Faults
	// Retention is the retention period of the streams created from now
	// on (0: 24 hours, what the service gives every new stream). Records
	// older than their stream's period, by Now, are trimmed.
	Retention time.Duration
	// MaxBytes bounds the records kept (data and keys, every stream
	// together): over it, the oldest records of the service are trimmed
	// first, as if they had aged out. 0: no bound.
	MaxBytes int64
	// OnMaxBytes, when set, is called the first time MaxBytes trims, under
	// the fake's lock (it must not call the fake).
	OnMaxBytes func()

	calls    map[string]int
	getCalls map[string][]time.Time // GetRecords attempts per shard
	// subscribed: the open subscriptions, by consumer ARN and shard.
	subscribed map[string]bool

	stored      int64 // bytes of the records kept (see trimToSize)
	maxBytesHit bool
}

// Stream is one fake stream. Fields are read under the Fake's lock.
type Stream struct {
	Name    string
	ARN     string
	Created time.Time
	Status  types.StreamStatus
	Mode    types.StreamMode // "" is PROVISIONED
	shards  []*Shard
	nextID  int
	nextSeq *big.Int
	// settleAt: when a CREATING, UPDATING or DELETING status ends
	// (StateDelay; zero: none pending).
	settleAt  time.Time
	consumers map[string]*consumer // by name
	keeping
}

// Shard is one fake shard.
type Shard struct {
	ID       string
	Parent   string
	Adjacent string
	Start    *big.Int
	End      *big.Int
	Closed   bool
	Trimmed  bool  // gone from listings (retention)
	Records  []Rec // the records kept: retention and MaxBytes trim the oldest
	startSeq string
	endSeq   string
	quota    shardQuota // with Fake.Quotas
	trimState
}

// Rec is one stored record.
type Rec struct {
	Seq          string
	PartitionKey string
	Data         []byte
	Arrival      time.Time
}

var maxKey = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// New returns an empty service.
func New() *Fake {
	return &Fake{streams: map[string]*Stream{}, calls: map[string]int{}, getCalls: map[string][]time.Time{}}
}

func (f *Fake) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// call counts and runs the hook.
func (f *Fake) call(op string, in any) error {
	f.mu.Lock()
	f.calls[op]++
	hook, faults := f.Hook, f.Faults
	f.mu.Unlock()
	if err := faults.fault(op); err != nil {
		return err
	}
	if hook != nil {
		return hook(op, in)
	}
	return nil
}

// Calls returns how often op was called.
func (f *Fake) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// GetRecordsTimes returns the times of GetRecords attempts per shard.
func (f *Fake) GetRecordsTimes() map[string][]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]time.Time{}
	for k, v := range f.getCalls {
		out[k] = slices.Clone(v)
	}
	return out
}

// AddStream creates an ACTIVE stream with n shards in AWS's even layout.
func (f *Fake) AddStream(name string, n int) *Stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addStream(name, n, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
}

// firstSeq is where a stream's sequence numbers start: 56 digits, as the
// service's look (they only grow within a stream, and are compared as
// numbers; readers must treat them as opaque).
func firstSeq() *big.Int {
	n, _ := new(big.Int).SetString("49590338271490256608559692538361571095921575989136588800", 10)
	return n
}

// addStream creates the stream; called under the lock.
func (f *Fake) addStream(name string, n int, created time.Time) *Stream {
	s := &Stream{Name: name, ARN: "arn:aws:kinesis:us-east-1:123456789012:stream/" + name,
		Created: created, Status: types.StreamStatusActive,
		nextSeq: firstSeq()}
	s.retention = f.newRetention()
	step := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(int64(n)))
	for i := range n {
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := new(big.Int).Sub(new(big.Int).Mul(step, big.NewInt(int64(i+1))), big.NewInt(1))
		if i == n-1 {
			end = new(big.Int).Set(maxKey)
		}
		s.addShard("", "", start, end)
	}
	f.streams[name] = s
	return s
}

func (s *Stream) addShard(parent, adjacent string, start, end *big.Int) *Shard {
	sh := &Shard{ID: fmt.Sprintf("shardId-%012d", s.nextID), Parent: parent, Adjacent: adjacent, Start: start, End: end,
		startSeq: s.seq()}
	s.nextID++
	s.shards = append(s.shards, sh)
	return sh
}

func (s *Stream) seq() string {
	s.nextSeq.Add(s.nextSeq, big.NewInt(1))
	return s.nextSeq.String()
}

func (s *Stream) shard(id string) *Shard {
	for _, sh := range s.shards {
		if sh.ID == id {
			return sh
		}
	}
	return nil
}

func (f *Fake) stream(name, arn *string) (*Stream, error) {
	n := aws.ToString(name)
	if n == "" && arn != nil {
		n = (*arn)[strings.LastIndex(*arn, "/")+1:]
	}
	s := f.streams[n]
	if s == nil || !f.settle(s) {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Stream " + n + " under account 123456789012 not found.")}
	}
	f.trimAged(s)
	return s, nil
}

// Stream returns a stream by name (nil if none).
func (f *Fake) Stream(name string) *Stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams[name]
}

// HashOf is the hash of a partition key as a big integer.
func HashOf(pk string) *big.Int {
	d := md5.Sum([]byte(pk))
	return new(big.Int).SetBytes(d[:])
}

// Put stores a record on the open shard that owns its key's hash.
func (f *Fake) Put(stream, pk string, data []byte) (shardID, seq string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.put(f.streams[stream], pk, data, HashOf(pk))
}

func (f *Fake) put(s *Stream, pk string, data []byte, h *big.Int) (string, string) {
	for _, sh := range s.shards {
		if !sh.Closed && !sh.Trimmed && sh.Start.Cmp(h) <= 0 && h.Cmp(sh.End) <= 0 {
			seq := s.seq()
			sh.Records = append(sh.Records, Rec{Seq: seq, PartitionKey: pk, Data: slices.Clone(data), Arrival: f.now()})
			f.storedRecord(s, sh.Records[len(sh.Records)-1])
			return sh.ID, seq
		}
	}
	panic("fake: no open shard holds hash " + h.String())
}

// Split closes a shard and opens two children at key k.
func (f *Fake) Split(stream, shard string, k *big.Int) (lower, upper string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[stream]
	p := s.shard(shard)
	if p == nil || p.Closed {
		panic("fake: split of a missing or closed shard " + shard)
	}
	p.Closed, p.endSeq = true, s.seq()
	a := s.addShard(p.ID, "", p.Start, new(big.Int).Sub(k, big.NewInt(1)))
	b := s.addShard(p.ID, "", k, p.End)
	s.noteClosed(f.now())
	return a.ID, b.ID
}

// SplitHalf splits a shard at the exact half of its range.
func (f *Fake) SplitHalf(stream, shard string) (lower, upper string) {
	f.mu.Lock()
	p := f.streams[stream].shard(shard)
	w := new(big.Int).Add(new(big.Int).Sub(p.End, p.Start), big.NewInt(1))
	k := new(big.Int).Add(p.Start, new(big.Int).Rsh(w, 1))
	f.mu.Unlock()
	return f.Split(stream, shard, k)
}

// Merge closes two adjacent open shards (lower first) and opens their child.
func (f *Fake) Merge(stream, lower, upper string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[stream]
	a, b := s.shard(lower), s.shard(upper)
	if a == nil || b == nil || a.Closed || b.Closed || new(big.Int).Add(a.End, big.NewInt(1)).Cmp(b.Start) != 0 {
		panic("fake: bad merge " + lower + " + " + upper)
	}
	a.Closed, a.endSeq = true, s.seq()
	b.Closed, b.endSeq = true, s.seq()
	c := s.addShard(a.ID, b.ID, a.Start, b.End)
	s.noteClosed(f.now())
	return c.ID
}

// Trim removes a closed shard from listings, as retention does.
func (f *Fake) Trim(stream, shard string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[stream].shard(shard).Trimmed = true
}

// OpenShards lists the open shards' ids, by range.
func (f *Fake) OpenShards(stream string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Shard
	for _, sh := range f.streams[stream].shards {
		if !sh.Closed {
			out = append(out, sh)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Cmp(out[j].Start) < 0 })
	ids := make([]string, len(out))
	for i, sh := range out {
		ids[i] = sh.ID
	}
	return ids
}

// ShardRecords returns a copy of a shard's records.
func (f *Fake) ShardRecords(stream, shard string) []Rec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.streams[stream].shard(shard).Records)
}

func (sh *Shard) toType() types.Shard {
	t := types.Shard{
		ShardId:             aws.String(sh.ID),
		HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(sh.Start.String()), EndingHashKey: aws.String(sh.End.String())},
		SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String(sh.startSeq)},
	}
	if sh.Parent != "" {
		t.ParentShardId = aws.String(sh.Parent)
	}
	if sh.Adjacent != "" {
		t.AdjacentParentShardId = aws.String(sh.Adjacent)
	}
	if sh.Closed {
		t.SequenceNumberRange.EndingSequenceNumber = aws.String(sh.endSeq)
	}
	return t
}

// openCount is how many of the stream's shards are open.
func (s *Stream) openCount() int {
	n := 0
	for _, sh := range s.shards {
		if !sh.Closed {
			n++
		}
	}
	return n
}

// DescribeStreamSummary implements the SDK call.
func (f *Fake) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	if err := f.call("DescribeStreamSummary", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.stream(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	return &kinesis.DescribeStreamSummaryOutput{StreamDescriptionSummary: &types.StreamDescriptionSummary{
		StreamName: aws.String(s.Name), StreamARN: aws.String(s.ARN), StreamStatus: s.Status,
		StreamCreationTimestamp: aws.Time(s.Created), OpenShardCount: aws.Int32(int32(s.openCount())), RetentionPeriodHours: aws.Int32(s.retentionHours()),
		StreamModeDetails: &types.StreamModeDetails{StreamMode: s.mode()},
	}}, nil
}

// DescribeLimits implements the SDK call: the quota is ShardLimit, the
// open count is that of every stream.
func (f *Fake) DescribeLimits(ctx context.Context, in *kinesis.DescribeLimitsInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeLimitsOutput, error) {
	if err := f.call("DescribeLimits", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &kinesis.DescribeLimitsOutput{ShardLimit: aws.Int32(int32(f.shardLimit())), OpenShardCount: aws.Int32(int32(f.openTotal())),
		OnDemandStreamCount: aws.Int32(0), OnDemandStreamCountLimit: aws.Int32(50)}, nil
}

// ListShards implements the SDK call with AWS's paging rules: a NextToken
// beside any stream or filter field is an InvalidArgumentException.
func (f *Fake) ListShards(ctx context.Context, in *kinesis.ListShardsInput, _ ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	if err := f.call("ListShards", in); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var (
		s      *Stream
		offset int
		err    error
	)
	filter := in.ShardFilter
	if in.NextToken != nil {
		if in.StreamName != nil || in.StreamARN != nil || in.ShardFilter != nil || in.ExclusiveStartShardId != nil || in.StreamCreationTimestamp != nil {
			return nil, &types.InvalidArgumentException{Message: aws.String("NextToken and StreamName cannot be provided together.")}
		}
		var ok bool
		if s, offset, filter, ok = f.parseListToken(*in.NextToken); !ok {
			return nil, &types.InvalidArgumentException{Message: aws.String("Invalid NextToken.")}
		}
		if s == nil {
			return nil, &types.ResourceNotFoundException{Message: aws.String("stream gone")}
		}
	} else if s, err = f.stream(in.StreamName, in.StreamARN); err != nil {
		return nil, err
	}
	keep, err := s.shardFilter(filter, in.ExclusiveStartShardId)
	if err != nil {
		return nil, err
	}
	page := 1000
	if f.PageSize > 0 {
		page = f.PageSize
	}
	if in.MaxResults != nil && int(*in.MaxResults) < page {
		page = int(*in.MaxResults)
	}
	// The token's offset counts every shard, listed or trimmed, so that a
	// shard retention takes out between two pages moves no other one.
	out := &kinesis.ListShardsOutput{}
	for i := offset; i < len(s.shards); i++ {
		if s.shards[i].Trimmed || !keep(s.shards[i]) {
			continue
		}
		if len(out.Shards) == page {
			out.NextToken = aws.String(listToken(s.Name, i, filter))
			break
		}
		out.Shards = append(out.Shards, s.shards[i].toType())
	}
	return out, nil
}

// Iterators are "it|stream|shard|index|pending-end|issued" (issued in Unix
// milliseconds, for their expiry).
func (f *Fake) iterator(stream, shard string, idx int, pendingEnd bool) *string {
	return aws.String(fmt.Sprintf("it|%s|%s|%d|%t|%d", stream, shard, idx, pendingEnd, f.now().UnixMilli()))
}

// GetShardIterator implements the SDK call.
func (f *Fake) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	if err := f.call("GetShardIterator", in); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.stream(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	sh := s.shard(aws.ToString(in.ShardId))
	if sh == nil || sh.Trimmed {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Shard " + aws.ToString(in.ShardId) + " not found.")}
	}
	idx, err := sh.startIndex(in.ShardIteratorType, aws.ToString(in.StartingSequenceNumber), aws.ToTime(in.Timestamp))
	if err != nil {
		return nil, err
	}
	return &kinesis.GetShardIteratorOutput{ShardIterator: f.iterator(s.Name, sh.ID, idx, false)}, nil
}

// startIndex is the index of the first record a reader starting at this
// position gets (GetShardIterator's rules; SubscribeToShard's are the same).
func (sh *Shard) startIndex(typ types.ShardIteratorType, seq string, ts time.Time) (int, error) {
	switch typ {
	case types.ShardIteratorTypeTrimHorizon:
		return sh.gone, nil
	case types.ShardIteratorTypeLatest:
		return sh.gone + len(sh.Records), nil
	case types.ShardIteratorTypeAtTimestamp:
		for i, r := range sh.Records {
			if !r.Arrival.Before(ts) {
				return sh.gone + i, nil
			}
		}
		return sh.gone + len(sh.Records), nil
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		found := -1
		for i, r := range sh.Records {
			if r.Seq == seq {
				found = i
			}
		}
		if found < 0 && sh.trimmedSeq(seq) {
			return sh.gone, nil // trimmed: the service reads on from the oldest record kept
		}
		if found < 0 {
			return 0, &types.InvalidArgumentException{Message: aws.String("Invalid StartingSequenceNumber. It encodes another shard or stream.")}
		}
		if typ == types.ShardIteratorTypeAfterSequenceNumber {
			found++
		}
		return sh.gone + found, nil
	}
	return 0, &types.InvalidArgumentException{Message: aws.String("bad iterator type")}
}

// GetRecords implements the SDK call.
func (f *Fake) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	parts := strings.Split(aws.ToString(in.ShardIterator), "|")
	if len(parts) == 6 {
		f.mu.Lock()
		f.getCalls[parts[2]] = append(f.getCalls[parts[2]], time.Now())
		f.mu.Unlock()
	}
	if err := f.call("GetRecords", in); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(parts) != 6 || parts[0] != "it" {
		return nil, &types.InvalidArgumentException{Message: aws.String("bad iterator")}
	}
	issued, err := strconv.ParseInt(parts[5], 10, 64)
	if err != nil {
		return nil, &types.InvalidArgumentException{Message: aws.String("bad iterator")}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[parts[1]]
	if s == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("stream gone")}
	}
	f.trimAged(s)
	sh := s.shard(parts[2])
	if sh == nil || sh.Trimmed {
		return nil, &types.ResourceNotFoundException{Message: aws.String("shard gone")}
	}
	if f.Quotas {
		if err := f.readQuota(s, sh, time.UnixMilli(issued)); err != nil {
			return nil, err
		}
	}
	// The iterator counts trimmed records too; one whose position has been
	// trimmed since reads on from the oldest record kept, as on the service.
	idx, _ := strconv.Atoi(parts[3])
	idx, base := max(idx-sh.gone, 0), sh.gone
	pendingEnd := parts[4] == "true"
	limit := 10000
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	end := min(idx+limit, len(sh.Records))
	out := &kinesis.GetRecordsOutput{}
	for _, r := range sh.Records[idx:end] {
		out.Records = append(out.Records, types.Record{SequenceNumber: aws.String(r.Seq), PartitionKey: aws.String(r.PartitionKey),
			Data: slices.Clone(r.Data), ApproximateArrivalTimestamp: aws.Time(r.Arrival)})
	}
	// How far the answer is from the stream's tip: the age of the first
	// record it leaves unread, at least 1 ms while any is left.
	behind := int64(0)
	if end < len(sh.Records) {
		behind = max(1, f.now().Sub(sh.Records[end].Arrival).Milliseconds())
	}
	out.MillisBehindLatest = aws.Int64(behind)
	atEnd := sh.Closed && end == len(sh.Records) && !f.NeverEnd
	switch {
	case atEnd && f.KinesaliteEnd && !pendingEnd && len(out.Records) > 0:
		out.NextShardIterator = f.iterator(s.Name, sh.ID, base+end, true)
	case atEnd:
		if !f.NoChildShards && !f.KinesaliteEnd {
			out.ChildShards = s.children(sh.ID)
		}
	default:
		out.NextShardIterator = f.iterator(s.Name, sh.ID, base+end, false)
	}
	if f.Quotas {
		f.readAnswered(sh, out.Records)
	}
	return out, nil
}

func (s *Stream) children(id string) []types.ChildShard {
	var out []types.ChildShard
	for _, c := range s.shards {
		if c.Parent == id || c.Adjacent == id {
			parents := []string{c.Parent}
			if c.Adjacent != "" {
				parents = append(parents, c.Adjacent)
			}
			out = append(out, types.ChildShard{ShardId: aws.String(c.ID), ParentShards: parents,
				HashKeyRange: &types.HashKeyRange{StartingHashKey: aws.String(c.Start.String()), EndingHashKey: aws.String(c.End.String())}})
		}
	}
	return out
}

// PutRecords implements the SDK call (every entry succeeds unless Hook
// says otherwise for the whole call), with the service's limits: 1 to 500
// entries, 5 MiB in all, keys of 1 to 256 characters, records of at most
// 1 MiB, explicit hash keys in range.
func (f *Fake) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	if err := f.call("PutRecords", in); err != nil {
		return nil, err
	}
	hashes, err := checkPutRecords(in)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.writable(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	out := &kinesis.PutRecordsOutput{FailedRecordCount: aws.Int32(0)}
	for i, e := range in.Records {
		if f.Quotas {
			if err := f.writeQuota(s, hashes[i], len(e.Data)+len(aws.ToString(e.PartitionKey))); err != nil {
				out.FailedRecordCount = aws.Int32(aws.ToInt32(out.FailedRecordCount) + 1)
				out.Records = append(out.Records, types.PutRecordsResultEntry{ErrorCode: aws.String(err.ErrorCode()), ErrorMessage: aws.String(err.ErrorMessage())})
				continue
			}
		}
		id, seq := f.put(s, aws.ToString(e.PartitionKey), e.Data, hashes[i])
		out.Records = append(out.Records, types.PutRecordsResultEntry{ShardId: aws.String(id), SequenceNumber: aws.String(seq)})
	}
	return out, nil
}
