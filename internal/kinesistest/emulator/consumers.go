package emulator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// StreamARN returns the ARN of a stream (consumers are registered by ARN).
func (e *Emulator) StreamARN(t testing.TB, c *kinesis.Client, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
	if err != nil {
		t.Fatalf("describe stream %s: %v", name, err)
	}
	return aws.ToString(out.StreamDescriptionSummary.StreamARN)
}

// RegisterConsumer registers a consumer of the stream, waits until it is
// ACTIVE and returns it; DeregisterAtEnd removes it when the test ends. It
// skips the test on a backend without consumers.
func (e *Emulator) RegisterConsumer(t testing.TB, c *kinesis.Client, streamARN, name string) types.Consumer {
	t.Helper()
	if !e.Caps.Consumers {
		t.Skipf("emulator: %s has no stream consumers", e.Backend)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitMax)
	defer cancel()
	out, err := c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(streamARN), ConsumerName: aws.String(name)})
	if err != nil {
		t.Fatalf("register consumer %s: %v", name, err)
	}
	e.DeregisterAtEnd(t, c, streamARN, name)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: out.Consumer.ConsumerARN})
		if err != nil {
			t.Fatalf("describe consumer %s: %v", name, err)
		}
		if d.ConsumerDescription.ConsumerStatus == types.ConsumerStatusActive {
			cd := d.ConsumerDescription
			return types.Consumer{ConsumerARN: cd.ConsumerARN, ConsumerName: cd.ConsumerName, ConsumerStatus: cd.ConsumerStatus, ConsumerCreationTimestamp: cd.ConsumerCreationTimestamp}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer %s is still %s", name, d.ConsumerDescription.ConsumerStatus)
		case <-tick.C:
		}
	}
}

// DeregisterAtEnd deregisters the named consumer when the test ends, if it
// is still there, and waits until it is gone; a consumer left behind fails
// the test. Use it for consumers the code under test registers.
func (e *Emulator) DeregisterAtEnd(t testing.TB, c *kinesis.Client, streamARN, name string) {
	t.Helper()
	t.Cleanup(func() {
		if err := deregisterAndWait(c, streamARN, name); err != nil {
			t.Errorf("consumer %s left registered: %v", name, err)
		}
	})
}

func deregisterAndWait(c *kinesis.Client, streamARN, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	var nf *types.ResourceNotFoundException
	_, err := c.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{StreamARN: aws.String(streamARN), ConsumerName: aws.String(name)})
	if err != nil && !errors.As(err, &nf) {
		return err
	}
	for {
		d, err := c.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{StreamARN: aws.String(streamARN), ConsumerName: aws.String(name)})
		if errors.As(err, &nf) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still %s", d.ConsumerDescription.ConsumerStatus)
		case <-time.After(pollEvery):
		}
	}
}
