package efo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// ErrInUse is what an *InUseError is (errors.Is).
var ErrInUse = errors.New("consumer and shard in use")

// InUseError says the service kept refusing to subscribe a consumer to a
// shard because another subscription of the same consumer and shard was
// active: most likely another process reading with the same consumer.
type InUseError struct {
	Consumer    string // the consumer's name
	ConsumerARN string
	ShardID     string
	For         time.Duration // how long the refusals went on
	Err         error         // the last ResourceInUseException
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("consumer %s is already reading shard %s somewhere else (ResourceInUseException for %s): "+
		"are two tails using consumer %s? Give each its own --consumer name", e.Consumer, e.ShardID, e.For.Round(time.Second), e.Consumer)
}

// Is makes errors.Is(err, ErrInUse) true. The SDK's exception is in Err,
// not unwrapped: the sentence above is the whole story.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// Causes of a subscription's end that the reader makes itself.
var (
	errSubscriptionTimeout = errors.New("the subscription's deadline passed")
	errCallTimeout         = errors.New("SubscribeToShard did not answer in time")
	errIdle                = errors.New("no event came for too long")
	errNoEvent             = errors.New("the subscription ended before any event")
)

// consumerNameRE takes the name out of a consumer ARN
// (arn:…:stream/<stream>/consumer/<name>:<epoch>).
var consumerNameRE = regexp.MustCompile(`/consumer/([^:/]+):[0-9]+$`)

// ConsumerName is the consumer's name in its ARN (the ARN itself when it
// is not a consumer ARN).
func ConsumerName(arn string) string {
	if m := consumerNameRE.FindStringSubmatch(arn); m != nil {
		return m[1]
	}
	return arn
}

// errKind is how the reader treats a failed call or a failed stream.
type errKind int

const (
	kindFatal     errKind = iota
	kindInUse             // ResourceInUseException: wait and ask again, up to InUseTimeout
	kindThrottled         // LimitExceededException, KMSThrottling: back off longer
	kindTransient         // 5xx, network, a dropped or stalled stream: back off, re-subscribe
)

func classify(err error) errKind {
	var (
		riu *types.ResourceInUseException
		lee *types.LimitExceededException
		kms *types.KMSThrottlingException
		ife *types.InternalFailureException
		ae  smithy.APIError
		ne  net.Error
	)
	switch {
	case errors.As(err, &riu):
		return kindInUse
	case errors.As(err, &lee), errors.As(err, &kms):
		return kindThrottled
	case errors.As(err, &ife):
		return kindTransient
	case errors.Is(err, errCallTimeout), errors.Is(err, errIdle), errors.Is(err, errSubscriptionTimeout):
		return kindTransient
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return kindTransient
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return kindTransient
	}
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException", "InternalServerError", "RequestTimeout", "RequestTimeoutException":
			return kindTransient
		}
		if ae.ErrorFault() == smithy.FaultServer {
			return kindTransient
		}
		return kindFatal
	}
	if errors.As(err, &ne) {
		return kindTransient
	}
	// The SDK's connection errors, and a stream that fails to decode
	// (a frame cut short), carry no API error code.
	var ce interface{ ConnectionError() bool }
	if errors.As(err, &ce) && ce.ConnectionError() {
		return kindTransient
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return kindTransient
	}
	return kindFatal
}
