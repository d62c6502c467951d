package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// ErrDropped is the error of a call whose connection a fault closed (Drop,
// DropResponse, a Stall that ran out). Through the RoundTripper, the SDK
// wraps it (a retryable *smithyhttp.RequestSendError); through the proxy,
// the client sees the connection close without a response.
var ErrDropped = errors.New("faults: connection dropped")

// injected ends every message the Injector makes up, so a log line says
// where an error came from (tests assert error types, never texts).
const injected = " (injected by internal/kinesistest/faults)"

// RoundTripper returns an http.RoundTripper that applies the Injector's
// rules and forwards the rest to next (nil: http.DefaultTransport). Use it
// as the Transport of the SDK client's HTTPClient; prefer the emulator's
// own transport as next, whose idle connections the emulator's Stop closes.
func (in *Injector) RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &roundTripper{in: in, next: next}
}

type roundTripper struct {
	in   *Injector
	next http.RoundTripper
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Now()
	op := opOf(req.Header.Get("X-Amz-Target"))
	body, err := readAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("faults: read request body: %w", err)
	}
	out := req.Clone(req.Context()) // a RoundTripper must not change req
	setRequestBody(out, body)
	// Without our own Accept-Encoding the transport asks for gzip and
	// decompresses itself, so the responses we inspect are plain JSON.
	out.Header.Del("Accept-Encoding")
	// The SDK does not compress Kinesis requests (no requestCompression
	// trait); a compressed body would be passed on uninspected.
	inspect := req.Header.Get("Content-Encoding") == ""

	c := call{rt: rt, out: out, op: op}
	if inspect {
		switch op {
		case opGetRecords:
			var r struct{ ShardIterator string }
			_ = json.Unmarshal(body, &r)
			c.shard = rt.in.getRecordsAttempt(r.ShardIterator, at)
		case opGetShardIterator:
			var r struct{ ShardId string }
			_ = json.Unmarshal(body, &r)
			c.shard = r.ShardId
		}
	}

	d := rt.in.decide(op)
	r := d.rule
	if r == nil {
		return c.forward()
	}
	ctx := req.Context()
	switch r.Kind {
	case Drop:
		return nil, dropped(op, r)
	case DropResponse:
		resp, err := c.forward()
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, dropped(op, r)
	case Stall:
		if r.Duration == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if err := awscall.Sleep(ctx, r.Duration); err != nil {
			return nil, err
		}
		return nil, dropped(op, r)
	case Delay:
		if err := awscall.Sleep(ctx, r.Duration); err != nil {
			return nil, err
		}
		return c.forward()
	case PartialPut:
		if !inspect {
			return c.forward()
		}
		return c.partialPut(body, d)
	}
	return errorResponse(req, r, c.shard, body), nil
}

// call is one request on its way through the RoundTripper.
type call struct {
	rt    *roundTripper
	out   *http.Request // the request to forward
	op    string
	shard string // GetShardIterator's ShardId, GetRecords' iterator's shard
}

// forward sends the request on and learns iterators from the response.
func (c call) forward() (*http.Response, error) {
	resp, err := c.rt.next.RoundTrip(c.out)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return resp, err
	}
	switch c.op {
	case opGetShardIterator, opGetRecords:
	default:
		return resp, nil
	}
	body, err := readAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("faults: read %s response: %w", c.op, err)
	}
	setResponseBody(resp, body)
	var r struct{ ShardIterator, NextShardIterator string }
	_ = json.Unmarshal(body, &r)
	if c.op == opGetShardIterator {
		c.rt.in.rememberIterator(r.ShardIterator, c.shard)
	} else {
		c.rt.in.rememberIterator(r.NextShardIterator, c.shard)
	}
	return resp, nil
}

// partialPut fails a seeded subset of the PutRecords entries: they are
// removed from the forwarded request and reported as throttled.
func (c call) partialPut(body []byte, d decision) (*http.Response, error) {
	var req map[string]json.RawMessage
	var recs []json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("faults: PartialPut: request: %w", err)
	}
	if err := json.Unmarshal(req["Records"], &recs); err != nil || len(recs) == 0 {
		return c.forward() // let the service judge a malformed request
	}
	n := len(recs)
	frac := d.rule.PartialFraction
	if frac == 0 {
		frac = 0.5
	}
	k := min(max(int(frac*float64(n)+0.5), 1), n)
	failed := make([]bool, n)
	for _, i := range d.rng.Perm(n)[:k] {
		failed[i] = true
	}
	kept := make([]json.RawMessage, 0, n-k)
	for i, r := range recs {
		if !failed[i] {
			kept = append(kept, r)
		}
	}
	failure, _ := json.Marshal(map[string]string{
		"ErrorCode":    "ProvisionedThroughputExceededException",
		"ErrorMessage": "Rate exceeded for stream " + streamOf(body) + "." + injected,
	})
	merge := func(upstream []json.RawMessage) []json.RawMessage {
		merged := make([]json.RawMessage, n)
		j := 0
		for i := range merged {
			if failed[i] {
				merged[i] = failure
			} else {
				merged[i] = upstream[j]
				j++
			}
		}
		return merged
	}

	if len(kept) == 0 { // AWS answers 200 even when every entry failed
		b, _ := json.Marshal(map[string]any{"FailedRecordCount": n, "Records": merge(nil)})
		return newResponse(c.out, http.StatusOK, b), nil
	}
	req["Records"], _ = json.Marshal(kept)
	nb, _ := json.Marshal(req)
	setRequestBody(c.out, nb)
	resp, err := c.rt.next.RoundTrip(c.out)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return resp, err
	}
	rb, err := readAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("faults: PartialPut: read response: %w", err)
	}
	var res map[string]json.RawMessage
	var got []json.RawMessage
	var failedCount int
	if err := json.Unmarshal(rb, &res); err != nil {
		return nil, fmt.Errorf("faults: PartialPut: response: %w", err)
	}
	if err := json.Unmarshal(res["Records"], &got); err != nil || len(got) != len(kept) {
		return nil, fmt.Errorf("faults: PartialPut: upstream answered %d entries for %d records (%v)", len(got), len(kept), err)
	}
	if fc, ok := res["FailedRecordCount"]; ok {
		_ = json.Unmarshal(fc, &failedCount)
	}
	res["Records"], _ = json.Marshal(merge(got))
	res["FailedRecordCount"], _ = json.Marshal(failedCount + k)
	rb, _ = json.Marshal(res)
	setResponseBody(resp, rb)
	return resp, nil
}

// errorResponse is the service's answer for an error kind: awsJson1.1,
// {"__type": code, "message": ...}.
func errorResponse(req *http.Request, r *Rule, shard string, body []byte) *http.Response {
	stream := streamOf(body)
	status, code, msg := http.StatusBadRequest, "", ""
	switch r.Kind {
	case Throttle:
		code = "ProvisionedThroughputExceededException"
		msg = "Rate exceeded for stream " + stream + "."
		if shard != "" && shard != UnknownShard {
			msg = "Rate exceeded for shard " + shard + " in stream " + stream + "."
		}
	case LimitExceeded:
		code, msg = "LimitExceededException", "Rate exceeded for stream "+stream+"."
	case ExpiredIterator:
		code, msg = "ExpiredIteratorException", "Iterator expired."
	case ResourceInUse:
		code, msg = "ResourceInUseException", "Stream "+stream+" not ACTIVE, instead in state UPDATING."
	case InternalFailure500:
		status, code, msg = http.StatusInternalServerError, "InternalFailureException", "Internal service failure."
	case Unavailable503:
		status, code, msg = http.StatusServiceUnavailable, "ServiceUnavailable", "Service unavailable."
	case Custom:
		code, msg = r.Code, r.Code
		if r.Status != 0 {
			status = r.Status
		}
	}
	if r.Message != "" {
		msg = r.Message
	}
	b, _ := json.Marshal(map[string]string{"__type": code, "message": msg + injected})
	return newResponse(req, status, b)
}

func dropped(op string, r *Rule) error {
	return fmt.Errorf("%w (%s %s)", ErrDropped, op, r.Kind)
}

// streamOf returns the stream a request names, for messages.
func streamOf(body []byte) string {
	var r struct{ StreamName, StreamARN string }
	_ = json.Unmarshal(body, &r)
	if r.StreamName != "" {
		return r.StreamName
	}
	if r.StreamARN != "" {
		return r.StreamARN
	}
	return "(unknown)"
}

func readAll(rc io.ReadCloser) ([]byte, error) {
	if rc == nil || rc == http.NoBody {
		return nil, nil
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func setRequestBody(r *http.Request, b []byte) {
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	if r.Header.Get("Content-Length") != "" {
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	}
}

func setResponseBody(resp *http.Response, b []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
}

func newResponse(req *http.Request, status int, body []byte) *http.Response {
	resp := &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amzn-Requestid": {"faults-injected"}},
		Request: req,
	}
	setResponseBody(resp, body)
	return resp
}
