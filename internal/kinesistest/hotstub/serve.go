package hotstub

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

const targetPrefix = "Kinesis_20131202."

// request holds every input field the stub reads.
type request struct {
	StreamName             string
	StreamARN              string
	ShardId                string
	ShardIteratorType      string
	StartingSequenceNumber string
	Timestamp              float64
	ShardIterator          string
	Limit                  *int
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if r.Method != http.MethodPost || !ok {
		fail(w, "UnknownOperationException", "POST with an X-Amz-Target of Kinesis_20131202 only")
		return
	}
	var in request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		fail(w, "SerializationException", err.Error())
		return
	}
	if op != "GetRecords" && in.StreamName != s.opts.Stream && in.StreamARN != s.arn {
		fail(w, "ResourceNotFoundException", fmt.Sprintf("Stream %s%s under account 000000000000 not found.", in.StreamName, in.StreamARN))
		return
	}
	switch op {
	case "GetRecords":
		s.getRecords(w, &in)
	case "GetShardIterator":
		s.getShardIterator(w, &in)
	case "ListShards":
		s.listShards(w)
	case "DescribeStreamSummary":
		reply(w, map[string]any{"StreamDescriptionSummary": map[string]any{
			"StreamName": s.opts.Stream, "StreamARN": s.arn, "StreamStatus": "ACTIVE",
			"StreamModeDetails": map[string]string{"StreamMode": "PROVISIONED"}, "RetentionPeriodHours": 24,
			"StreamCreationTimestamp": s.created.Unix(), "EnhancedMonitoring": []any{}, "OpenShardCount": s.opts.Shards,
		}})
	default:
		fail(w, "UnknownOperationException", "the hot-shard stub does not serve "+op)
	}
}

func (s *Server) listShards(w http.ResponseWriter) {
	shards := make([]map[string]any, len(s.ranges))
	for i, r := range s.ranges {
		shards[i] = map[string]any{
			"ShardId":             fmt.Sprintf("shardId-%012d", i),
			"HashKeyRange":        map[string]string{"StartingHashKey": r.Start.String(), "EndingHashKey": r.End.String()},
			"SequenceNumberRange": map[string]string{"StartingSequenceNumber": seqOf(i, 0)},
		}
	}
	reply(w, map[string]any{"Shards": shards})
}

// admit applies the call limit of one of a shard's budgets (calls within
// the last second, this one included) and the shard's block.
func (s *Server) admit(calls *[]time.Time, now time.Time, blocked time.Time) bool {
	kept := (*calls)[:0]
	for _, c := range *calls {
		if c.After(now.Add(-time.Second)) {
			kept = append(kept, c)
		}
	}
	*calls = append(kept, now)
	over := s.opts.CallsPerSecond > 0 && len(*calls) > s.opts.CallsPerSecond
	return !over && !now.Before(blocked)
}

func (s *Server) getShardIterator(w http.ResponseWriter, in *request) {
	shard, ok := s.shardIndex(in.ShardId)
	if !ok {
		fail(w, "ResourceNotFoundException", "Shard "+in.ShardId+" in stream "+s.opts.Stream+" under account 000000000000 does not exist")
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	st := s.shards[shard]
	st.stats.Iterators++
	admitted := s.admit(&st.iterCalls, now, time.Time{})
	if !admitted {
		st.stats.IteratorsDenied++
	}
	s.mu.Unlock()
	if !admitted {
		fail(w, "ProvisionedThroughputExceededException", "Rate exceeded for shard "+in.ShardId+" in stream "+s.opts.Stream+" under account 000000000000.")
		return
	}
	var pos int
	switch types.ShardIteratorType(in.ShardIteratorType) {
	case types.ShardIteratorTypeTrimHorizon:
	case types.ShardIteratorTypeLatest:
		pos = s.arrived(shard, now)
	case types.ShardIteratorTypeAtTimestamp:
		sec, frac := math.Modf(in.Timestamp)
		pos = s.firstAt(shard, time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond)))
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		sh, i, ok := parseSeq(in.StartingSequenceNumber)
		if !ok || sh != shard {
			fail(w, "InvalidArgumentException", "Invalid StartingSequenceNumber. It encodes another shard or nothing.")
			return
		}
		pos = i
		if in.ShardIteratorType == string(types.ShardIteratorTypeAfterSequenceNumber) {
			pos++
		}
	default:
		fail(w, "InvalidArgumentException", "bad ShardIteratorType "+strconv.Quote(in.ShardIteratorType))
		return
	}
	reply(w, map[string]string{"ShardIterator": iterator(shard, pos)})
}

func (s *Server) shardIndex(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, "shardId-")
	i, err := strconv.Atoi(n)
	return i, ok && err == nil && i >= 0 && i < len(s.shards)
}

const iterPrefix = "AAAAhotstub/"

func iterator(shard, pos int) string { return fmt.Sprintf("%s%d/%d", iterPrefix, shard, pos) }

type record struct {
	SequenceNumber              string
	ApproximateArrivalTimestamp float64
	Data                        []byte
	PartitionKey                string
}

func (s *Server) getRecords(w http.ResponseWriter, in *request) {
	rest, ok := strings.CutPrefix(in.ShardIterator, iterPrefix)
	a, b, ok2 := strings.Cut(rest, "/")
	shard, err1 := strconv.Atoi(a)
	pos, err2 := strconv.Atoi(b)
	if !ok || !ok2 || err1 != nil || err2 != nil || shard < 0 || shard >= len(s.shards) || pos < 0 {
		fail(w, "InvalidArgumentException", "Invalid ShardIterator.")
		return
	}
	limit := MaxPageRecords
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > MaxPageRecords {
			fail(w, "InvalidArgumentException", fmt.Sprintf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 10000", *in.Limit))
			return
		}
		limit = *in.Limit
	}
	now := s.opts.Now()
	s.mu.Lock()
	st := s.shards[shard]
	st.stats.GetRecords++
	if !s.admit(&st.calls, now, st.blockedUntil) {
		st.stats.Throttled++
		if s.opts.ThrottlePenalty > 0 {
			st.blockedUntil = later(st.blockedUntil, now.Add(s.opts.ThrottlePenalty))
		}
		s.mu.Unlock()
		fail(w, "ProvisionedThroughputExceededException", "Rate exceeded for shard shardId-"+fmt.Sprintf("%012d", shard)+" in stream "+s.opts.Stream+" under account 000000000000.")
		return
	}
	end := s.arrived(shard, now)
	recs := []record{}
	size := 0
	for i := pos; i < end && len(recs) < limit; i++ {
		key := s.Key(shard, i)
		n := len(s.data) + len(key)
		if len(recs) > 0 && size+n > MaxPageBytes {
			break
		}
		size += n
		recs = append(recs, record{SequenceNumber: seqOf(shard, i), ApproximateArrivalTimestamp: float64(s.Arrival(shard, i).UnixMilli()) / 1000, Data: s.data, PartitionKey: key})
	}
	next := pos + len(recs)
	behind := int64(0)
	if next < end {
		behind = now.Sub(s.Arrival(shard, next)).Milliseconds()
	}
	st.stats.Limits = append(st.stats.Limits, limitOf(in.Limit))
	st.stats.Records += int64(len(recs))
	st.stats.Bytes += int64(size)
	st.stats.MaxResponseBytes = max(st.stats.MaxResponseBytes, size)
	if s.opts.ReadBytesPerSecond > 0 {
		st.blockedUntil = later(st.blockedUntil, now.Add(time.Duration(float64(size)/float64(s.opts.ReadBytesPerSecond)*float64(time.Second))))
	}
	s.mu.Unlock()
	reply(w, map[string]any{"Records": recs, "MillisBehindLatest": behind, "NextShardIterator": iterator(shard, next)})
}

func limitOf(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func reply(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(w, "InternalFailure", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func fail(w http.ResponseWriter, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.1")
	h.Set("X-Amzn-Errortype", typ)
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}
