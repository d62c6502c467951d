package kstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// ConsumerAPI is the part of the Kinesis client the consumer lifecycle
// uses (enhanced fan-out; docs/KINESIS-NOTES.md §8).
type ConsumerAPI interface {
	RegisterStreamConsumer(ctx context.Context, in *kinesis.RegisterStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.RegisterStreamConsumerOutput, error)
	DescribeStreamConsumer(ctx context.Context, in *kinesis.DescribeStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error)
	ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error)
	DeregisterStreamConsumer(ctx context.Context, in *kinesis.DeregisterStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DeregisterStreamConsumerOutput, error)
}

// Consumer is a registered consumer of a stream.
type Consumer struct {
	Name    string
	ARN     string
	Status  types.ConsumerStatus
	Created time.Time
}

// MaxConsumers is how many consumers a stream can have (more with
// On-demand Advantage, which the service then reports in its own error).
const MaxConsumers = 20

// consumerCallTimeout bounds each consumer call, whatever the client does.
const consumerCallTimeout = 20 * time.Second

var (
	// ErrBadConsumerName marks a name the service would refuse.
	ErrBadConsumerName = errors.New("invalid consumer name")
	// ErrConsumerNotFound is what a *ConsumerNotFoundError is.
	ErrConsumerNotFound = errors.New("consumer not found")
	// ErrConsumerLimit is what a *ConsumerLimitError is.
	ErrConsumerLimit = errors.New("too many consumers")
	// ErrConsumerDeleting: the consumer is being deregistered.
	ErrConsumerDeleting = errors.New("consumer is being deregistered")
)

var consumerNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// ValidateConsumerName checks a name against the service's rule: 1 to 128
// characters of a-z, A-Z, 0-9, _ . and -.
func ValidateConsumerName(name string) error {
	if !consumerNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q is not 1 to 128 characters of a-z, A-Z, 0-9, _ . -", ErrBadConsumerName, name)
	}
	return nil
}

// DefaultConsumerName is the consumer name for a user on a host:
// "kinesis-shards-<user>-<host>", every character the service does not
// allow replaced by '-', at most 128 characters. The same user and host
// always give the same name, so a run that was killed before it could
// deregister its consumer leaves one the next run reuses.
func DefaultConsumerName(user, host string) string {
	clean := func(s, empty string) string {
		s = strings.Map(func(r rune) rune {
			if r < 128 && (r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return r
			}
			return '-'
		}, s)
		if strings.Trim(s, "-") == "" {
			return empty
		}
		return s
	}
	name := "kinesis-shards-" + clean(user, "user") + "-" + clean(host, "host")
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// ConsumerNotFoundError says a stream has no consumer of that name.
type ConsumerNotFoundError struct{ Stream, Name string }

func (e *ConsumerNotFoundError) Error() string {
	return fmt.Sprintf("stream %s has no consumer named %q", e.Stream, e.Name)
}

// Is makes errors.Is(err, ErrConsumerNotFound) true.
func (e *ConsumerNotFoundError) Is(target error) bool { return target == ErrConsumerNotFound }

// ConsumerLimitError says a stream has as many consumers as it can have,
// and which.
type ConsumerLimitError struct {
	Stream    string
	Consumers []Consumer
	Code      string // the service's error code
}

func (e *ConsumerLimitError) Error() string {
	names := make([]string, len(e.Consumers))
	for i, c := range e.Consumers {
		names[i] = c.Name
	}
	return fmt.Sprintf("stream %s already has %d consumers, the most a stream can have (%s): %s; deregister one to make room",
		e.Stream, len(e.Consumers), e.Code, strings.Join(names, ", "))
}

// Is makes errors.Is(err, ErrConsumerLimit) true. The SDK's exception is
// not unwrapped: this sentence is the whole story.
func (e *ConsumerLimitError) Is(target error) bool { return target == ErrConsumerLimit }

// ConsumerTimeoutError says a consumer did not reach the state waited for.
type ConsumerTimeoutError struct {
	Stream, Name string
	Status       types.ConsumerStatus
	Timeout      time.Duration
}

func (e *ConsumerTimeoutError) Error() string {
	return fmt.Sprintf("consumer %s of stream %s is still %s after %s", e.Name, e.Stream, e.Status, e.Timeout)
}

func withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, consumerCallTimeout)
}

func consumerOf(name, arn *string, status types.ConsumerStatus, created *time.Time) *Consumer {
	return &Consumer{Name: aws.ToString(name), ARN: aws.ToString(arn), Status: status, Created: aws.ToTime(created)}
}

// ListConsumers lists every consumer of the stream (ref.ARN must be set),
// all pages, in the service's order.
func ListConsumers(ctx context.Context, api ConsumerAPI, ref Ref) ([]Consumer, error) {
	var list []Consumer
	in := &kinesis.ListStreamConsumersInput{StreamARN: aws.String(ref.ARN)}
	for page := 0; page < 1000; page++ {
		out, err := awscall.Do(ctx, awscall.ListStreamConsumers, func() (*kinesis.ListStreamConsumersOutput, error) {
			cctx, cancel := withCallTimeout(ctx)
			defer cancel()
			return api.ListStreamConsumers(cctx, in)
		})
		if err != nil {
			return nil, fmt.Errorf("list consumers of stream %s: %w", ref, err)
		}
		for _, c := range out.Consumers {
			list = append(list, *consumerOf(c.ConsumerName, c.ConsumerARN, c.ConsumerStatus, c.ConsumerCreationTimestamp))
		}
		if aws.ToString(out.NextToken) == "" {
			return list, nil
		}
		in = &kinesis.ListStreamConsumersInput{StreamARN: aws.String(ref.ARN), NextToken: out.NextToken}
	}
	return nil, fmt.Errorf("list consumers of stream %s: the service kept answering with more pages", ref)
}

// DescribeConsumer describes a consumer of the stream (ref.ARN must be
// set) by name; a missing one is a *ConsumerNotFoundError.
func DescribeConsumer(ctx context.Context, api ConsumerAPI, ref Ref, name string) (*Consumer, error) {
	out, err := awscall.Do(ctx, awscall.DescribeStreamConsumer, func() (*kinesis.DescribeStreamConsumerOutput, error) {
		cctx, cancel := withCallTimeout(ctx)
		defer cancel()
		return api.DescribeStreamConsumer(cctx, &kinesis.DescribeStreamConsumerInput{StreamARN: aws.String(ref.ARN), ConsumerName: aws.String(name)})
	})
	switch {
	case awserr.Of(err) == awserr.NotFound:
		return nil, &ConsumerNotFoundError{Stream: ref.String(), Name: name}
	case err != nil:
		return nil, fmt.Errorf("describe consumer %s of stream %s: %w", name, ref, err)
	case out.ConsumerDescription == nil:
		return nil, fmt.Errorf("describe consumer %s of stream %s: empty answer", name, ref)
	}
	d := out.ConsumerDescription
	return consumerOf(d.ConsumerName, d.ConsumerARN, d.ConsumerStatus, d.ConsumerCreationTimestamp), nil
}

// RegisterConsumer registers a consumer of the stream (ref.ARN must be
// set). A consumer of that name that exists already is returned as it is,
// with created false. A stream with MaxConsumers consumers gives a
// *ConsumerLimitError naming them; another LimitExceeded (more than 5
// calls a second, or 5 consumers CREATING at once) is returned as it is: a
// call that changes the stream reports a limit at once.
func RegisterConsumer(ctx context.Context, api ConsumerAPI, ref Ref, name string) (c *Consumer, created bool, err error) {
	if err := ValidateConsumerName(name); err != nil {
		return nil, false, err
	}
	cctx, cancel := withCallTimeout(ctx)
	out, err := api.RegisterStreamConsumer(cctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(ref.ARN), ConsumerName: aws.String(name)})
	cancel()
	switch {
	case err == nil && out.Consumer != nil:
		o := out.Consumer
		return consumerOf(o.ConsumerName, o.ConsumerARN, o.ConsumerStatus, o.ConsumerCreationTimestamp), true, nil
	case err == nil:
		return nil, false, fmt.Errorf("register consumer %s of stream %s: empty answer", name, ref)
	case awserr.Of(err) == awserr.InUse:
		// The name is taken: that consumer is ours to use.
		c, derr := DescribeConsumer(ctx, api, ref, name)
		return c, false, derr
	case awserr.Of(err) == awserr.LimitExceeded:
		if list, lerr := ListConsumers(ctx, api, ref); lerr == nil && len(list) >= MaxConsumers {
			return nil, false, &ConsumerLimitError{Stream: ref.String(), Consumers: list, Code: awserr.Classify(err).Code}
		}
	}
	return nil, false, fmt.Errorf("register consumer %s of stream %s: %w", name, ref, err)
}

// DeregisterConsumer deregisters a consumer of the stream by name (ref.ARN
// must be set); a missing one is a *ConsumerNotFoundError. The consumer is
// DELETING for a while after: WaitConsumerGone waits for that.
func DeregisterConsumer(ctx context.Context, api ConsumerAPI, ref Ref, name string) error {
	cctx, cancel := withCallTimeout(ctx)
	defer cancel()
	_, err := api.DeregisterStreamConsumer(cctx, &kinesis.DeregisterStreamConsumerInput{StreamARN: aws.String(ref.ARN), ConsumerName: aws.String(name)})
	switch {
	case awserr.Of(err) == awserr.NotFound:
		return &ConsumerNotFoundError{Stream: ref.String(), Name: name}
	case err != nil:
		return fmt.Errorf("deregister consumer %s of stream %s: %w", name, ref, err)
	}
	return nil
}

// ConsumerWaitOptions tune the waits for a consumer. The zero value polls
// at 200 ms, doubling to 2 s, for two minutes (AWS takes seconds to tens of
// seconds to make a consumer ACTIVE; DescribeStreamConsumer allows 20
// calls a second per stream).
type ConsumerWaitOptions struct {
	Timeout  time.Duration // 0: two minutes
	MinDelay time.Duration // 0: 200 ms
	MaxDelay time.Duration // 0: 2 s
	// OnPoll is called after each poll with the status seen ("" once the
	// consumer is gone).
	OnPoll func(status types.ConsumerStatus, elapsed time.Duration)
}

func (o *ConsumerWaitOptions) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.MinDelay <= 0 {
		o.MinDelay = 200 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 2 * time.Second
	}
	o.MaxDelay = max(o.MaxDelay, o.MinDelay)
}

// pollConsumer describes the consumer until done says so, the wait times
// out or a call fails. done sees nil once the consumer is gone.
func pollConsumer(ctx context.Context, api ConsumerAPI, ref Ref, name string, o ConsumerWaitOptions, done func(*Consumer) (bool, error)) (*Consumer, error) {
	o.defaults()
	start := time.Now()
	delay := o.MinDelay
	for {
		c, err := DescribeConsumer(ctx, api, ref, name)
		if err != nil && !errors.Is(err, ErrConsumerNotFound) {
			return nil, err
		}
		var status types.ConsumerStatus
		if c != nil {
			status = c.Status
		}
		if o.OnPoll != nil {
			o.OnPoll(status, time.Since(start))
		}
		if ok, err := done(c); err != nil || ok {
			return c, err
		}
		left := o.Timeout - time.Since(start)
		if left <= 0 {
			return nil, &ConsumerTimeoutError{Stream: ref.String(), Name: name, Status: status, Timeout: o.Timeout}
		}
		if err := awscall.Sleep(ctx, min(delay, left)); err != nil {
			return nil, err
		}
		delay = min(delay*2, o.MaxDelay)
	}
}

// WaitConsumerActive polls until the consumer is ACTIVE and returns it. A
// consumer that is DELETING, or gone, is an error at once.
func WaitConsumerActive(ctx context.Context, api ConsumerAPI, ref Ref, name string, o ConsumerWaitOptions) (*Consumer, error) {
	return pollConsumer(ctx, api, ref, name, o, func(c *Consumer) (bool, error) {
		switch {
		case c == nil:
			return false, &ConsumerNotFoundError{Stream: ref.String(), Name: name}
		case c.Status == types.ConsumerStatusDeleting:
			return false, fmt.Errorf("consumer %s of stream %s: %w", name, ref, ErrConsumerDeleting)
		}
		return c.Status == types.ConsumerStatusActive, nil
	})
}

// WaitConsumerGone polls until the consumer no longer exists.
func WaitConsumerGone(ctx context.Context, api ConsumerAPI, ref Ref, name string, o ConsumerWaitOptions) error {
	_, err := pollConsumer(ctx, api, ref, name, o, func(c *Consumer) (bool, error) { return c == nil, nil })
	return err
}

// EnsureConsumer returns the named consumer ACTIVE, registering it when it
// does not exist (created is then true). One that is CREATING is waited
// for; one that is DELETING is waited out, then registered again.
func EnsureConsumer(ctx context.Context, api ConsumerAPI, ref Ref, name string, o ConsumerWaitOptions) (c *Consumer, created bool, err error) {
	if err := ValidateConsumerName(name); err != nil {
		return nil, false, err
	}
	c, err = DescribeConsumer(ctx, api, ref, name)
	switch {
	case errors.Is(err, ErrConsumerNotFound):
	case err != nil:
		return nil, false, err
	case c.Status == types.ConsumerStatusActive:
		return c, false, nil
	case c.Status == types.ConsumerStatusDeleting:
		if err := WaitConsumerGone(ctx, api, ref, name, o); err != nil {
			return nil, false, err
		}
	default:
		c, err = WaitConsumerActive(ctx, api, ref, name, o)
		return c, false, err
	}
	if c, created, err = RegisterConsumer(ctx, api, ref, name); err != nil {
		return nil, false, err
	}
	if c.Status != types.ConsumerStatusActive {
		c, err = WaitConsumerActive(ctx, api, ref, name, o)
	}
	return c, created, err
}
