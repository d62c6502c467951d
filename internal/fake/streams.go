package fake

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// StreamPages serves ListStreams from a sorted list of names, in pages of
// PageSize (or the call's Limit), the way AWS pages it (summaries and
// names, NextToken) or, with Kinesalite, the way kinesalite does (names
// only, HasMoreStreams, ExclusiveStartStreamName). Summaries are ACTIVE,
// every second one ON_DEMAND, the others PROVISIONED.
type StreamPages struct {
	Names      []string
	PageSize   int
	Kinesalite bool
	// Before runs ahead of call n (1-based); a non-nil output or error is
	// the answer instead of the page.
	Before func(ctx context.Context, n int) (*kinesis.ListStreamsOutput, error)
	// Inputs are the inputs received, in order.
	Inputs []kinesis.ListStreamsInput
}

// ListStreams answers one page.
func (p *StreamPages) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, _ ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	p.Inputs = append(p.Inputs, *in)
	if p.Before != nil {
		if out, err := p.Before(ctx, len(p.Inputs)); out != nil || err != nil {
			return out, err
		}
	}
	size := p.PageSize
	if in.Limit != nil {
		size = int(*in.Limit)
	}
	start := 0
	switch {
	case in.NextToken != nil:
		start, _ = strconv.Atoi(*in.NextToken)
	case in.ExclusiveStartStreamName != nil:
		start = len(p.Names)
		for i, n := range p.Names {
			if n > *in.ExclusiveStartStreamName {
				start = i
				break
			}
		}
	}
	end := min(start+size, len(p.Names))
	out := &kinesis.ListStreamsOutput{HasMoreStreams: aws.Bool(end < len(p.Names))}
	for i, n := range p.Names[start:end] {
		if !p.Kinesalite {
			mode := types.StreamModeProvisioned
			if (start+i)%2 == 1 {
				mode = types.StreamModeOnDemand
			}
			out.StreamSummaries = append(out.StreamSummaries, types.StreamSummary{
				StreamName:        aws.String(n),
				StreamARN:         aws.String("arn:aws:kinesis:us-east-1:123456789012:stream/" + n),
				StreamStatus:      types.StreamStatusActive,
				StreamModeDetails: &types.StreamModeDetails{StreamMode: mode},
			})
		}
		out.StreamNames = append(out.StreamNames, n) // the service sends both
	}
	if end < len(p.Names) && !p.Kinesalite {
		out.NextToken = aws.String(strconv.Itoa(end))
	}
	return out, nil
}
