package awscall

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// The SDK's retryer: how many times one call is sent at most (the first
// included) for the transient failures it rides out, and its longest wait.
const (
	SDKAttempts   = 3
	sdkMaxBackoff = 2 * time.Second
)

// KinesisRetryer is the Kinesis client's retryer. It keeps the SDK's
// retries for 5xx and connection errors but lets throttling and
// LimitExceeded through at once: a shard's throttle is its Pacer's, a
// crowded control plane Do's, and a daily UpdateShardCount limit or an
// account quota must reach the user now, not after a minute of silent
// retries. No shared retry budget either: one busy shard must not starve
// the others.
func KinesisRetryer() aws.Retryer {
	noThrottle := retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
		if awserr.Is(err, awserr.Throttled, awserr.LimitExceeded) {
			return aws.FalseTernary
		}
		return aws.UnknownTernary
	})
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.Retryables = append([]retry.IsErrorRetryable{noThrottle}, so.Retryables...)
		so.RateLimiter = ratelimit.None
		so.MaxAttempts = SDKAttempts
		so.MaxBackoff = sdkMaxBackoff
	})
}

// DynamoRetryer is the lease table client's: it also retries a throttled
// table (its calls are few, and a renewal that rides out a busy second
// keeps the lease), with the same attempts and no shared budget.
func DynamoRetryer() aws.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.RateLimiter = ratelimit.None
		so.MaxAttempts = SDKAttempts
		so.MaxBackoff = sdkMaxBackoff
	})
}

// Once makes the SDK send a call once: a reader of shards decides every
// attempt itself, so each goes through its Pacer and none is retried
// behind its back or charged to a budget shared by all shards.
func Once(o *kinesis.Options) { o.RetryMaxAttempts = 1 }

// NoQuotaRetries makes a Change call's retryer give up on LimitExceeded,
// whatever the client's retryer is (the SDK's default one retries it): a
// daily quota or an account limit reaches the user at once.
func NoQuotaRetries(o *kinesis.Options) {
	if o.Retryer != nil {
		o.Retryer = quotaNotRetried{o.Retryer}
	}
}

type quotaNotRetried struct{ aws.Retryer }

func (r quotaNotRetried) IsErrorRetryable(err error) bool {
	return awserr.Of(err) != awserr.LimitExceeded && r.Retryer.IsErrorRetryable(err)
}

// GetAttemptToken keeps the inner retryer's rate limiting (aws.RetryerV2).
func (r quotaNotRetried) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}
