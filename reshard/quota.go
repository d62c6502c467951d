package reshard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// Quota is the account's shard quota in the stream's region, from
// DescribeLimits. Shards opened by a reshard count toward it while open, so
// a plan that opens more than it leaves free fails part-way: with
// SplitShard and MergeShards calls, after some of them took effect.
type Quota struct {
	// ShardLimit is the most provisioned shards the account may have open.
	ShardLimit int `json:"shardLimit"`
	// OpenShards is how many are open now, over all its streams.
	OpenShards int `json:"openShardCount"`
}

// Free is how many more shards the account may open.
func (q *Quota) Free() int { return max(q.ShardLimit-q.OpenShards, 0) }

// LimitsAPI is the call that reads the quota.
type LimitsAPI interface {
	DescribeLimits(ctx context.Context, in *kinesis.DescribeLimitsInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeLimitsOutput, error)
}

// QuotaTimeout bounds LoadQuota.
const QuotaTimeout = 5 * time.Second

// ErrQuotaUnknown wraps every reason LoadQuota cannot tell the quota.
var ErrQuotaUnknown = errors.New("shard quota unknown")

// LoadQuota reads the account's shard quota. api need not implement
// LimitsAPI (test fakes, emulators without the call); any failure returns
// an error wrapping ErrQuotaUnknown whose text says why in a few words, for
// a note in the preview. It is one call, bounded by QuotaTimeout, with no
// retry of its own: on AWS DescribeLimits allows one call per second per
// account, and a reshard does not wait long for a check the service makes
// anyway.
func LoadQuota(ctx context.Context, api any) (*Quota, error) {
	la, ok := api.(LimitsAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the client cannot call DescribeLimits", ErrQuotaUnknown)
	}
	ctx, cancel := context.WithTimeout(ctx, QuotaTimeout)
	defer cancel()
	out, err := la.DescribeLimits(ctx, &kinesis.DescribeLimitsInput{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrQuotaUnknown, quotaFailure(err))
	}
	if out == nil || out.ShardLimit == nil || out.OpenShardCount == nil {
		return nil, fmt.Errorf("%w: DescribeLimits did not return the shard limit", ErrQuotaUnknown)
	}
	return &Quota{ShardLimit: int(aws.ToInt32(out.ShardLimit)), OpenShards: int(aws.ToInt32(out.OpenShardCount))}, nil
}

// quotaFailure says in a few words why DescribeLimits failed.
func quotaFailure(err error) string {
	if c := awserr.Classify(err); c.Code != "" {
		switch c.Kind {
		case awserr.Unsupported:
			return "the endpoint does not implement DescribeLimits"
		case awserr.AccessDenied:
			return "not allowed to call kinesis:DescribeLimits"
		case awserr.LimitExceeded, awserr.Throttled:
			return "DescribeLimits was throttled (it allows one call per second per account)"
		default:
			return "DescribeLimits failed with " + c.Code
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "DescribeLimits did not answer in time"
	}
	return "DescribeLimits failed"
}

// growth is the most open shards a plan adds at any point, beyond those
// open before it (0 when it only merges or scales down).
func (p *Plan) growth() int {
	peak := len(p.Before)
	for _, s := range p.Steps {
		peak = max(peak, s.OpenShards)
	}
	return peak - len(p.Before)
}

// checkQuota refuses a goal that needs more shards than the account has
// free, and otherwise returns the note for the preview (or ""). growth is
// how many shards goal a opens at its peak.
func checkQuota(in Input, a Action, growth int) (note string, err error) {
	if growth <= 0 {
		return "", nil
	}
	more := plural(growth, "more shard")
	if in.Quota == nil {
		if in.QuotaErr == nil {
			return "", nil
		}
		return fmt.Sprintf("The account's shard quota was not checked (%s); this opens up to %s, which the service refuses (LimitExceeded) if the quota is reached.", reasonOf(in.QuotaErr), more), nil
	}
	q := in.Quota
	if growth > q.Free() {
		return "", refuse(ErrShardQuota, fmt.Sprintf("this %s of stream %s opens up to %s, but the account has %d of its %d-shard quota in this region open (%d free): ask AWS for a higher shard quota (Service Quotas, Kinesis \"Shards per Region\") or close shards elsewhere first", a, in.Stream.Name, more, q.OpenShards, q.ShardLimit, q.Free()))
	}
	return fmt.Sprintf("The account has %d of its %d-shard quota in this region open; this opens up to %s.", q.OpenShards, q.ShardLimit, more), nil
}

// reasonOf is the text of a LoadQuota error without the sentinel's prefix.
func reasonOf(err error) string {
	s := err.Error()
	prefix := ErrQuotaUnknown.Error() + ": "
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// MayOpenShards reports whether goal g can open more shards than the
// stream has open, so that the quota is worth reading first: a split, a
// scale to more shards, or evening out at the same count (which opens one
// shard before its merge).
func MayOpenShards(in Input, g Goal) bool {
	switch g := g.(type) {
	case SplitGoal:
		return true
	case ScaleGoal:
		if in.Graph == nil {
			return true
		}
		open := len(in.Graph.Open())
		return g.Target > open || g.Target == open && (g.Even || g.Balanced)
	}
	return false
}
