package awserr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestClassify(t *testing.T) {
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "Kinesis", OperationName: "GetRecords", Err: err}
	}
	for _, tc := range []struct {
		name string
		err  error
		want Kind
	}{
		{"kinesis throttle", op(&types.ProvisionedThroughputExceededException{}), Throttled},
		{"kms throttle", &types.KMSThrottlingException{}, Throttled},
		{"dynamodb throttle", &ddbtypes.ProvisionedThroughputExceededException{}, Throttled},
		{"dynamodb request limit", &ddbtypes.RequestLimitExceeded{}, Throttled},
		{"generic Throttling", &smithy.GenericAPIError{Code: "ThrottlingException"}, Throttled},
		{"limit", op(&types.LimitExceededException{}), LimitExceeded},
		{"expired iterator", op(&types.ExpiredIteratorException{}), ExpiredIterator},
		{"internal failure", &types.InternalFailureException{}, Transient},
		{"emulator's internal failure", &smithy.GenericAPIError{Code: "InternalFailure"}, Transient},
		{"dynamodb 500", &ddbtypes.InternalServerError{}, Transient},
		{"server fault of another code", &smithy.GenericAPIError{Code: "SomethingBroke", Fault: smithy.FaultServer}, Transient},
		{"deadline of one call", fmt.Errorf("get records: %w", context.DeadlineExceeded), Transient},
		{"body cut short", io.ErrUnexpectedEOF, Transient},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, Transient},
		{"undecodable", &smithy.DeserializationError{Err: errors.New("bad json")}, Undecodable},
		{"not found", op(&types.ResourceNotFoundException{}), NotFound},
		{"dynamodb table not found", &ddbtypes.ResourceNotFoundException{}, NotFound},
		{"in use", &types.ResourceInUseException{}, InUse},
		{"denied", &types.AccessDeniedException{}, AccessDenied},
		{"invalid", &types.InvalidArgumentException{}, Invalid},
		{"validation", &smithy.GenericAPIError{Code: "ValidationException"}, Invalid},
		{"condition", &ddbtypes.ConditionalCheckFailedException{}, ConditionFailed},
		{"unknown client", &smithy.GenericAPIError{Code: "UnrecognizedClientException"}, Credentials},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), Canceled},
		{"unknown code", &smithy.GenericAPIError{Code: "NoSuchThing"}, Other},
		{"plain", errors.New("boom"), Other},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: %v is %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if c := Classify(nil); c != (Class{}) {
		t.Errorf("Classify(nil) = %+v", c)
	}
	if !Is(&types.KMSThrottlingException{}, ExpiredIterator, Throttled) || Is(&types.KMSThrottlingException{}, Transient) {
		t.Error("Is does not follow Of")
	}
}

// What a real SDK call's error carries: the status, the code, the request
// id, the service and the operation; a 5xx without the API's form is the
// server's failure, another answer without it is undecodable.
func TestClassifyAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   Class
	}{
		{"500 of the API", 500, `{"__type":"InternalFailure","message":"oops"}`,
			Class{Kind: Transient, Code: "InternalFailure", Message: "oops", Status: 500, RequestID: "rid-1", Service: "Kinesis", Operation: "ListShards"}},
		{"400 throttle", 400, `{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded"}`,
			Class{Kind: Throttled, Code: "ProvisionedThroughputExceededException", Message: "Rate exceeded", Status: 400, RequestID: "rid-1", Service: "Kinesis", Operation: "ListShards"}},
		{"502 of a proxy", 502, `<html>bad gateway</html>`,
			Class{Kind: Transient, Status: 502, RequestID: "rid-1", Service: "Kinesis", Operation: "ListShards"}},
		{"404 of a web server", 404, `<html>not found</html>`,
			Class{Kind: Undecodable, Status: 404, RequestID: "rid-1", Service: "Kinesis", Operation: "ListShards"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("x-amzn-RequestId", "rid-1")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := kinesis.New(kinesis.Options{
				Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
			})
			_, err := c.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String("s")})
			got := Classify(err)
			if got != tc.want {
				t.Errorf("%v:\n got %+v\nwant %+v", err, got, tc.want)
			}
		})
	}
}

func TestMayHaveTakenEffect(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("answer")}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"canceled", fmt.Errorf("put: %w", context.Canceled), false},
		{"connection reset", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"timeout", context.DeadlineExceeded, true},
		{"a 500", status(500), true},
		{"a 503", status(503), true},
		{"a 400", status(400), false},
		{"a refusal without status", &smithy.GenericAPIError{Code: "InvalidArgumentException", Fault: smithy.FaultClient}, false},
		{"a server fault without status", &smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}, true},
	} {
		if got := MayHaveTakenEffect(tc.err); got != tc.want {
			t.Errorf("%s: MayHaveTakenEffect(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestExpiredToken(t *testing.T) {
	expired := &types.ExpiredNextTokenException{Message: aws.String("The timestamp of the token has expired.")}
	if !ExpiredToken(fmt.Errorf("list shards (page 2): %w", expired)) || Of(expired) != Invalid {
		t.Fatalf("ExpiredToken(%v) false, or kind %v", expired, Of(expired))
	}
	for _, err := range []error{&types.ExpiredIteratorException{}, &types.InvalidArgumentException{}, errors.New("x"), nil} {
		if ExpiredToken(err) {
			t.Errorf("ExpiredToken(%v) = true", err)
		}
	}
}
