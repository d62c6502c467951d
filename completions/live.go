package completions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// API is what the live lookups need from the Kinesis client;
// *kinesis.Client satisfies it.
type API interface {
	kinesis.ListStreamsAPIClient
	lineage.ShardLister
}

var _ API = (*kinesis.Client)(nil)

// ClientFunc returns the client for a lookup. stream is the STREAM argument
// as typed (a name, or an ARN whose region the client must use), or "" to
// list the streams of the configured region.
type ClientFunc func(ctx context.Context, stream string) (API, error)

// DefaultTimeout bounds a whole lookup, building the client included: long
// enough for a few round trips to a nearby region, short enough that a
// dead endpoint never holds the shell.
const DefaultTimeout = 1500 * time.Millisecond

// The lookup's context expires this share of the timeout early, leaving
// the rest for the lookup to return what it has (see streamCandidates)
// before the hard stop.
const graceDivisor = 8

// Live completes names that only the service knows: streams and shards.
type Live struct {
	Client ClientFunc
	// Timeout bounds each lookup, start to finish; 0 means DefaultTimeout.
	Timeout time.Duration
}

// liveDirective is the directive of every live lookup, with or without
// candidates: the shell must never fall back to file names for a stream or
// a shard, and candidates come in a meaningful order (open shards first).
const liveDirective = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder

// Streams completes stream names (or stream ARNs, once the word typed
// starts with "arn:").
func (l *Live) Streams() cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return l.lookup(c, "streams", func(ctx context.Context) ([]cobra.Completion, error) {
			api, err := l.Client(ctx, "")
			if err != nil {
				return nil, err
			}
			return streamCandidates(ctx, api, toComplete)
		}), liveDirective
	}
}

// ShardQuery says which shards to offer.
type ShardQuery struct {
	// Stream is the STREAM argument; "" offers nothing.
	Stream string
	// OpenOnly leaves closed shards out (for commands that act only on
	// open shards, such as split and merge).
	OpenOnly bool
	// Exclude lists ids already given on the command line (in any of the
	// forms lineage.ParseShardID accepts).
	Exclude []string
}

// Shards completes the shard ids of a stream: open shards by hash range,
// then closed ones by id, each described by its state and key-space share
// ("open 25.00%"). The word typed is matched against the full id
// (shardId-000000000007); a word of digits only is matched against the
// short number (7), the other form a SHARD argument accepts.
func (l *Live) Shards(query func(c *cobra.Command, args []string) ShardQuery) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		q := query(c, args)
		if q.Stream == "" {
			return nil, liveDirective
		}
		return l.lookup(c, "shards of "+q.Stream, func(ctx context.Context) ([]cobra.Completion, error) {
			api, err := l.Client(ctx, q.Stream)
			if err != nil {
				return nil, err
			}
			return shardCandidates(ctx, api, q, toComplete)
		}), liveDirective
	}
}

// lookup runs fn under the deadline and turns every failure into no
// candidates. The reason goes to cobra's debug log only (written solely
// when BASH_COMP_DEBUG_FILE is set), never to stdout or stderr.
//
// fn's context expires a little before the timeout, so that fn can still
// return what it found by then. fn runs on its own goroutine so that a step
// that ignores its context (a credential process, say) cannot hold the
// shell past the timeout itself. That goroutine is bounded by the same
// context and never blocks on its result, so abandoning it leaks nothing:
// `__complete` exits right after.
func (l *Live) lookup(c *cobra.Command, what string, fn func(ctx context.Context) ([]cobra.Completion, error)) []cobra.Completion {
	base := c.Context()
	if base == nil {
		base = context.Background()
	}
	timeout := cmp.Or(l.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(base, timeout-timeout/graceDivisor)
	defer cancel()
	type result struct {
		comps []cobra.Completion
		err   error
	}
	done := make(chan result, 1)
	go func() {
		comps, err := fn(ctx)
		done <- result{comps, err}
	}()
	hardStop := time.NewTimer(timeout)
	defer hardStop.Stop()
	var r result
	select {
	case r = <-done:
	case <-hardStop.C:
		r.err = fmt.Errorf("no answer within %s", timeout)
	case <-base.Done():
		r.err = base.Err()
	}
	if r.err != nil {
		cobra.CompDebugln(fmt.Sprintf("completion of %s: %v", what, r.err), false)
		return nil
	}
	return r.comps
}

// streamCandidates pages ListStreams and keeps the names (or ARNs) that
// start with prefix, sorted.
//
// Paging stops at the deadline. What was listed by then is kept only when
// it provably holds every match: the service lists streams in name order,
// so once a listed name sorts after every name starting with prefix, no
// later page can add a match. Otherwise a partial list could make the shell
// complete a unique-looking prefix to the wrong stream, so nothing is
// offered.
func streamCandidates(ctx context.Context, api kinesis.ListStreamsAPIClient, prefix string) ([]cobra.Completion, error) {
	byARN := strings.HasPrefix(prefix, "arn:")
	type stream struct{ name, arn, desc string }
	var (
		streams []stream
		ordered = true // every name so far came in ascending order
		listErr error
	)
	for s, err := range kstream.ListStreams(ctx, api, 0) {
		if err != nil {
			listErr = err
			break
		}
		name := aws.ToString(s.StreamName)
		if n := len(streams); n > 0 && name < streams[n-1].name {
			ordered = false
		}
		streams = append(streams, stream{name: name, arn: aws.ToString(s.StreamARN), desc: streamDescription(s)})
	}
	if listErr != nil {
		last := ""
		if n := len(streams); n > 0 {
			last = streams[n-1].name
		}
		complete := !byARN && ordered && last > prefix && !strings.HasPrefix(last, prefix)
		if !complete {
			return nil, listErr
		}
		cobra.CompDebugln(fmt.Sprintf("stream listing stopped after %q (%v); it holds every match of %q", last, listErr, prefix), false)
	}

	var comps []cobra.Completion
	for _, s := range streams {
		word := s.name
		if byARN {
			word = s.arn
		}
		if word != "" && strings.HasPrefix(word, prefix) {
			comps = append(comps, withDesc(word, s.desc))
		}
	}
	slices.Sort(comps)
	return comps, nil
}

// streamDescription is "active, provisioned" and the like.
func streamDescription(s types.StreamSummary) string {
	desc := strings.ToLower(string(s.StreamStatus))
	if s.StreamModeDetails != nil && s.StreamModeDetails.StreamMode != "" {
		mode := strings.ReplaceAll(strings.ToLower(string(s.StreamModeDetails.StreamMode)), "_", "-")
		desc = strings.TrimPrefix(desc+", "+mode, ", ")
	}
	return desc
}

// shardCandidates lists the stream's shards and offers the matching ids.
func shardCandidates(ctx context.Context, api lineage.ShardLister, q ShardQuery, prefix string) ([]cobra.Completion, error) {
	o := lineage.ListOptions{StreamName: q.Stream}
	if strings.HasPrefix(q.Stream, "arn:") {
		o = lineage.ListOptions{StreamARN: q.Stream}
	}
	g, err := lineage.Load(ctx, api, o)
	if err != nil {
		return nil, err
	}
	excluded := map[string]bool{}
	for _, e := range q.Exclude {
		if id, err := lineage.ParseShardID(e); err == nil {
			excluded[id] = true
		}
		excluded[e] = true
	}
	shards := g.Open()
	if !q.OpenOnly {
		var closed []*lineage.Shard
		for _, s := range g.Shards() {
			if s.State == lineage.StateClosed {
				closed = append(closed, s)
			}
		}
		slices.SortFunc(closed, func(a, b *lineage.Shard) int { return lineage.CompareShardIDs(a.ID, b.ID) })
		shards = append(shards, closed...)
	}
	short := prefix != "" && strings.Trim(prefix, "0123456789") == ""
	var comps []cobra.Completion
	for _, s := range shards {
		if excluded[s.ID] {
			continue
		}
		word := s.ID
		if short {
			word = lineage.ShortID(s.ID)
		}
		if !strings.HasPrefix(word, prefix) {
			continue
		}
		comps = append(comps, withDesc(word, fmt.Sprintf("%s %.2f%%", s.State, s.Range.Fraction()*100)))
	}
	return comps, nil
}

func withDesc(word, desc string) cobra.Completion {
	if desc == "" {
		return word
	}
	return cobra.CompletionWithDesc(word, desc)
}
