package lineage

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// ShardLister is the one call Load needs; *kinesis.Client satisfies it.
type ShardLister interface {
	ListShards(ctx context.Context, params *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
}

// ListOptions says which stream to list and how.
type ListOptions struct {
	// StreamName and StreamARN name the stream; the ARN is sent when set.
	StreamName, StreamARN string
	// Filter goes on the first call only; the service carries it in the
	// NextToken. Some emulators ignore it on later pages, so list without a
	// filter where the caller can work the answer out from the whole graph.
	Filter *types.ShardFilter
	// PageSize is MaxResults; 0 leaves it to the service (1,000).
	PageSize int32
}

// maxRestarts bounds how often an expired NextToken restarts the listing.
const maxRestarts = 3

// ListShards returns every shard of the stream, paging as the service
// requires: the first call names the stream (and filter); each later call is
// a fresh input holding only NextToken (and MaxResults), since anything else
// beside a NextToken is an InvalidArgument refusal. A page without a
// NextToken is the last, whatever its size (kinesalite sends none). A token
// lives 300 s: on ExpiredNextTokenException the listing starts again from the
// first page, at most three times. Shards seen twice across pages are kept
// once (the first copy).
func ListShards(ctx context.Context, api ShardLister, o ListOptions) ([]types.Shard, error) {
	if o.StreamARN == "" && o.StreamName == "" {
		return nil, newKindError(ErrNoStream, "list shards: no stream name or ARN given")
	}
	for restarts := 0; ; restarts++ {
		shards, err := listAllPages(ctx, api, o)
		if err != nil && awserr.ExpiredToken(err) && restarts < maxRestarts && ctx.Err() == nil {
			continue
		}
		return shards, err
	}
}

func listAllPages(ctx context.Context, api ShardLister, o ListOptions) ([]types.Shard, error) {
	stream := o.StreamARN
	first := &kinesis.ListShardsInput{ShardFilter: o.Filter}
	if o.StreamARN != "" {
		first.StreamARN = aws.String(o.StreamARN)
	} else {
		stream = o.StreamName
		first.StreamName = aws.String(o.StreamName)
	}
	pageSize := func() *int32 {
		if o.PageSize > 0 {
			return aws.Int32(o.PageSize)
		}
		return nil
	}
	first.MaxResults = pageSize()

	var (
		shards []types.Shard
		seen   = make(map[string]struct{})
		in     = first
		sent   string // the NextToken of the last request
	)
	for page := 1; ; page++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("list shards of %s: %w", stream, err)
		}
		out, err := listPage(ctx, api, in)
		if err != nil {
			return nil, fmt.Errorf("list shards of %s (page %d): %w", stream, page, err)
		}
		if out == nil {
			return nil, fmt.Errorf("list shards of %s (page %d): empty response", stream, page)
		}
		for _, s := range out.Shards {
			if s.ShardId != nil {
				if _, dup := seen[*s.ShardId]; dup {
					continue
				}
				seen[*s.ShardId] = struct{}{}
			}
			shards = append(shards, s) // an id-less shard is left for Build to refuse
		}
		next := aws.ToString(out.NextToken)
		if next == "" {
			return shards, nil
		}
		if next == sent {
			// A backend handing back the token it was given would loop forever.
			return nil, fmt.Errorf("list shards of %s (page %d): the service returned the same NextToken again", stream, page)
		}
		sent = next
		in = &kinesis.ListShardsInput{NextToken: aws.String(next), MaxResults: pageSize()}
	}
}

// listPage asks for one page: a read-only call under the read-retry
// policy (ListShards allows 1,000 calls a second per stream, shared by
// every consumer, so a LimitExceeded is a moment's crowd).
func listPage(ctx context.Context, api ShardLister, in *kinesis.ListShardsInput) (*kinesis.ListShardsOutput, error) {
	return awscall.Do(ctx, awscall.ListShards, func() (*kinesis.ListShardsOutput, error) {
		return api.ListShards(ctx, in)
	})
}

// Load lists the stream's shards and builds their lineage graph.
func Load(ctx context.Context, api ShardLister, o ListOptions) (*Graph, error) {
	shards, err := ListShards(ctx, api, o)
	if err != nil {
		return nil, err
	}
	g, err := Build(shards)
	if err != nil {
		stream := o.StreamARN
		if stream == "" {
			stream = o.StreamName
		}
		return nil, fmt.Errorf("shards of %s: %w", stream, err)
	}
	return g, nil
}
