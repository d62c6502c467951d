package awserr

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/aws/smithy-go"
)

// Kind is what a failed call means.
type Kind int

const (
	// Other is an error this package does not know: not retried.
	Other Kind = iota
	// Canceled: the caller's context ended (Ctrl-C, a shutdown).
	Canceled
	// Throttled: a data-plane rate refused (a shard's read or write quota,
	// KMS, a DynamoDB table's capacity, a service's request rate). Asking
	// again later succeeds.
	Throttled
	// LimitExceeded: Kinesis's LimitExceededException, which is a control
	// plane's rate on a read-only call (a moment's crowd) but a quota or a
	// daily limit on a call that changes a stream (report it at once).
	LimitExceeded
	// ExpiredIterator: a shard iterator older than five minutes.
	ExpiredIterator
	// Transient: the server failed (5xx), the connection dropped or was
	// reset, or one call passed its own deadline: asking again may mend it.
	Transient
	// Undecodable: an answer that could not be decoded (a body cut short,
	// an answer that is not the API's). A stream of events cut mid-frame
	// is transient; a whole answer that is not the API's is not.
	Undecodable
	// NotFound: the stream, shard, consumer or table does not exist.
	NotFound
	// InUse: the resource is busy (being created, updated or deleted; a
	// consumer already subscribed to the shard; a table that exists).
	InUse
	// AccessDenied: the credentials may not do this.
	AccessDenied
	// Invalid: the service rejected the request itself.
	Invalid
	// ConditionFailed: a conditional write lost (DynamoDB).
	ConditionFailed
	// Credentials: no usable credentials, or rejected ones.
	Credentials
	// Unsupported: the endpoint does not implement the operation (an
	// emulator, a proxy).
	Unsupported
)

var kindNames = [...]string{"other", "canceled", "throttled", "limit exceeded", "expired iterator", "transient", "undecodable", "not found", "in use", "access denied", "invalid", "condition failed", "credentials", "unsupported"}

func (k Kind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// codes are the services' error codes, by what they mean. Kinesis and
// DynamoDB share most names (ResourceNotFoundException, ...); the SDK's
// typed exceptions answer ErrorCode() with these names, and so does an
// error decoded from an emulator's answer.
var codes = map[string]Kind{
	// Throttled.
	"ProvisionedThroughputExceededException": Throttled, // Kinesis shard, DynamoDB table
	"KMSThrottlingException":                 Throttled,
	"ThrottlingException":                    Throttled, // DynamoDB control plane, CloudWatch, Lambda
	"Throttling":                             Throttled, // query-protocol services
	"ThrottledException":                     Throttled,
	"TooManyRequestsException":               Throttled, // Lambda
	"RequestLimitExceeded":                   Throttled, // DynamoDB account rate
	"RequestThrottledException":              Throttled,
	"SlowDown":                               Throttled,

	"LimitExceededException": LimitExceeded,

	"ExpiredIteratorException": ExpiredIterator,
	codeExpiredNextToken:       Invalid, // a ListShards token past its 300 s: see ExpiredToken

	// Transient: the server's failures.
	"InternalFailure":              Transient,
	"InternalFailureException":     Transient,
	"InternalServerError":          Transient, // DynamoDB
	"InternalServerErrorException": Transient,
	"ServiceUnavailable":           Transient,
	"ServiceUnavailableException":  Transient,
	"RequestTimeout":               Transient,
	"RequestTimeoutException":      Transient,
	"TransactionConflictException": Transient, // DynamoDB: another transaction on the item

	"ResourceNotFoundException": NotFound,
	"ResourceInUseException":    InUse,

	"AccessDeniedException":    AccessDenied,
	"AccessDenied":             AccessDenied,
	"UnauthorizedOperation":    AccessDenied,
	"KMSAccessDeniedException": AccessDenied,

	"InvalidArgumentException": Invalid,
	"ValidationException":      Invalid,
	"SerializationException":   Invalid,

	"ConditionalCheckFailedException": ConditionFailed,

	"UnrecognizedClientException":         Credentials,
	"InvalidSignatureException":           Credentials,
	"IncompleteSignature":                 Credentials,
	"ExpiredTokenException":               Credentials,
	"InvalidClientTokenId":                Credentials,
	"MissingAuthenticationTokenException": Credentials,

	"UnknownOperationException": Unsupported,
	"UnknownOperation":          Unsupported,
	"InvalidAction":             Unsupported,
}

// Class is a classified error: its Kind and what the service said.
type Class struct {
	Kind      Kind
	Code      string // the service's error code ("" without one)
	Message   string // the service's message
	Status    int    // the HTTP status (0 without an answer)
	RequestID string // the service's request id ("" without one)
	Service   string // "Kinesis", "DynamoDB", … ("" when unknown)
	Operation string // "GetRecords", … ("" when unknown)
}

// Classify says what err means. A nil error is Other with nothing set.
func Classify(err error) Class {
	var c Class
	if err == nil {
		return c
	}
	var op *smithy.OperationError
	if errors.As(err, &op) {
		c.Service, c.Operation = op.Service(), op.Operation()
	}
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		c.Status = st.HTTPStatusCode()
	}
	var rid interface{ ServiceRequestID() string }
	if errors.As(err, &rid) {
		c.RequestID = rid.ServiceRequestID()
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != sdkUnknownCode {
		c.Code, c.Message = api.ErrorCode(), api.ErrorMessage()
	}
	c.Kind = kindOf(err, c, api)
	return c
}

// sdkUnknownCode is the code the SDK gives an error answer it could not
// read one from: not the service's, so Class.Code stays "".
const sdkUnknownCode = "UnknownError"

func kindOf(err error, c Class, api smithy.APIError) Kind {
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	if k, ok := codes[c.Code]; ok {
		return k
	}
	switch {
	case c.Status >= 500:
		return Transient
	case api != nil && api.ErrorFault() == smithy.FaultServer && c.Code != "":
		return Transient
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Transient
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return Transient
	}
	// Connection errors the SDK wraps without a net.Error (reset, refused).
	var ce interface{ ConnectionError() bool }
	if errors.As(err, &ce) && ce.ConnectionError() {
		return Transient
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) || api != nil && c.Code == "" {
		return Undecodable
	}
	return Other
}

// Of is Classify(err).Kind.
func Of(err error) Kind { return Classify(err).Kind }

// Is reports whether err is of one of the kinds.
func Is(err error, kinds ...Kind) bool {
	k := Of(err)
	for _, want := range kinds {
		if k == want {
			return true
		}
	}
	return false
}

// MayHaveTakenEffect reports whether a failed call that changes something
// (PutRecords, CreateStream, a reshard) may have taken effect all the
// same: it got no answer (a dropped connection, a timeout) or a 5xx. A 4xx
// answer is a refusal; a canceled call is the caller's own doing.
func MayHaveTakenEffect(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() > 0 {
		return re.HTTPStatusCode() >= 500
	}
	var api smithy.APIError
	return !errors.As(err, &api) || api.ErrorFault() == smithy.FaultServer
}

// codeExpiredNextToken is a ListShards NextToken older than its 300 s.
const codeExpiredNextToken = "ExpiredNextTokenException"

// ExpiredToken reports whether err is a paging token that outlived its
// 300 s: a refusal of that request (Invalid, worded as such), but one a
// listing mends by starting again from its first page.
func ExpiredToken(err error) bool { return Classify(err).Code == codeExpiredNextToken }
