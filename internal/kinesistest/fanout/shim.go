package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
)

// listTimeout bounds the shim's own ListShards calls (loopback emulator).
const listTimeout = 5 * time.Second

// ShimOptions tune a Shim. The zero value makes kinesis-mock behave like
// AWS as far as the tests need: initial-response first, and a closed
// shard's subscription ends with its children.
type ShimOptions struct {
	// PassThrough leaves kinesis-mock's shard ends as they are: a closed
	// shard's subscription goes on with empty events and never names the
	// children (for tests of the tool's own fallback).
	PassThrough bool
	// EndAfter ends every subscription cleanly at the first event that
	// comes this long after the call, before passing that event on, as AWS
	// ends one after 5 minutes. 0 leaves it to the emulator (5 minutes).
	EndAfter time.Duration
}

// Call is one SubscribeToShard call the shim or the stub saw.
type Call struct {
	ConsumerARN string
	ShardID     string
	Start       efo.Position // the StartingPosition
	At          time.Time
	Proto       string // HTTP/1.1 or HTTP/2.0
}

// Position is the starting position as the readers log it:
// "TRIM_HORIZON", "AFTER_SEQUENCE_NUMBER 4960…".
func (c Call) Position() string { return c.Start.String() }

func callOf(req *subscribeRequest, r *http.Request, at time.Time) Call {
	p := req.StartingPosition
	c := Call{ConsumerARN: req.ConsumerARN, ShardID: req.ShardID, At: at, Proto: r.Proto,
		Start: efo.Position{Type: types.ShardIteratorType(p.Type), SequenceNumber: p.SequenceNumber}}
	if ts := p.Timestamp; ts != nil {
		c.Start.Timestamp = time.UnixMilli(int64(math.Round(*ts * 1000)))
	}
	return c
}

// Shim is a loopback reverse proxy in front of kinesis-mock that makes its
// SubscribeToShard usable by the Go SDK and gives it AWS's shard end. See
// the package comment for what it changes and what it leaves alone.
type Shim struct {
	URL string // http://127.0.0.1:PORT

	opts      ShimOptions
	target    string
	srv       *httptest.Server
	transport *http.Transport
	enc       *encoder

	mu      sync.Mutex
	calls   []Call
	ends    int // final events sent
	clients map[string]*kinesis.Client
	bodies  sync.WaitGroup
}

type subscribeKey struct{}

// NewShim starts a shim in front of target (an emulator's Endpoint) that
// closes when the test ends.
func NewShim(t testing.TB, target string, o ShimOptions) *Shim {
	t.Helper()
	s, err := StartShim(target, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartShim starts a shim without a testing.TB; Close it when done.
func StartShim(target string, o ShimOptions) (*Shim, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("fanout: shim target %q: want scheme://host:port", target)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fanout: shim: %w", err)
	}
	s := &Shim{opts: o, target: target, enc: newEncoder(), clients: map[string]*kinesis.Client{}}
	s.transport = http.DefaultTransport.(*http.Transport).Clone()
	s.transport.Proxy = nil // loopback emulators only
	rp := &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport:      s.transport,
		FlushInterval:  -1, // every event as it comes
		ModifyResponse: s.modifyResponse,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == subscribeTarget {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req subscribeRequest
			if json.Unmarshal(body, &req) == nil {
				s.mu.Lock()
				s.calls = append(s.calls, callOf(&req, r, time.Now()))
				s.mu.Unlock()
				r = r.WithContext(context.WithValue(r.Context(), subscribeKey{}, &req))
			}
		}
		rp.ServeHTTP(w, r)
	})}}
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the shim, ends the subscriptions it passes on and closes the
// connections to the emulator. It is idempotent.
func (s *Shim) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.bodies.Wait()
	s.transport.CloseIdleConnections()
}

// Calls returns the SubscribeToShard calls seen so far, in order.
func (s *Shim) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ShardEnds is how many final events (ChildShards and a null continuation)
// the shim has sent.
func (s *Shim) ShardEnds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ends
}

func (s *Shim) modifyResponse(resp *http.Response) error {
	req, _ := resp.Request.Context().Value(subscribeKey{}).(*subscribeRequest)
	if req == nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != eventStreamType {
		return nil
	}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	pr, pw := io.Pipe()
	upstream, ctx := resp.Body, resp.Request.Context()
	b := &shimBody{pr: pr, upstream: upstream, done: make(chan struct{})}
	s.bodies.Add(1)
	go func() {
		defer s.bodies.Done()
		defer close(b.done)
		pw.CloseWithError(s.relay(ctx, req, upstream, pw))
	}()
	resp.Body = b
	return nil
}

// shimBody is the rewritten event stream; Close ends the relay and waits
// for it.
type shimBody struct {
	pr       *io.PipeReader
	upstream io.ReadCloser
	done     chan struct{}
}

func (b *shimBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *shimBody) Close() error {
	b.pr.Close()
	b.upstream.Close()
	<-b.done
	return nil
}

// relay writes the initial-response, then the emulator's messages as they
// come, and ends the stream where AWS would. A nil return is a clean end
// of the stream; an error cuts the client's connection.
func (s *Shim) relay(ctx context.Context, req *subscribeRequest, upstream io.Reader, w io.Writer) error {
	if err := s.enc.encode(w, initialResponseMessage()); err != nil {
		return err
	}
	start := time.Now()
	dec := eventstream.NewDecoder()
	var children []wireChildShard
	closed := false
	for {
		msg, err := dec.Decode(upstream, nil)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if messageHeader(msg, ":message-type") == "event" && messageHeader(msg, ":event-type") == eventTypeSubEvent {
			if s.opts.EndAfter > 0 && time.Since(start) >= s.opts.EndAfter {
				return nil // AWS's 5-minute end, sooner
			}
			var ev struct{ Records []json.RawMessage }
			if err := json.Unmarshal(msg.Payload, &ev); err != nil {
				return fmt.Errorf("fanout: shim: event payload: %w", err)
			}
			if !s.opts.PassThrough && len(ev.Records) == 0 {
				if closed {
					// Closed before this event was made, and it is
					// empty: everything was delivered.
					return s.sendEnd(w, children)
				}
				closed, children, err = s.shardClosed(ctx, req)
				if err != nil {
					return err
				}
			}
		}
		if err := s.enc.encode(w, msg); err != nil {
			return err
		}
	}
}

func (s *Shim) sendEnd(w io.Writer, children []wireChildShard) error {
	m, err := subscribeEventMessage(&wireEvent{ChildShards: children})
	if err != nil {
		return err
	}
	if err := s.enc.encode(w, m); err != nil {
		return err
	}
	s.mu.Lock()
	s.ends++
	s.mu.Unlock()
	return nil
}

// shardClosed asks the emulator whether the subscription's shard is closed
// and which shards are its children.
func (s *Shim) shardClosed(ctx context.Context, req *subscribeRequest) (bool, []wireChildShard, error) {
	ref, err := parseConsumerARN(req.ConsumerARN)
	if err != nil {
		return false, nil, err
	}
	c := s.client(ref)
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	in := &kinesis.ListShardsInput{StreamARN: aws.String(ref.StreamARN)}
	var shards []types.Shard
	for {
		out, err := c.ListShards(ctx, in)
		if err != nil {
			return false, nil, fmt.Errorf("fanout: shim: list shards of %s: %w", ref.StreamARN, err)
		}
		shards = append(shards, out.Shards...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
	closed := false
	var children []wireChildShard
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if id == req.ShardID {
			closed = sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
		}
		parents := []string{}
		for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
			if p != nil && *p != "" {
				parents = append(parents, *p)
			}
		}
		if containsString(parents, req.ShardID) && sh.HashKeyRange != nil {
			children = append(children, wireChildShard{ShardID: id, ParentShards: parents,
				HashKeyRange: wireHashKeyRange{StartingHashKey: aws.ToString(sh.HashKeyRange.StartingHashKey), EndingHashKey: aws.ToString(sh.HashKeyRange.EndingHashKey)}})
		}
	}
	return closed, children, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// client is an SDK client for the emulator in the consumer's account
// (kinesis-mock takes a 12-digit access key id as the account).
func (s *Shim) client(ref consumerRef) *kinesis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ref.Region + "/" + ref.Account
	if c := s.clients[key]; c != nil {
		return c
	}
	c := kinesis.New(kinesis.Options{
		Region:           ref.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(ref.Account, "fanout-shim", ""),
		BaseEndpoint:     aws.String(strings.TrimRight(s.target, "/")),
		HTTPClient:       &http.Client{Transport: s.transport},
		RetryMaxAttempts: 1,
	})
	s.clients[key] = c
	return c
}
