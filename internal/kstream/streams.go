package kstream

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
)

// maxStreamPages bounds a listing whose backend never stops saying "more".
const maxStreamPages = 100000

// ListStreams yields every stream of the region in the order the service
// lists them (by name), each once, then stops; or yields the error that
// ended the listing, once, after the streams listed before it.
//
// It pages the two ways backends do (docs/KINESIS-NOTES.md §4): by
// NextToken (AWS, kinesis-mock), each later call holding the token alone
// (and the page size); or, where a page says HasMoreStreams without a
// token (kinesalite), by ExclusiveStartStreamName, the last name listed.
// A backend that sends names only (StreamNames, no StreamSummaries) gets
// summaries holding just the name. A token or a start name that comes back
// unchanged would loop forever and ends the listing with an error. Each
// page is one read-only call under the read-retry policy. pageSize is
// ListStreams' Limit (0: the service's default).
func ListStreams(ctx context.Context, api kinesis.ListStreamsAPIClient, pageSize int32) iter.Seq2[types.StreamSummary, error] {
	return func(yield func(types.StreamSummary, error) bool) {
		var limit *int32
		if pageSize > 0 {
			limit = aws.Int32(pageSize)
		}
		in := &kinesis.ListStreamsInput{Limit: limit}
		seen := map[string]bool{}
		last := "" // the last name listed
		for page := 1; page <= maxStreamPages; page++ {
			out, err := awscall.Do(ctx, awscall.ListStreams, func() (*kinesis.ListStreamsOutput, error) {
				return api.ListStreams(ctx, in)
			})
			if err == nil && out == nil {
				err = fmt.Errorf("list streams (page %d): empty response", page)
			}
			if err != nil {
				yield(types.StreamSummary{}, err)
				return
			}
			emit := func(s types.StreamSummary) bool {
				name := aws.ToString(s.StreamName)
				if name == "" || seen[name] {
					return true
				}
				seen[name], last = true, name
				return yield(s, nil)
			}
			for _, s := range out.StreamSummaries {
				if !emit(s) {
					return
				}
			}
			for _, name := range out.StreamNames {
				if !emit(types.StreamSummary{StreamName: aws.String(name)}) {
					return
				}
			}
			next := aws.ToString(out.NextToken)
			switch {
			case next != "" && next == aws.ToString(in.NextToken):
				yield(types.StreamSummary{}, fmt.Errorf("list streams (page %d): the service returned the same NextToken again", page))
				return
			case next != "":
				in = &kinesis.ListStreamsInput{NextToken: aws.String(next), Limit: limit}
			case !aws.ToBool(out.HasMoreStreams):
				return
			case last == "" || last == aws.ToString(in.ExclusiveStartStreamName):
				yield(types.StreamSummary{}, fmt.Errorf("list streams (page %d): the service says there are more streams but lists none after %q", page, last))
				return
			default:
				in = &kinesis.ListStreamsInput{ExclusiveStartStreamName: aws.String(last), Limit: limit}
			}
		}
		yield(types.StreamSummary{}, fmt.Errorf("list streams: still more pages after %d", maxStreamPages))
	}
}

// StreamNames lists the names of every stream of the region, sorted.
func StreamNames(ctx context.Context, api kinesis.ListStreamsAPIClient, pageSize int32) ([]string, error) {
	var names []string
	for s, err := range ListStreams(ctx, api, pageSize) {
		if err != nil {
			return nil, err
		}
		names = append(names, aws.ToString(s.StreamName))
	}
	slices.Sort(names)
	return names, nil
}
