package efo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// DefaultCallInterval spaces the SubscribeToShard calls of one consumer
// and shard: the service allows one a second, and a tenth of a second of
// margin keeps clock jitter from making it two.
const DefaultCallInterval = 1100 * time.Millisecond

// Pacer spaces SubscribeToShard calls per consumer and shard. Readers of
// one process share one, so a reader started again for a shard (by a
// scheduler, say) still keeps the pace. Safe for concurrent use.
type Pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     map[string]time.Time
}

// NewPacer returns a pacer that lets one call through per interval and
// consumer and shard; interval <= 0 means DefaultCallInterval.
func NewPacer(interval time.Duration) *Pacer {
	if interval <= 0 {
		interval = DefaultCallInterval
	}
	return &Pacer{interval: interval, next: map[string]time.Time{}}
}

// Wait blocks until a call for the consumer and shard may be made, and
// books it; it returns ctx's error if ctx ends first.
func (p *Pacer) Wait(ctx context.Context, consumerARN, shardID string) error {
	key := consumerARN + " " + shardID
	p.mu.Lock()
	now := time.Now()
	at := p.next[key]
	if at.Before(now) {
		at = now
	}
	p.next[key] = at.Add(p.interval)
	p.mu.Unlock()
	return awscall.Sleep(ctx, time.Until(at))
}

// callOptions are the per-call options of every SubscribeToShard: one
// attempt (the reader retries, each attempt through the pacer), and the
// request body and initial-response fixes below.
func callOptions(o *kinesis.Options) {
	o.RetryMaxAttempts = 1
	HTTP1StreamFix(o)
	initialResponseFix(o)
}

// HTTP1StreamFix keeps an event stream alive over HTTP/1.1. The SDK closes
// the request body as soon as the response headers arrive, and its body
// wrapper then answers WriteTo with io.EOF, which net/http takes as a
// failed request write, closing the connection, and with it the stream,
// while the request's last read is still pending (docs/KINESIS-NOTES.md
// §8). Handing the transport a body without WriteTo avoids that; over
// HTTP/2 (AWS) the body is read differently and nothing changes.
func HTTP1StreamFix(o *kinesis.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("kinesis-shards-stream-body",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					if body := req.GetStream(); body != nil {
						r, err := req.SetStream(readerOnly{body})
						if err != nil {
							return middleware.DeserializeOutput{}, middleware.Metadata{}, err
						}
						in.Request = r
					}
				}
				return next.HandleDeserialize(ctx, in)
			}), middleware.After)
	})
}

// initialResponseFix lets an event stream that does not begin with the
// initial-response event be read. The SDK reads that event first and
// fails the call without it ("expected initial-response"); AWS always
// sends it, kinesis-mock (and LocalStack, which runs kinesis-mock) never
// does (docs/KINESIS-NOTES.md §8). The response body is given one when
// its first message is anything else; a body that has one is read as it
// came.
func initialResponseFix(o *kinesis.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("kinesis-shards-initial-response",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && resp.StatusCode == http.StatusOK &&
					resp.Header.Get("Content-Type") == eventStreamType {
					resp.Body = &initialResponseBody{body: resp.Body}
				}
				return out, md, err
			}), middleware.After)
	})
}

const eventStreamType = "application/vnd.amazon.eventstream"

// initialResponseBody is an event stream body that begins with the
// initial-response event: at the first Read it reads the body's first
// message and, unless that is the initial-response, puts one before it.
type initialResponseBody struct {
	body   io.ReadCloser
	prefix *bytes.Reader // nil until the first message was read
}

func (b *initialResponseBody) Read(p []byte) (int, error) {
	if b.prefix == nil {
		var first bytes.Buffer
		msg, err := eventstream.NewDecoder().Decode(io.TeeReader(b.body, &first), nil)
		var head bytes.Buffer
		if err == nil && !isInitialResponse(msg) {
			var ir eventstream.Message
			ir.Headers.Set(":message-type", eventstream.StringValue("event"))
			ir.Headers.Set(":event-type", eventstream.StringValue("initial-response"))
			ir.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			ir.Payload = []byte("{}")
			if err := eventstream.NewEncoder().Encode(&head, ir); err != nil {
				return 0, err
			}
		}
		// What was read (all of a message, or what came before an error)
		// goes on as it came: the SDK's decoder sees the same bytes.
		head.Write(first.Bytes())
		b.prefix = bytes.NewReader(head.Bytes())
	}
	if b.prefix.Len() > 0 {
		return b.prefix.Read(p)
	}
	return b.body.Read(p)
}

func (b *initialResponseBody) Close() error { return b.body.Close() }

func isInitialResponse(m eventstream.Message) bool {
	v := m.Headers.Get(":event-type")
	return v != nil && v.String() == "initial-response"
}

// readerOnly hides every method of a reader but Read.
type readerOnly struct{ io.Reader }
