package fanout

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The SubscribeToShard wire: an HTTP 200 with Content-Type
// application/vnd.amazon.eventstream whose body is a sequence of event
// stream messages. The first is the initial-response (the operation's
// output, {} for SubscribeToShard), then SubscribeToShardEvent events, or an
// exception message that ends the stream.
const (
	targetPrefix      = "Kinesis_20131202."
	subscribeTarget   = targetPrefix + "SubscribeToShard"
	eventStreamType   = "application/vnd.amazon.eventstream"
	jsonContentType   = "application/json"
	awsJSONType       = "application/x-amz-json-1.1"
	eventTypeSubEvent = "SubscribeToShardEvent"
	initialResponse   = "initial-response"
)

// wireRecord is a record as SubscribeToShardEvent carries it.
type wireRecord struct {
	ApproximateArrivalTimestamp float64 `json:"ApproximateArrivalTimestamp"`
	Data                        []byte  `json:"Data"`
	EncryptionType              string  `json:"EncryptionType,omitempty"`
	PartitionKey                string  `json:"PartitionKey"`
	SequenceNumber              string  `json:"SequenceNumber"`
}

type wireHashKeyRange struct {
	StartingHashKey string `json:"StartingHashKey"`
	EndingHashKey   string `json:"EndingHashKey"`
}

type wireChildShard struct {
	ShardID      string           `json:"ShardId"`
	ParentShards []string         `json:"ParentShards"`
	HashKeyRange wireHashKeyRange `json:"HashKeyRange"`
}

// wireEvent is a SubscribeToShardEvent's payload. A nil
// ContinuationSequenceNumber is written as null: that is the shard's end.
type wireEvent struct {
	Records                    []json.RawMessage `json:"Records"`
	ContinuationSequenceNumber *string           `json:"ContinuationSequenceNumber"`
	MillisBehindLatest         int64             `json:"MillisBehindLatest"`
	ChildShards                []wireChildShard  `json:"ChildShards,omitempty"`
}

// encoder writes event stream messages; safe for concurrent use (one
// message at a time).
type encoder struct {
	mu  sync.Mutex
	enc *eventstream.Encoder
}

func newEncoder() *encoder { return &encoder{enc: eventstream.NewEncoder()} }

func (e *encoder) encode(w io.Writer, msg eventstream.Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(w, msg)
}

// eventMessage is an event message of the given type with a JSON payload,
// with the headers in the order AWS sends them.
func eventMessage(eventType string, payload []byte) eventstream.Message {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue(eventType))
	m.Headers.Set(":content-type", eventstream.StringValue(jsonContentType))
	m.Payload = payload
	return m
}

// initialResponseMessage is what the SDK reads first (and kinesis-mock
// does not send): the operation's output, empty for SubscribeToShard.
func initialResponseMessage() eventstream.Message {
	return eventMessage(initialResponse, []byte("{}"))
}

// subscribeEventMessage encodes a SubscribeToShardEvent.
func subscribeEventMessage(ev *wireEvent) (eventstream.Message, error) {
	if ev.Records == nil {
		ev.Records = []json.RawMessage{}
	}
	p, err := json.Marshal(ev)
	if err != nil {
		return eventstream.Message{}, err
	}
	return eventMessage(eventTypeSubEvent, p), nil
}

// exceptionMessage is an error inside the stream: the SDK returns it from
// the stream's Err as the typed error named by code (for example
// *types.ResourceInUseException).
func exceptionMessage(code, message string) eventstream.Message {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("exception"))
	m.Headers.Set(":exception-type", eventstream.StringValue(code))
	m.Headers.Set(":content-type", eventstream.StringValue(jsonContentType))
	m.Payload, _ = json.Marshal(map[string]string{"message": message})
	return m
}

// messageHeader is a string header of m, "" when absent.
func messageHeader(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// consumerARNRE splits a consumer ARN into the stream ARN, the consumer
// name and the registration epoch.
var consumerARNRE = regexp.MustCompile(`^(arn:[^:]+:kinesis:([^:]+):([0-9]{12}):stream/[a-zA-Z0-9_.-]+)/consumer/([a-zA-Z0-9_.-]+):[0-9]+$`)

type consumerRef struct {
	StreamARN, Region, Account, Name string
}

func parseConsumerARN(arn string) (consumerRef, error) {
	m := consumerARNRE.FindStringSubmatch(arn)
	if m == nil {
		return consumerRef{}, fmt.Errorf("%q is not a consumer ARN", arn)
	}
	return consumerRef{StreamARN: m[1], Region: m[2], Account: m[3], Name: m[4]}, nil
}

// subscribeRequest is the body of a SubscribeToShard call.
type subscribeRequest struct {
	ConsumerARN      string `json:"ConsumerARN"`
	ShardID          string `json:"ShardId"`
	StartingPosition struct {
		Type           string   `json:"Type"`
		SequenceNumber string   `json:"SequenceNumber,omitempty"`
		Timestamp      *float64 `json:"Timestamp,omitempty"`
	} `json:"StartingPosition"`
}
