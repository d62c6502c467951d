package dynamo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"
)

// The wire. DynamoDB speaks the AWS JSON 1.0 protocol: a POST to / with
// the operation in the X-Amz-Target header ("DynamoDB_20120810.PutItem")
// and the input as a JSON document whose members are named as in the API;
// an attribute value is an object with one member named by its type
// ({"S": "a"}, {"N": "1"}, {"SS": ["a"]}, {"M": {...}}). The answer is the
// output as such a document, with its CRC32 in X-Amz-Crc32 (which the SDK
// checks), or an error {"__type": "com.amazonaws.dynamodb.v20120810#Code",
// "message": text} with a 4xx (the request's fault) or 5xx status.
//
// Inputs are read with encoding/json into the SDK's own input types, but
// for their attribute maps (Item, Key, ExpressionAttributeValues,
// ExclusiveStartKey), whose values are interfaces encoding/json cannot
// fill; those are read here. Outputs are written by the SDK's own shape
// serializer, so what a client reads is what it would read from the
// service.

const (
	targetPrefix = "DynamoDB_20120810."
	jsonType     = "application/x-amz-json-1.0"
	errorPrefix  = "com.amazonaws.dynamodb.v20120810#"
	// maxRequestBytes bounds a request body, as the service does.
	maxRequestBytes = 16 << 20
)

// op serves one operation: decode the body, call the service, and return
// the output with its schema.
type op func(ctx context.Context, s *Service, body []byte) (smithy.Serializable, *smithy.Schema, error)

// serve adapts a Service method to an op.
func serve[In any, Out smithy.Serializable](schema *smithy.Schema, call func(*Service, context.Context, *In, ...func(*dynamodb.Options)) (Out, error)) op {
	return func(ctx context.Context, s *Service, body []byte) (smithy.Serializable, *smithy.Schema, error) {
		in, err := decode[In](body)
		if err != nil {
			return nil, nil, err
		}
		out, err := call(s, ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return out, schema, nil
	}
}

// ops are the operations served on the wire.
var ops = map[string]op{
	"CreateTable":   serve(schemas.CreateTable, (*Service).CreateTable),
	"DescribeTable": serve(schemas.DescribeTable, (*Service).DescribeTable),
	"ListTables":    serve(schemas.ListTables, (*Service).ListTables),
	"DeleteTable":   serve(schemas.DeleteTable, (*Service).DeleteTable),
	"PutItem":       serve(schemas.PutItem, (*Service).PutItem),
	"GetItem":       serve(schemas.GetItem, (*Service).GetItem),
	"UpdateItem":    serve(schemas.UpdateItem, (*Service).UpdateItem),
	"DeleteItem":    serve(schemas.DeleteItem, (*Service).DeleteItem),
	"Scan":          serve(schemas.Scan, (*Service).Scan),
}

// Handler serves the service over HTTP in the DynamoDB wire protocol. Any
// credentials and any signature are accepted. A request it cannot take
// gets the service's error shape; a failure of the fake itself is a 500
// InternalServerError, never a crash of the server.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				writeError(w, http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("the fake failed on this request: %v", p))
			}
		}()
		name, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
		serveOp := ops[name]
		switch {
		case r.Method != http.MethodPost:
			writeError(w, http.StatusBadRequest, "UnknownOperationException", "the DynamoDB API takes POST requests only")
			return
		case !ok || serveOp == nil:
			writeError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("operation %q is not served by this fake DynamoDB", r.Header.Get("X-Amz-Target")))
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
		out, schema, err := serveOp(r.Context(), s, body)
		if err != nil {
			writeAPIError(w, err)
			return
		}
		b, err := encode(r.Context(), schema, out)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalServerError", "cannot encode the answer: "+err.Error())
			return
		}
		write(w, http.StatusOK, b)
	})
}

// writeAPIError answers with the error's code and message: a 4xx when the
// fault is the request's, a 500 otherwise (a hook's plain error too).
func writeAPIError(w http.ResponseWriter, err error) {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorFault() != smithy.FaultServer {
		writeError(w, http.StatusBadRequest, api.ErrorCode(), api.ErrorMessage())
		return
	}
	writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{errorPrefix + code, msg})
	write(w, status, b)
}

func write(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", jsonType)
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// malformed is the service's answer to a body it cannot read.
func malformed(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "SerializationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// attrMapType is the Go type of the members that hold attribute maps.
var attrMapType = reflect.TypeFor[map[string]types.AttributeValue]()

// decode reads a JSON input document into the SDK's input type.
func decode[T any](body []byte) (*T, error) {
	v := new(T)
	if len(bytes.TrimSpace(body)) == 0 {
		return v, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, malformed("the request body is not a JSON object: %v", err)
	}
	rv := reflect.ValueOf(v).Elem()
	for name, raw := range doc {
		f := rv.FieldByName(name)
		switch {
		case !f.IsValid():
			continue
		case name == "Expected" || name == "AttributeUpdates" || name == "ScanFilter":
			return nil, validation("%s (a legacy parameter) is not supported by this fake: use expressions", name)
		case f.Type() != attrMapType:
			continue
		}
		m, err := decodeAttrMap(name, raw)
		if err != nil {
			return nil, err
		}
		f.Set(reflect.ValueOf(m))
		delete(doc, name)
	}
	rest, err := json.Marshal(doc)
	if err != nil {
		return nil, malformed("%v", err)
	}
	if err := json.Unmarshal(rest, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, malformed("member %s is %s, not the API's type", te.Field, te.Value)
		}
		return nil, malformed("%v", err)
	}
	return v, nil
}

// decodeAttrMap reads a map of attribute values (null: none).
func decodeAttrMap(member string, raw json.RawMessage) (map[string]types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, malformed("member %s is not a map of attribute values", member)
	}
	if m == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, raw := range m {
		v, err := decodeValue(member+"."+k, raw)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// decodeValue reads one attribute value: an object with one member, its
// type.
func decodeValue(at string, raw json.RawMessage) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, malformed("%s is not an attribute value (an object such as {\"S\": \"text\"})", at)
	}
	if len(m) != 1 {
		return nil, validation("Supplied AttributeValue has %d datatypes set, must contain exactly one of the supported datatypes (at %s)", len(m), at)
	}
	var typ string
	for k, r := range m {
		typ, raw = k, r
	}
	read := func(dst any) error {
		if err := json.Unmarshal(raw, dst); err != nil {
			return malformed("%s: the %s value is not of its type: %v", at, typ, err)
		}
		return nil
	}
	var v types.AttributeValue
	var err error
	switch typ {
	case "S":
		var s string
		err = read(&s)
		v = &types.AttributeValueMemberS{Value: s}
	case "N":
		var s string
		err = read(&s)
		v = &types.AttributeValueMemberN{Value: s}
	case "B":
		var b []byte // base64 on the wire
		err = read(&b)
		v = &types.AttributeValueMemberB{Value: b}
	case "BOOL":
		var b bool
		err = read(&b)
		v = &types.AttributeValueMemberBOOL{Value: b}
	case "NULL":
		var b bool
		if err = read(&b); err == nil && !b {
			err = validation("One or more parameter values were invalid: Null attribute value types must have the value of true (at %s)", at)
		}
		v = &types.AttributeValueMemberNULL{Value: true}
	case "SS":
		var ss []string
		err = read(&ss)
		v = &types.AttributeValueMemberSS{Value: ss}
	case "NS":
		var ns []string
		err = read(&ns)
		v = &types.AttributeValueMemberNS{Value: ns}
	case "BS":
		var bs [][]byte
		err = read(&bs)
		v = &types.AttributeValueMemberBS{Value: bs}
	case "L":
		var raws []json.RawMessage
		err = read(&raws)
		l := &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
		for i := 0; err == nil && i < len(raws); i++ {
			var e types.AttributeValue
			if e, err = decodeValue(fmt.Sprintf("%s[%d]", at, i), raws[i]); err == nil {
				l.Value = append(l.Value, e)
			}
		}
		v = l
	case "M":
		var mv map[string]types.AttributeValue
		if mv, err = decodeAttrMap(at, raw); err == nil && mv == nil {
			mv = map[string]types.AttributeValue{}
		}
		v = &types.AttributeValueMemberM{Value: mv}
	default:
		err = malformed("%s: %q is not an attribute value type (S, N, B, BOOL, NULL, SS, NS, BS, L, M)", at, typ)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// wireProtocol is the SDK's own AWS JSON 1.0 protocol for DynamoDB: its
// request serializer writes any shape as the JSON document the wire
// carries, which is how outputs are written here.
var wireProtocol = awsjson.New10(schemas.DynamoDB_20120810)

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
// for an SDK client in tests: no port, no connection.
func (s *Service) Transport() http.RoundTripper { return roundTripper{s.Handler()} }

type roundTripper struct{ h http.Handler }

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer r.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err // the caller gave up: its answer is its context's error, as from a connection
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
