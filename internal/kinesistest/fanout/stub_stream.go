package fanout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// subscription is an active SubscribeToShard stream of the stub.
type subscription struct {
	started  time.Time
	takeover chan struct{} // closed when a later call takes it over
}

// subscribe answers a SubscribeToShard call: the checks AWS makes, in its
// order, then the stream.
func (s *Stub) subscribe(w http.ResponseWriter, r *http.Request, body []byte) {
	var req subscribeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, "SerializationException", err.Error())
		return
	}
	now := time.Now()
	key := subKey{req.ConsumerARN, req.ShardID}
	s.mu.Lock()
	s.calls = append(s.calls, callOf(&req, r, now))
	last, seen := s.lastCall[key]
	s.lastCall[key] = now
	if seen && now.Sub(last) < s.opts.CallInterval {
		s.stats.TooSoon++
		s.mu.Unlock()
		writeError(w, "LimitExceededException", fmt.Sprintf("Rate exceeded for consumer %s and shard %s", req.ConsumerARN, req.ShardID))
		return
	}
	var fault Fault
	if q := s.faults[req.ShardID]; len(q) > 0 {
		fault, s.faults[req.ShardID] = q[0], q[1:]
	}
	if answerFault(w, r, fault, s.closing, s.mu.Unlock) {
		return
	}
	sh, start, code, why := s.checkSubscribe(&req)
	start = max(0, start-fault.Repeat)
	old := s.active[key]
	if code == "" && old != nil && now.Sub(old.started) < s.opts.InUseWindow {
		s.stats.InUse++
		code, why = "ResourceInUseException", fmt.Sprintf("Another active subscription exists for consumer %s on shard %s", req.ConsumerARN, req.ShardID)
	}
	if code != "" {
		s.mu.Unlock()
		writeError(w, code, why)
		return
	}
	if old != nil {
		close(old.takeover)
		s.stats.Takeovers++
	}
	sub := &subscription{started: now, takeover: make(chan struct{})}
	s.active[key] = sub
	s.stats.Subscriptions++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.active[key] == sub {
			delete(s.active, key)
		}
		s.mu.Unlock()
	}()
	s.stream(w, r, sh, start, sub, fault)
}

// checkSubscribe finds the consumer, the shard and the index of the first
// record to send, or says which error to answer; s.mu is held.
func (s *Stub) checkSubscribe(req *subscribeRequest) (sh *stubShard, start int, code, why string) {
	i, _ := s.findConsumer(&consumerRequest{ConsumerARN: req.ConsumerARN})
	switch {
	case i < 0:
		return nil, 0, "ResourceNotFoundException", "consumer " + req.ConsumerARN + " not found"
	case s.consumers[i].status != types.ConsumerStatusActive:
		return nil, 0, "ResourceInUseException", "consumer " + req.ConsumerARN + " is not ACTIVE"
	}
	sh = s.shards[req.ShardID]
	if sh == nil {
		return nil, 0, "ResourceNotFoundException", "shard " + req.ShardID + " not found"
	}
	p := req.StartingPosition
	switch types.ShardIteratorType(p.Type) {
	case types.ShardIteratorTypeTrimHorizon:
		return sh, 0, "", ""
	case types.ShardIteratorTypeLatest:
		return sh, len(sh.records), "", ""
	case types.ShardIteratorTypeAtTimestamp:
		if p.Timestamp == nil {
			return nil, 0, "InvalidArgumentException", "AT_TIMESTAMP without a Timestamp"
		}
		t := time.UnixMilli(int64(math.Round(*p.Timestamp * 1000)))
		for i, r := range sh.records {
			if !r.arrival.Before(t) {
				return sh, i, "", ""
			}
		}
		return sh, len(sh.records), "", ""
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		x, ok := new(big.Int).SetString(p.SequenceNumber, 10)
		limit := new(big.Int).Add(sh.base, new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil))
		if !ok || x.Cmp(sh.base) < 0 || x.Cmp(limit) >= 0 {
			return nil, 0, "InvalidArgumentException", fmt.Sprintf("sequence number %q is not of shard %s", p.SequenceNumber, sh.id)
		}
		after := types.ShardIteratorType(p.Type) == types.ShardIteratorTypeAfterSequenceNumber
		for i, r := range sh.records {
			c := new(big.Int)
			c.SetString(r.seq, 10)
			if d := c.Cmp(x); d > 0 || (d == 0 && !after) {
				return sh, i, "", ""
			}
		}
		return sh, len(sh.records), "", ""
	}
	return nil, 0, "InvalidArgumentException", fmt.Sprintf("starting position type %q", p.Type)
}

// stream sends the initial-response, then events from record index idx,
// until the shard's end, the subscription's lifetime, a fault, a takeover,
// the client leaving or the stub closing.
func (s *Stub) stream(w http.ResponseWriter, r *http.Request, sh *stubShard, idx int, sub *subscription, fault Fault) {
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
			msg, _, _ := s.nextEvent(sh, idx)
			return msg
		}) {
			return
		}
		msg, n, final := s.nextEvent(sh, idx)
		if !send(msg) || final {
			return
		}
		idx += n
		for !s.hasNews(sh, idx) {
			s.mu.Lock()
			changed := s.changed
			s.mu.Unlock()
			select {
			case <-changed:
				continue
			case <-tick.C:
			case <-lifetime.C:
				return
			case <-sub.takeover:
				send(exceptionMessage("ResourceInUseException", "fanout stub: another subscription took over"))
				return
			case <-r.Context().Done():
				return
			case <-s.closing:
				return
			}
			break
		}
	}
}

// openStream answers 200 with an event stream and sends the
// initial-response; send writes (and flushes) one more message. ok is
// false when the client is gone.
func (e *encoder) openStream(w http.ResponseWriter) (send func(eventstream.Message) bool, ok bool) {
	w.Header().Set("Content-Type", eventStreamType)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send = func(m eventstream.Message) bool {
		if err := e.encode(w, m); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	return send, send(initialResponseMessage())
}

// answerFault answers a call the way its fault says (an error code, a
// status, no answer at all) and reports whether it did; unlock is called
// first either way, before anything is written.
func answerFault(w http.ResponseWriter, r *http.Request, f Fault, closing <-chan struct{}, unlock func()) bool {
	switch {
	case f.CallError != "":
		unlock()
		writeError(w, f.CallError, "fanout stub: scripted "+f.CallError)
	case f.Status != 0:
		unlock()
		http.Error(w, "fanout stub: scripted status", f.Status)
	case f.Hang:
		unlock()
		select {
		case <-r.Context().Done():
		case <-closing:
		}
	default:
		return false
	}
	return true
}

// endByFault ends a stream at the event where its fault strikes, the way
// the fault says, and reports whether it did (the handler then returns).
// next is the event that would have come (a Drop sends half of it).
func (e *encoder) endByFault(w http.ResponseWriter, r *http.Request, f Fault, closing <-chan struct{}, send func(eventstream.Message) bool, next func() eventstream.Message) bool {
	switch {
	case f.StreamError != "":
		send(exceptionMessage(f.StreamError, "fanout stub: scripted "+f.StreamError))
	case f.End:
	case f.Stall:
		select {
		case <-r.Context().Done():
		case <-closing:
		}
	case f.Drop:
		var b bytes.Buffer
		_ = e.encode(&b, next())
		_, _ = w.Write(b.Bytes()[:b.Len()/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler) // cut the connection, no clean end
	default:
		return false
	}
	return true
}

// hasNews reports whether a subscription at idx has something to send
// before the next tick: records, or the shard's end.
func (s *Stub) hasNews(sh *stubShard, idx int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return idx < len(sh.records) || sh.closed
}

// nextEvent is the event for a subscription at record index idx: at most
// MaxEventRecords records; the last records of a closed shard come with
// its children and no continuation.
func (s *Stub) nextEvent(sh *stubShard, idx int) (msg eventstream.Message, n int, final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := sh.records[idx:min(idx+s.opts.MaxEventRecords, len(sh.records))]
	n = len(recs)
	ev := &wireEvent{Records: make([]json.RawMessage, n)}
	for i := range recs {
		ev.Records[i] = recordJSON(&recs[i])
	}
	if next := idx + n; next < len(sh.records) {
		ev.MillisBehindLatest = max(1, time.Since(sh.records[next].arrival).Milliseconds())
	}
	final = sh.closed && idx+n == len(sh.records)
	if final {
		for _, c := range sh.children {
			ev.ChildShards = append(ev.ChildShards, childJSON(c))
		}
	} else {
		cont := sh.base.String()
		if idx+n > 0 {
			cont = sh.records[idx+n-1].seq
		}
		ev.ContinuationSequenceNumber = &cont
	}
	msg, _ = subscribeEventMessage(ev)
	s.stats.Events++
	return msg, n, final
}
