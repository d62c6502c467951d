package reshard

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every refusal of the planner wraps exactly one of them
// (test with errors.Is) and its text is one complete sentence that names the
// stream, the shard and the rule, so cmd prints it as it is.
var (
	// ErrUnknownShard: no shard of the stream has that id.
	ErrUnknownShard = errors.New("unknown shard")
	// ErrClosedShard: the shard was already split or merged (or trimmed).
	ErrClosedShard = errors.New("shard is not open")
	// ErrKeyOutOfRange: a split key outside Start+2 .. End-1 of the shard.
	ErrKeyOutOfRange = errors.New("split key outside the legal range")
	// ErrShardTooSmall: a shard of fewer than 4 keys cannot be split.
	ErrShardTooSmall = errors.New("shard too small to split")
	// ErrSameShard: a merge of a shard with itself.
	ErrSameShard = errors.New("same shard twice")
	// ErrNotAdjacent: a merge of shards whose ranges do not touch.
	ErrNotAdjacent = errors.New("shards are not adjacent")
	// ErrOnDemand: on-demand streams refuse every reshard call.
	ErrOnDemand = errors.New("stream is on-demand")
	// ErrNotActive: reshard calls are accepted only while ACTIVE.
	ErrNotActive = errors.New("stream is not active")
	// ErrBadTarget: a target shard count outside 1 .. 10000.
	ErrBadTarget = errors.New("invalid target shard count")
	// ErrTargetOutOfLimits: UpdateShardCount cannot reach the target in one
	// call (half to double the open shards).
	ErrTargetOutOfLimits = errors.New("target outside the UpdateShardCount limits")
	// ErrShardQuota: the plan would open more shards than the account's
	// shard quota leaves free (DescribeLimits).
	ErrShardQuota = errors.New("account shard quota too small")
	// ErrInconsistent: the open shards do not tile the key space, as in a
	// listing taken mid-reshard.
	ErrInconsistent = errors.New("open shards do not cover the key space")
	// ErrNoSample: a goal needs sampled traffic that was not given.
	ErrNoSample = errors.New("no traffic sample")
	// ErrTooFewSamples: too few records were sampled to split at their median.
	ErrTooFewSamples = errors.New("too few sampled records")
	// ErrOneKey: every sampled record has the same hash, so no split point
	// divides the traffic.
	ErrOneKey = errors.New("sampled traffic is a single hash key")
	// ErrLayoutChanged: the stream's open shards are no longer those the
	// plan was made from (or a step did not give the planned layout).
	ErrLayoutChanged = errors.New("shard layout changed")
)

// kindError carries a full sentence for humans and a sentinel for code; its
// text is the sentence alone.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func refuse(kind error, msg string) error { return &kindError{kind: kind, msg: msg} }

// idList names shards for messages that suggest what to use instead: "a,
// b and c", or the first max of them and how many more.
func idList(ids []string, max int) string {
	switch {
	case len(ids) == 0:
		return "none"
	case len(ids) > max:
		return strings.Join(ids[:max], ", ") + " and " + strconv.Itoa(len(ids)-max) + " more"
	case len(ids) == 1:
		return ids[0]
	}
	return strings.Join(ids[:len(ids)-1], ", ") + " and " + ids[len(ids)-1]
}
