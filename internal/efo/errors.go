package efo

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
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
	Err         error         // the last refusal
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("consumer %s is already reading shard %s somewhere else (%s for %s): "+
		"are two tails using consumer %s? Give each its own --consumer name", e.Consumer, e.ShardID, e.Code(), e.For.Round(time.Second), e.Consumer)
}

// Code is the service's error code of the refusals.
func (e *InUseError) Code() string {
	if c := awserr.Classify(e.Err).Code; c != "" {
		return c
	}
	return "in use"
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
	kindInUse             // in use (awserr.InUse): wait and ask again, up to InUseTimeout
	kindThrottled         // throttled or limit exceeded: back off longer
	kindTransient         // 5xx, network, a dropped or stalled stream: back off, re-subscribe
)

func classify(err error) errKind {
	if errors.Is(err, errCallTimeout) || errors.Is(err, errIdle) || errors.Is(err, errSubscriptionTimeout) {
		return kindTransient
	}
	switch awserr.Of(err) {
	case awserr.InUse:
		return kindInUse
	case awserr.LimitExceeded, awserr.Throttled:
		return kindThrottled
	case awserr.Transient, awserr.Undecodable, awserr.Canceled:
		// An event stream cut mid-frame does not decode: a dropped
		// stream, subscribed again. So is a call canceled while the
		// reader's own context lives (Run returns when that one ends).
		return kindTransient
	}
	return kindFatal
}
