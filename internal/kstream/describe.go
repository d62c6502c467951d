package kstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// DescribeAPI is the part of the Kinesis client Describe and WaitActive use.
type DescribeAPI interface {
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

// Summary is what the tool needs to know about a stream, with the SDK's
// optional fields resolved.
type Summary struct {
	Name           string
	ARN            string
	Status         types.StreamStatus
	Mode           types.StreamMode // "" when the backend does not say (kinesalite): provisioned
	OpenShards     int
	RetentionHours int
	Created        time.Time
	Consumers      int
	Encryption     types.EncryptionType
	// MaxRecordBytes is the largest record (data + partition key) the stream
	// accepts: 1 MiB unless the stream says otherwise.
	MaxRecordBytes int
	// KeyDistribution is RecordDistributionStrategy: "" when the backend
	// does not say, AUTO when the stream ignores partition keys.
	KeyDistribution types.RecordDistributionStrategy
}

// IgnoresPartitionKeys reports whether the stream places records without
// regard to their partition keys and explicit hash keys (an on-demand
// stream with RecordDistributionStrategy AUTO), so a key has no path.
func (s *Summary) IgnoresPartitionKeys() bool {
	return s.KeyDistribution == types.RecordDistributionStrategyAuto
}

// OnDemand reports whether the stream reshards itself.
func (s *Summary) OnDemand() bool { return s.Mode == types.StreamModeOnDemand }

// ModeName is the mode for display; a backend that omits it means PROVISIONED.
func (s *Summary) ModeName() string {
	if s.Mode == "" {
		return string(types.StreamModeProvisioned)
	}
	return string(s.Mode)
}

// Describe calls DescribeStreamSummary, a read-only call under the
// ControlRead rule (awscall.Do).
func Describe(ctx context.Context, api DescribeAPI, ref Ref) (*Summary, error) {
	return awscall.Do(ctx, awscall.DescribeStreamSummary, func() (*Summary, error) { return describeOnce(ctx, api, ref) })
}

// describeOnce makes one DescribeStreamSummary call.
func describeOnce(ctx context.Context, api DescribeAPI, ref Ref) (*Summary, error) {
	in := &kinesis.DescribeStreamSummaryInput{StreamName: ref.NameInput(), StreamARN: ref.ARNInput()}
	out, err := api.DescribeStreamSummary(ctx, in)
	if err != nil {
		return nil, err
	}
	d := out.StreamDescriptionSummary
	if d == nil {
		return nil, fmt.Errorf("describe stream %s: empty response", ref)
	}
	s := &Summary{
		Name:           aws.ToString(d.StreamName),
		ARN:            aws.ToString(d.StreamARN),
		Status:         d.StreamStatus,
		OpenShards:     int(aws.ToInt32(d.OpenShardCount)),
		RetentionHours: int(aws.ToInt32(d.RetentionPeriodHours)),
		Created:        aws.ToTime(d.StreamCreationTimestamp),
		Consumers:      int(aws.ToInt32(d.ConsumerCount)),
		Encryption:     d.EncryptionType,
		MaxRecordBytes: 1 << 20,
	}
	if kib := aws.ToInt32(d.MaxRecordSizeInKiB); kib > 0 {
		s.MaxRecordBytes = int(kib) << 10
	}
	if d.StreamModeDetails != nil {
		s.Mode = d.StreamModeDetails.StreamMode
	}
	s.KeyDistribution = d.RecordDistributionStrategy
	if s.Name == "" {
		s.Name = ref.Name
	}
	return s, nil
}

// ErrDeleting is returned when a stream that should be used or created is
// being deleted.
var ErrDeleting = errors.New("stream is being deleted")

// TimeoutError says a stream did not become ACTIVE in time.
type TimeoutError struct {
	Stream  string
	Status  types.StreamStatus
	Waited  time.Duration
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("stream %s is still %s after %s", e.Stream, e.Status, e.Timeout)
}

// WaitOptions tunes WaitActive. The zero value polls at 100 ms, doubling to
// 2 s, for one minute: quick enough for a stream that is ACTIVE in half a
// second (the SDK waiter's first re-check is at 10 s), cheap enough for
// DescribeStreamSummary's 20 TPS account quota.
type WaitOptions struct {
	Timeout  time.Duration // 0: one minute
	MinDelay time.Duration // 0: 100 ms
	MaxDelay time.Duration // 0: 2 s
	// OnPoll is called after each DescribeStreamSummary with the status seen.
	OnPoll func(status types.StreamStatus, elapsed time.Duration)
	// Sleep is for tests; nil means a context-aware timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o *WaitOptions) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.MinDelay <= 0 {
		o.MinDelay = 100 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 2 * time.Second
	}
	if o.MaxDelay < o.MinDelay {
		o.MaxDelay = o.MinDelay
	}
	if o.Sleep == nil {
		o.Sleep = awscall.Sleep
	}
}

// WaitActive polls until the stream is ACTIVE and returns its summary. A
// stream that is DELETING is an error at once (ErrDeleting), so is one that
// does not exist. Throttled polls (LimitExceeded) only slow the polling
// down: the poll is the retry, so each is one call (no retry inside it).
func WaitActive(ctx context.Context, api DescribeAPI, ref Ref, o WaitOptions) (*Summary, error) {
	o.defaults()
	start := time.Now()
	deadline := start.Add(o.Timeout)
	delay := o.MinDelay
	var last types.StreamStatus
	for {
		s, err := describeOnce(ctx, api, ref)
		switch {
		case err == nil:
			last = s.Status
			if o.OnPoll != nil {
				o.OnPoll(s.Status, time.Since(start))
			}
			switch s.Status {
			case types.StreamStatusActive:
				return s, nil
			case types.StreamStatusDeleting:
				return nil, fmt.Errorf("stream %s: %w", ref, ErrDeleting)
			}
		case awserr.Of(err) == awserr.LimitExceeded:
			delay = min(delay*2, o.MaxDelay)
		default:
			return nil, err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return nil, &TimeoutError{Stream: ref.String(), Status: last, Waited: now.Sub(start), Timeout: o.Timeout}
		}
		if err := o.Sleep(ctx, min(delay, deadline.Sub(now))); err != nil {
			return nil, err
		}
		delay = min(delay*2, o.MaxDelay)
	}
}
