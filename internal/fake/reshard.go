package fake

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// The reshard calls behind the SDK's signatures, validating as AWS does
// (docs/KINESIS-NOTES.md §3): the stream must be ACTIVE (else ResourceInUseException),
// shards must exist (ResourceNotFoundException) and be open, a split key
// must be a canonical decimal with Start+2 <= key <= End-1, a merge needs
// the lower shard as ShardToMerge and adjacent ranges, and UpdateShardCount
// stays within half to double the open shards (all InvalidArgumentException).
// The changes are instant unless StateDelay keeps the stream UPDATING for
// a while; tests that want UPDATING otherwise set it with SetStatus (from a
// Hook, for instance).

var canonicalKey = regexp.MustCompile(`^(0|[1-9][0-9]{0,38})$`)

func invalidArg(format string, args ...any) error {
	return &types.InvalidArgumentException{Message: aws.String(fmt.Sprintf(format, args...))}
}

// validation is the service's answer to a member that breaks the API's own
// constraints (a length, a pattern, a range): ValidationException, before
// any rule of the stream is looked at.
func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// SetStatus sets a stream's status (ACTIVE, UPDATING, ...).
func (f *Fake) SetStatus(stream string, st types.StreamStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[stream].Status = st
}

// reshardable finds an ACTIVE stream.
func (f *Fake) reshardable(name, arn *string) (*Stream, error) {
	s, err := f.stream(name, arn)
	if err != nil {
		return nil, err
	}
	if s.Mode == types.StreamModeOnDemand {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf("Stream %s under account 123456789012 is in ON_DEMAND mode: its shards cannot be split, merged or counted by hand.", s.Name), Fault: smithy.FaultClient}
	}
	if s.Status != types.StreamStatusActive {
		return nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Stream %s under account 123456789012 not ACTIVE, instead in state %s", s.Name, s.Status))}
	}
	return s, nil
}

func (s *Stream) openShard(id string) (*Shard, error) {
	sh := s.shard(id)
	if sh == nil || sh.Trimmed {
		return nil, &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Could not find shard %s in stream %s under account 123456789012.", id, s.Name))}
	}
	if sh.Closed {
		return nil, invalidArg("Shard %s in stream %s under account 123456789012 has already been merged or split, and thus is not eligible for merging or splitting.", id, s.Name)
	}
	return sh, nil
}

// SplitShard implements the SDK call.
func (f *Fake) SplitShard(ctx context.Context, in *kinesis.SplitShardInput, _ ...func(*kinesis.Options)) (*kinesis.SplitShardOutput, error) {
	if err := f.call("SplitShard", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.reshardable(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	p, err := s.openShard(aws.ToString(in.ShardToSplit))
	if err != nil {
		return nil, err
	}
	ks := aws.ToString(in.NewStartingHashKey)
	k, ok := new(big.Int).SetString(ks, 10)
	if !canonicalKey.MatchString(ks) || !ok || k.Cmp(maxKey) > 0 {
		return nil, validation("1 validation error detected: Value '%s' at 'newStartingHashKey' failed to satisfy constraint: Member must satisfy regular expression pattern: 0|([1-9]\\d{0,38})", ks)
	}
	lo := new(big.Int).Add(p.Start, big.NewInt(2))
	hi := new(big.Int).Sub(p.End, big.NewInt(1))
	if k.Cmp(lo) < 0 || k.Cmp(hi) > 0 {
		return nil, invalidArg("NewStartingHashKey %s used in SplitShard() on shard %s in stream %s under account 123456789012 is not both greater than one plus the shard's StartingHashKey %s and less than the shard's EndingHashKey %s.", ks, p.ID, s.Name, p.Start, p.End)
	}
	if open := f.openTotal(); open+1 > f.shardLimit() {
		return nil, shardLimitExceeded(open, f.shardLimit(), 1)
	}
	p.Closed, p.endSeq = true, s.seq()
	s.addShard(p.ID, "", p.Start, new(big.Int).Sub(k, big.NewInt(1)))
	s.addShard(p.ID, "", k, p.End)
	f.transition(s, types.StreamStatusUpdating)
	return &kinesis.SplitShardOutput{}, nil
}

// MergeShards implements the SDK call.
func (f *Fake) MergeShards(ctx context.Context, in *kinesis.MergeShardsInput, _ ...func(*kinesis.Options)) (*kinesis.MergeShardsOutput, error) {
	if err := f.call("MergeShards", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.reshardable(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	a, err := s.openShard(aws.ToString(in.ShardToMerge))
	if err != nil {
		return nil, err
	}
	b, err := s.openShard(aws.ToString(in.AdjacentShardToMerge))
	if err != nil {
		return nil, err
	}
	if new(big.Int).Add(a.End, big.NewInt(1)).Cmp(b.Start) != 0 {
		return nil, invalidArg("Shards %s and %s in stream %s under account 123456789012 are not an adjacent pair of shards eligible for merging", a.ID, b.ID, s.Name)
	}
	a.Closed, a.endSeq = true, s.seq()
	b.Closed, b.endSeq = true, s.seq()
	s.addShard(a.ID, b.ID, a.Start, b.End)
	f.transition(s, types.StreamStatusUpdating)
	return &kinesis.MergeShardsOutput{}, nil
}

// UpdateShardCount implements the SDK call: every open shard closes and the
// even layout of the target opens, each new shard naming the old shards
// that held its first and last keys as parents (AWS leaves intermediate
// shards too; the fake does not).
func (f *Fake) UpdateShardCount(ctx context.Context, in *kinesis.UpdateShardCountInput, _ ...func(*kinesis.Options)) (*kinesis.UpdateShardCountOutput, error) {
	if err := f.call("UpdateShardCount", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.reshardable(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	var open []*Shard
	for _, sh := range s.shards {
		if !sh.Closed && !sh.Trimmed {
			open = append(open, sh)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Start.Cmp(open[j].Start) < 0 })
	n := int(aws.ToInt32(in.TargetShardCount))
	if n < (len(open)+1)/2 || n > 2*len(open) || n > 10000 {
		return nil, invalidArg("UpdateShardCount target %d for stream %s is outside the allowed range for %d open shards.", n, s.Name, len(open))
	}
	if in.ScalingType != types.ScalingTypeUniformScaling {
		return nil, invalidArg("ScalingType must be UNIFORM_SCALING")
	}
	if total := f.openTotal(); n > len(open) && total-len(open)+n > f.shardLimit() {
		return nil, shardLimitExceeded(total, f.shardLimit(), n-len(open))
	}
	holder := func(k *big.Int) *Shard {
		for _, sh := range open {
			if sh.Start.Cmp(k) <= 0 && k.Cmp(sh.End) <= 0 {
				return sh
			}
		}
		return nil
	}
	for _, sh := range open {
		sh.Closed, sh.endSeq = true, s.seq()
	}
	step := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(int64(n)))
	for i := range n {
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := new(big.Int).Sub(new(big.Int).Mul(step, big.NewInt(int64(i+1))), big.NewInt(1))
		if i == n-1 {
			end = new(big.Int).Set(maxKey)
		}
		p, q := holder(start), holder(end)
		adj := ""
		if q != p {
			adj = q.ID
		}
		s.addShard(p.ID, adj, start, end)
	}
	f.transition(s, types.StreamStatusUpdating)
	return &kinesis.UpdateShardCountOutput{CurrentShardCount: aws.Int32(int32(len(open))), TargetShardCount: aws.Int32(int32(n)),
		StreamName: aws.String(s.Name), StreamARN: aws.String(s.ARN)}, nil
}
