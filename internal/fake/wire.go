package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/schemas"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"
)

// The wire. Kinesis speaks the AWS JSON 1.1 protocol: a POST to / with the
// operation in the X-Amz-Target header ("Kinesis_20131202.GetRecords") and
// the input as a JSON document whose members are named as in the API (blobs
// in base64, timestamps in epoch seconds); the answer is the output as
// such a document, or an error {"__type": code, "message": text} with a 4xx
// (the request's fault) or 5xx (the service's) status.
//
// Inputs are read with encoding/json into the SDK's own input types (their
// Go field names are the API's member names); outputs are written by the
// SDK's own shape serializer, so what a client reads is exactly what it
// would read from the service.

const (
	targetPrefix = "Kinesis_20131202."
	jsonType     = "application/x-amz-json-1.1"
	// maxRequestBytes bounds a request body: a PutRecords of 5 MiB of
	// records is under 7 MiB once its data is in base64.
	maxRequestBytes = 16 << 20
)

// op serves one operation: decode the body, call the fake, and return the
// output with its schema.
type op func(ctx context.Context, f *Fake, body []byte) (smithy.Serializable, *smithy.Schema, error)

// serve adapts a fake method to an op.
func serve[In any, Out smithy.Serializable](schema *smithy.Schema, call func(*Fake, context.Context, *In, ...func(*kinesis.Options)) (Out, error)) op {
	return func(ctx context.Context, f *Fake, body []byte) (smithy.Serializable, *smithy.Schema, error) {
		in, err := decode[In](body)
		if err != nil {
			return nil, nil, err
		}
		out, err := call(f, ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return out, schema, nil
	}
}

// ops are the operations the fake serves on the wire.
var ops = map[string]op{
	"CreateStream":          serve(schemas.CreateStream, (*Fake).CreateStream),
	"DeleteStream":          serve(schemas.DeleteStream, (*Fake).DeleteStream),
	"DescribeStreamSummary": serve(schemas.DescribeStreamSummary, (*Fake).DescribeStreamSummary),
	"DescribeLimits":        serve(schemas.DescribeLimits, (*Fake).DescribeLimits),
	"ListStreams":           serve(schemas.ListStreams, (*Fake).ListStreams),
	"ListShards":            serve(schemas.ListShards, (*Fake).ListShards),
	"GetShardIterator":      serve(schemas.GetShardIterator, (*Fake).GetShardIterator),
	"GetRecords":            serve(schemas.GetRecords, (*Fake).GetRecords),
	"PutRecord":             serve(schemas.PutRecord, (*Fake).PutRecord),
	"PutRecords":            serve(schemas.PutRecords, (*Fake).PutRecords),
	"SplitShard":            serve(schemas.SplitShard, (*Fake).SplitShard),
	"MergeShards":           serve(schemas.MergeShards, (*Fake).MergeShards),
	"UpdateShardCount":      serve(schemas.UpdateShardCount, (*Fake).UpdateShardCount),

	"IncreaseStreamRetentionPeriod": serve(schemas.IncreaseStreamRetentionPeriod, (*Fake).IncreaseStreamRetentionPeriod),
	"DecreaseStreamRetentionPeriod": serve(schemas.DecreaseStreamRetentionPeriod, (*Fake).DecreaseStreamRetentionPeriod),

	"RegisterStreamConsumer":   serve(schemas.RegisterStreamConsumer, (*Fake).RegisterStreamConsumer),
	"DescribeStreamConsumer":   serve(schemas.DescribeStreamConsumer, (*Fake).DescribeStreamConsumer),
	"ListStreamConsumers":      serve(schemas.ListStreamConsumers, (*Fake).ListStreamConsumers),
	"DeregisterStreamConsumer": serve(schemas.DeregisterStreamConsumer, (*Fake).DeregisterStreamConsumer),
}

// Handler serves the fake over HTTP in the Kinesis wire protocol. Any
// credentials and any signature are accepted. A request the fake cannot
// take (a malformed body, an unknown operation) gets the service's error
// shape; a failure of the fake itself is a 500 InternalFailure, never a
// crash of the server.
func (f *Fake) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				writeError(w, http.StatusInternalServerError, "InternalFailure", fmt.Sprintf("the fake failed on this request: %v", p))
			}
		}()
		name, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
		serveOp := ops[name]
		switch {
		case r.Method != http.MethodPost:
			writeError(w, http.StatusBadRequest, "UnknownOperationException", "the Kinesis API takes POST requests only")
			return
		case ok && name == "SubscribeToShard":
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				writeError(w, http.StatusBadRequest, "SerializationException", "cannot read the request: "+err.Error())
				return
			}
			f.serveSubscribe(w, r, body)
			return
		case !ok || serveOp == nil:
			writeError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("operation %q is not served by this fake Kinesis", r.Header.Get("X-Amz-Target")))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, "SerializationException", "cannot read the request: "+err.Error())
			return
		}
		if len(body) > maxRequestBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "SerializationException", fmt.Sprintf("the request is larger than %d bytes", maxRequestBytes))
			return
		}
		out, schema, err := serveOp(r.Context(), f, body)
		if err != nil {
			writeAPIError(w, err)
			return
		}
		b, err := encode(r.Context(), schema, out)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalFailure", "cannot encode the answer: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", jsonType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
	})
}

// writeAPIError answers with the error's code and message: a 5xx when
// the fault is the service's, a 4xx otherwise.
func writeAPIError(w http.ResponseWriter, err error) {
	var api smithy.APIError
	switch {
	case errors.As(err, &api):
		status := http.StatusBadRequest
		if api.ErrorFault() == smithy.FaultServer {
			status = http.StatusInternalServerError
		}
		writeError(w, status, api.ErrorCode(), api.ErrorMessage())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "InternalFailure", err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{code, msg})
	w.Header().Set("Content-Type", jsonType)
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// malformed is the service's answer to a body it cannot read.
func malformed(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "SerializationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// timeMembers are the input members that hold timestamps (epoch seconds on
// the wire, time.Time in the SDK's types).
var timeMembers = map[string]bool{"Timestamp": true, "StreamCreationTimestamp": true}

// decode reads a JSON input document into the SDK's input type.
func decode[T any](body []byte) (*T, error) {
	v := new(T)
	if len(bytes.TrimSpace(body)) == 0 {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, malformed("the request body is not JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, malformed("the request body is not a JSON object")
	}
	if err := epochToRFC3339(doc); err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, malformed("%v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, malformed("member %s is %s, not the API's type", te.Field, te.Value)
		}
		return nil, malformed("%v", err)
	}
	return v, nil
}

// epochToRFC3339 rewrites the timestamp members of a decoded document from
// epoch seconds to RFC 3339, which encoding/json reads into time.Time.
func epochToRFC3339(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, m := range v {
			if n, ok := m.(json.Number); ok && timeMembers[k] {
				sec, err := n.Float64()
				if err != nil {
					return malformed("member %s is not a number of seconds: %v", k, err)
				}
				v[k] = time.UnixMilli(int64(sec * 1000)).UTC().Format(time.RFC3339Nano)
				continue
			}
			if err := epochToRFC3339(m); err != nil {
				return err
			}
		}
	case []any:
		for _, m := range v {
			if err := epochToRFC3339(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// wireProtocol is the SDK's own AWS JSON 1.1 protocol for Kinesis: its
// request serializer writes any shape as the JSON document the wire
// carries, which is how outputs are written here.
var wireProtocol = awsjson.New11(schemas.Kinesis_20131202)

// encode writes an output as the JSON document the service sends.
func encode(ctx context.Context, schema *smithy.Schema, out smithy.Serializable) ([]byte, error) {
	req, ok := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	if !ok {
		return nil, errors.New("the SDK's request type changed")
	}
	if err := wireProtocol.SerializeRequest(ctx, smithy.NewOperationSchema(schema, schema, nil), out, req); err != nil {
		return nil, err
	}
	s := req.GetStream()
	if s == nil {
		return []byte("{}"), nil
	}
	return io.ReadAll(s)
}

// Transport is an http.RoundTripper that serves every request in process,
// for an SDK client in tests: no port, no connection. The answer's body is
// a pipe from the handler, so an event stream (SubscribeToShard) flows as
// it is written, and closing the body ends it.
func (f *Fake) Transport() http.RoundTripper { return roundTripper{f.Handler()} }

type roundTripper struct{ h http.Handler }

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // an answer with no body
			_ = pw.Close()
			if r.Body != nil {
				_ = r.Body.Close()
			}
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-r.Context().Done():
		_ = pr.CloseWithError(r.Context().Err())
		return nil, r.Context().Err()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: pr, ContentLength: -1, Request: r,
	}, nil
}

// pipeWriter is the ResponseWriter of an in-process call: the status and
// headers are the answer's once WriteHeader is called, the body goes
// through the pipe.
type pipeWriter struct {
	header http.Header
	status int
	ready  chan struct{}
	once   sync.Once
	pw     *io.PipeWriter
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush makes it an http.Flusher: the pipe has no buffer to flush.
func (w *pipeWriter) Flush() {}
