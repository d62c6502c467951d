package fake

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// shardFilter returns which shards a ListShards call keeps: those its
// ShardFilter names (the shards open at a time, from a time on, the open
// ones, or those after an id) and those after ExclusiveStartShardId. A
// filter without the field its type needs is the service's
// InvalidArgumentException. Called under the lock.
func (s *Stream) shardFilter(sf *types.ShardFilter, after *string) (func(*Shard) bool, error) {
	afterID := aws.ToString(after)
	keep := func(sh *Shard) bool { return afterID == "" || sh.ID > afterID }
	if sf == nil {
		return keep, nil
	}
	opened := func(sh *Shard) time.Time {
		if sh.openedAt.IsZero() {
			return s.Created
		}
		return sh.openedAt
	}
	// openAfter: the shard was still open after t (or is open now).
	openAfter := func(sh *Shard, t time.Time) bool { return !sh.Closed || sh.closedAt.IsZero() || sh.closedAt.After(t) }
	switch sf.Type {
	case types.ShardFilterTypeAfterShardId:
		if sf.ShardId == nil {
			return nil, invalidArg("ShardId must be given with ShardFilter type AFTER_SHARD_ID")
		}
		id := *sf.ShardId
		return func(sh *Shard) bool { return keep(sh) && sh.ID > id }, nil
	case types.ShardFilterTypeAtLatest:
		return func(sh *Shard) bool { return keep(sh) && !sh.Closed }, nil
	case types.ShardFilterTypeAtTrimHorizon, types.ShardFilterTypeFromTrimHorizon:
		return keep, nil // every shard retention has kept
	case types.ShardFilterTypeAtTimestamp, types.ShardFilterTypeFromTimestamp:
		if sf.Timestamp == nil {
			return nil, invalidArg("Timestamp must be given with ShardFilter type %s", sf.Type)
		}
		t := *sf.Timestamp
		if sf.Type == types.ShardFilterTypeFromTimestamp {
			return func(sh *Shard) bool { return keep(sh) && openAfter(sh, t) }, nil
		}
		return func(sh *Shard) bool { return keep(sh) && !opened(sh).After(t) && openAfter(sh, t) }, nil
	}
	return nil, validation("1 validation error detected: Value '%s' at 'shardFilter.type' failed to satisfy constraint: Member must satisfy enum value set: [AFTER_SHARD_ID, AT_TRIM_HORIZON, FROM_TRIM_HORIZON, AT_LATEST, AT_TIMESTAMP, FROM_TIMESTAMP]", sf.Type)
}

// listToken is a ListShards NextToken: the stream, where the next page
// starts, and the call's filter, which later pages keep (the service's
// tokens carry it too, since a call with a NextToken may not repeat it).
func listToken(stream string, offset int, sf *types.ShardFilter) string {
	tok := fmt.Sprintf("tok|%s|%d", stream, offset)
	if sf != nil {
		var ts int64
		if sf.Timestamp != nil {
			ts = sf.Timestamp.UnixNano()
		}
		tok += fmt.Sprintf("|%s|%s|%d", sf.Type, aws.ToString(sf.ShardId), ts)
	}
	return tok
}

// parseListToken reads a listToken back; ok is false for a token the fake
// did not write. The stream is nil when it is gone. Called under the lock.
func (f *Fake) parseListToken(tok string) (s *Stream, offset int, sf *types.ShardFilter, ok bool) {
	parts := strings.Split(tok, "|")
	if (len(parts) != 3 && len(parts) != 6) || parts[0] != "tok" {
		return nil, 0, nil, false
	}
	offset, err := strconv.Atoi(parts[2])
	if err != nil || offset < 0 {
		return nil, 0, nil, false
	}
	if len(parts) == 6 {
		sf = &types.ShardFilter{Type: types.ShardFilterType(parts[3])}
		if parts[4] != "" {
			sf.ShardId = aws.String(parts[4])
		}
		if ns, err := strconv.ParseInt(parts[5], 10, 64); err == nil && ns != 0 {
			sf.Timestamp = aws.Time(time.Unix(0, ns))
		}
	}
	return f.streams[parts[1]], offset, sf, true
}
