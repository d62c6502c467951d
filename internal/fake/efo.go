package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// Enhanced fan-out: consumers of a stream and SubscribeToShard.
const (
	maxConsumers = 20
	// subscriptionLifetime: a subscription ends after five minutes, and
	// the reader subscribes again from where it stood.
	subscriptionLifetime = 5 * time.Minute
	// eventEvery is how often a subscription sends an event: at once when
	// records are there, else this often (AWS: about every 5 s when idle;
	// shorter here, so a reader notices a shard's end promptly).
	eventEvery      = 200 * time.Millisecond
	maxEventRecords = 1000
)

var consumerNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// consumer is a registered consumer of a stream.
type consumer struct {
	Name     string
	ARN      string
	Status   types.ConsumerStatus
	Created  time.Time
	settleAt time.Time // end of CREATING or DELETING (StateDelay)
}

func (c *consumer) describe(s *Stream) *types.ConsumerDescription {
	return &types.ConsumerDescription{ConsumerName: aws.String(c.Name), ConsumerARN: aws.String(c.ARN), ConsumerStatus: c.Status,
		ConsumerCreationTimestamp: aws.Time(c.Created), StreamARN: aws.String(s.ARN)}
}

// consumers is the stream's consumers, settled (CREATING past its delay is
// ACTIVE, DELETING past it is gone). Called under the lock.
func (f *Fake) consumers(s *Stream) map[string]*consumer {
	now := f.now()
	for name, c := range s.consumers {
		if c.settleAt.IsZero() || now.Before(c.settleAt) {
			continue
		}
		c.settleAt = time.Time{}
		if c.Status == types.ConsumerStatusDeleting {
			delete(s.consumers, name)
			continue
		}
		c.Status = types.ConsumerStatusActive
	}
	return s.consumers
}

// streamOfARN finds a stream by its ARN.
func (f *Fake) streamOfARN(arn *string) (*Stream, error) {
	if arn == nil || !strings.Contains(*arn, ":stream/") {
		return nil, invalidArg("StreamARN is required and must be a stream's ARN")
	}
	s, err := f.stream(nil, arn)
	if err != nil {
		return nil, err
	}
	if s.ARN != *arn {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Stream " + *arn + " not found.")}
	}
	return s, nil
}

// consumerByARN finds a consumer by its ARN ("<stream ARN>/consumer/<name>:<epoch>").
func (f *Fake) consumerByARN(arn string) (*Stream, *consumer, error) {
	streamARN, _, ok := strings.Cut(arn, "/consumer/")
	notFound := &types.ResourceNotFoundException{Message: aws.String("Consumer " + arn + " not found.")}
	if !ok {
		return nil, nil, notFound
	}
	s, err := f.streamOfARN(aws.String(streamARN))
	if err != nil {
		return nil, nil, notFound
	}
	for _, c := range f.consumers(s) {
		if c.ARN == arn {
			return s, c, nil
		}
	}
	return nil, nil, notFound
}

// RegisterStreamConsumer implements the SDK call: CREATING for StateDelay,
// then ACTIVE; at most 20 consumers a stream.
func (f *Fake) RegisterStreamConsumer(ctx context.Context, in *kinesis.RegisterStreamConsumerInput, _ ...func(*kinesis.Options)) (*kinesis.RegisterStreamConsumerOutput, error) {
	if err := f.call("RegisterStreamConsumer", in); err != nil {
		return nil, err
	}
	name := aws.ToString(in.ConsumerName)
	if !consumerNameRE.MatchString(name) {
		return nil, validation("1 validation error detected: Value '%s' at 'consumerName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.streamOfARN(in.StreamARN)
	if err != nil {
		return nil, err
	}
	cs := f.consumers(s)
	if cs[name] != nil {
		return nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Consumer %s under stream %s already exists for account 123456789012.", name, s.Name))}
	}
	if len(cs) >= maxConsumers {
		return nil, &types.LimitExceededException{Message: aws.String(fmt.Sprintf("Consumer limit of %d exceeded for stream %s under account 123456789012.", maxConsumers, s.Name))}
	}
	now := f.now()
	c := &consumer{Name: name, ARN: fmt.Sprintf("%s/consumer/%s:%d", s.ARN, name, now.Unix()), Status: types.ConsumerStatusActive, Created: now.Truncate(time.Second)}
	if f.StateDelay > 0 {
		c.Status, c.settleAt = types.ConsumerStatusCreating, now.Add(f.StateDelay)
	}
	if s.consumers == nil {
		s.consumers = map[string]*consumer{}
	}
	s.consumers[name] = c
	return &kinesis.RegisterStreamConsumerOutput{Consumer: &types.Consumer{ConsumerName: aws.String(name), ConsumerARN: aws.String(c.ARN),
		ConsumerStatus: c.Status, ConsumerCreationTimestamp: aws.Time(c.Created)}}, nil
}

// DescribeStreamConsumer implements the SDK call: by the consumer's ARN, or
// by the stream's ARN and the consumer's name.
func (f *Fake) DescribeStreamConsumer(ctx context.Context, in *kinesis.DescribeStreamConsumerInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error) {
	if err := f.call("DescribeStreamConsumer", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, c, err := f.findConsumer(in.ConsumerARN, in.StreamARN, in.ConsumerName)
	if err != nil {
		return nil, err
	}
	return &kinesis.DescribeStreamConsumerOutput{ConsumerDescription: c.describe(s)}, nil
}

// DeregisterStreamConsumer implements the SDK call: DELETING for
// StateDelay, then gone (its subscriptions end).
func (f *Fake) DeregisterStreamConsumer(ctx context.Context, in *kinesis.DeregisterStreamConsumerInput, _ ...func(*kinesis.Options)) (*kinesis.DeregisterStreamConsumerOutput, error) {
	if err := f.call("DeregisterStreamConsumer", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, c, err := f.findConsumer(in.ConsumerARN, in.StreamARN, in.ConsumerName)
	if err != nil {
		return nil, err
	}
	if f.StateDelay > 0 {
		c.Status, c.settleAt = types.ConsumerStatusDeleting, f.now().Add(f.StateDelay)
	} else {
		delete(s.consumers, c.Name)
	}
	return &kinesis.DeregisterStreamConsumerOutput{}, nil
}

func (f *Fake) findConsumer(arn, streamARN, name *string) (*Stream, *consumer, error) {
	if arn != nil {
		return f.consumerByARN(*arn)
	}
	if streamARN == nil || name == nil {
		return nil, nil, invalidArg("either ConsumerARN, or StreamARN and ConsumerName, must be given")
	}
	s, err := f.streamOfARN(streamARN)
	if err != nil {
		return nil, nil, err
	}
	c := f.consumers(s)[*name]
	if c == nil {
		return nil, nil, &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Consumer %s under stream %s not found.", *name, s.Name))}
	}
	return s, c, nil
}

// ListStreamConsumers implements the SDK call: by name, MaxResults at a
// time (100 by default).
func (f *Fake) ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, _ ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error) {
	if err := f.call("ListStreamConsumers", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.streamOfARN(in.StreamARN)
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range f.consumers(s) {
		if name > aws.ToString(in.NextToken) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	limit := defaultListLimit
	if in.MaxResults != nil && *in.MaxResults > 0 {
		limit = int(*in.MaxResults)
	}
	out := &kinesis.ListStreamConsumersOutput{Consumers: []types.Consumer{}}
	if len(names) > limit {
		names = names[:limit]
		out.NextToken = aws.String(names[limit-1])
	}
	for _, name := range names {
		c := s.consumers[name]
		out.Consumers = append(out.Consumers, types.Consumer{ConsumerName: aws.String(name), ConsumerARN: aws.String(c.ARN),
			ConsumerStatus: c.Status, ConsumerCreationTimestamp: aws.Time(c.Created)})
	}
	return out, nil
}

// subscription is where an open subscription reads.
type subscription struct {
	stream, shard, key string
	idx                int
}

// subscribe checks a SubscribeToShard call and claims its consumer's
// shard: one subscription per consumer and shard at a time, as the
// service allows. release frees the claim.
func (f *Fake) subscribe(in *kinesis.SubscribeToShardInput) (sub subscription, release func(), err error) {
	if err := f.call("SubscribeToShard", in); err != nil {
		return sub, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, c, err := f.consumerByARN(aws.ToString(in.ConsumerARN))
	if err != nil {
		return sub, nil, err
	}
	if c.Status != types.ConsumerStatusActive {
		return sub, nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Consumer %s is not ACTIVE (it is %s).", c.ARN, c.Status))}
	}
	sh := s.shard(aws.ToString(in.ShardId))
	if sh == nil || sh.Trimmed {
		return sub, nil, &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Shard %s in stream %s under account 123456789012 does not exist.", aws.ToString(in.ShardId), s.Name))}
	}
	p := in.StartingPosition
	if p == nil {
		return sub, nil, invalidArg("StartingPosition is required")
	}
	idx, err := sh.startIndex(p.Type, aws.ToString(p.SequenceNumber), aws.ToTime(p.Timestamp))
	if err != nil {
		return sub, nil, err
	}
	key := c.ARN + "|" + sh.ID
	if f.subscribed[key] {
		return sub, nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Another active subscription exists for consumer %s on shard %s.", c.ARN, sh.ID))}
	}
	if f.subscribed == nil {
		f.subscribed = map[string]bool{}
	}
	f.subscribed[key] = true
	return subscription{stream: s.Name, shard: sh.ID, key: key, idx: idx}, func() {
		f.mu.Lock()
		delete(f.subscribed, key)
		f.mu.Unlock()
	}, nil
}

// serveSubscribe answers SubscribeToShard: an event stream of the shard's
// records from the starting position, one event at once and then every
// eventEvery (or as soon as records come), until the shard's end (a last
// event with no continuation, naming the children), five minutes, the
// consumer's deregistration or the client leaving.
func (f *Fake) serveSubscribe(w http.ResponseWriter, r *http.Request, body []byte) {
	in, err := decode[kinesis.SubscribeToShardInput](body)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	sub, release, err := f.subscribe(in)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	defer release()
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	fl, _ := w.(http.Flusher)
	send := func(m eventstream.Message) bool {
		if err := enc.Encode(w, m); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if !send(eventMessage("initial-response", []byte("{}"))) {
		return
	}
	end := time.NewTimer(subscriptionLifetime)
	defer end.Stop()
	tick := time.NewTicker(eventEvery)
	defer tick.Stop()
	for {
		ev, next, final, err := f.event(sub, in.ConsumerARN)
		if err != nil {
			var api smithy.APIError
			if errors.As(err, &api) {
				send(exceptionMessage(api.ErrorCode(), api.ErrorMessage()))
			}
			return
		}
		payload, err := encode(r.Context(), schemas.SubscribeToShardEvent, ev)
		if err != nil || !send(eventMessage("SubscribeToShardEvent", payload)) || final {
			return
		}
		sub.idx = next
		if len(ev.Records) > 0 && ev.MillisBehindLatest != nil && *ev.MillisBehindLatest > 0 {
			continue // behind: the next event at once
		}
		select {
		case <-tick.C:
		case <-end.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// event is a subscription's next event, the record index the one after it
// starts at (past records trimmed meanwhile too) and whether it is the
// last; an error ends the subscription with it.
func (f *Fake) event(sub subscription, consumerARN *string) (*types.SubscribeToShardEvent, int, bool, error) {
	f.mu.Lock()
	_, _, cerr := f.consumerByARN(aws.ToString(consumerARN))
	f.mu.Unlock()
	if cerr != nil {
		return nil, 0, false, cerr
	}
	rd := f.ReadShard(sub.stream, sub.shard, sub.idx, maxEventRecords)
	if !rd.Listed {
		return nil, 0, false, &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Shard %s in stream %s under account 123456789012 does not exist.", sub.shard, sub.stream))}
	}
	ev := &types.SubscribeToShardEvent{Records: make([]types.Record, 0, len(rd.Records)), MillisBehindLatest: aws.Int64(0)}
	for _, rec := range rd.Records {
		ev.Records = append(ev.Records, types.Record{SequenceNumber: aws.String(rec.Seq), PartitionKey: aws.String(rec.PartitionKey),
			Data: rec.Data, ApproximateArrivalTimestamp: aws.Time(rec.Arrival)})
	}
	if rd.Behind {
		ev.MillisBehindLatest = aws.Int64(1000)
	}
	final := rd.Closed && !rd.Behind && !f.NeverEnd
	if final {
		ev.ChildShards = rd.Children
		return ev, rd.Next, true, nil
	}
	cont := rd.StartSeq
	switch {
	case len(rd.Records) > 0:
		cont = rd.Records[len(rd.Records)-1].Seq
	case rd.LastSeq != "":
		cont = rd.LastSeq
	}
	ev.ContinuationSequenceNumber = aws.String(cont)
	return ev, rd.Next, false, nil
}

// eventMessage is an event of the stream, with a JSON payload.
func eventMessage(eventType string, payload []byte) eventstream.Message {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue(eventType))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = payload
	return m
}

// exceptionMessage is an error inside the stream: the SDK returns it from
// the stream's Err as the typed error code names.
func exceptionMessage(code, message string) eventstream.Message {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("exception"))
	m.Headers.Set(":exception-type", eventstream.StringValue(code))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload, _ = json.Marshal(map[string]string{"message": message})
	return m
}
