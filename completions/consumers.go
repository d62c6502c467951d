package completions

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/spf13/cobra"
)

// ConsumerAPI is what consumer-name lookups need from the client;
// *kinesis.Client satisfies it.
type ConsumerAPI interface {
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	ListStreamConsumers(ctx context.Context, in *kinesis.ListStreamConsumersInput, optFns ...func(*kinesis.Options)) (*kinesis.ListStreamConsumersOutput, error)
}

var _ ConsumerAPI = (*kinesis.Client)(nil)

// ConsumerClientFunc returns the client for a lookup of a stream's
// consumers (stream is the STREAM argument as typed).
type ConsumerClientFunc func(ctx context.Context, stream string) (ConsumerAPI, error)

// Consumers completes the names of the enhanced fan-out consumers of the
// command's STREAM argument, each described by its status.
func (l *Live) Consumers(client ConsumerClientFunc, stream func(c *cobra.Command, args []string) string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s := stream(c, args)
		if s == "" {
			return nil, liveDirective
		}
		return l.lookup(c, "consumers of "+s, func(ctx context.Context) ([]cobra.Completion, error) {
			api, err := client(ctx, s)
			if err != nil {
				return nil, err
			}
			return consumerCandidates(ctx, api, s, toComplete)
		}), liveDirective
	}
}

// consumerCandidates lists the stream's consumers (the ARN from a name by
// DescribeStreamSummary: consumers are listed by stream ARN) and keeps the
// names that start with prefix, sorted. A listing cut short offers nothing
// rather than a part.
func consumerCandidates(ctx context.Context, api ConsumerAPI, stream, prefix string) ([]cobra.Completion, error) {
	arn := stream
	if !strings.HasPrefix(stream, "arn:") {
		out, err := awscall.Do(ctx, awscall.DescribeStreamSummary, func() (*kinesis.DescribeStreamSummaryOutput, error) {
			return api.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		})
		if err != nil {
			return nil, err
		}
		arn = aws.ToString(out.StreamDescriptionSummary.StreamARN)
	}
	var comps []cobra.Completion
	in := &kinesis.ListStreamConsumersInput{StreamARN: aws.String(arn)}
	for {
		out, err := awscall.Do(ctx, awscall.ListStreamConsumers, func() (*kinesis.ListStreamConsumersOutput, error) { return api.ListStreamConsumers(ctx, in) })
		if err != nil {
			return nil, err
		}
		for _, c := range out.Consumers {
			if name := aws.ToString(c.ConsumerName); strings.HasPrefix(name, prefix) {
				comps = append(comps, withDesc(name, strings.ToLower(string(c.ConsumerStatus))))
			}
		}
		if aws.ToString(out.NextToken) == "" {
			slices.Sort(comps)
			return comps, nil
		}
		in = &kinesis.ListStreamConsumersInput{StreamARN: aws.String(arn), NextToken: out.NextToken}
	}
}
