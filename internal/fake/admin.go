package fake

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// The service's limits the fake enforces on writes and streams.
const (
	maxRecordBytes   = 1 << 20 // data + partition key
	maxKeyChars      = 256
	maxPutEntries    = 500
	maxPutBytes      = 5 << 20
	onDemandShards   = 4
	defaultListLimit = 100
)

var streamNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// settle moves a stream whose CREATING, UPDATING or DELETING has lasted
// StateDelay on: to ACTIVE, or gone. It reports false when the stream is
// gone. Called under the lock.
func (f *Fake) settle(s *Stream) bool {
	if s.settleAt.IsZero() || f.now().Before(s.settleAt) {
		return true
	}
	s.settleAt = time.Time{}
	if s.Status == types.StreamStatusDeleting {
		delete(f.streams, s.Name)
		return false
	}
	s.Status = types.StreamStatusActive
	return true
}

// transition puts a stream in status st for StateDelay (then ACTIVE, or
// gone after DELETING); with no delay, at once. Called under the lock.
func (f *Fake) transition(s *Stream, st types.StreamStatus) {
	s.noteClosed(f.now())
	if f.StateDelay <= 0 {
		if st == types.StreamStatusDeleting {
			delete(f.streams, s.Name)
		}
		return
	}
	s.Status, s.settleAt = st, f.now().Add(f.StateDelay)
}

// CreateStream implements the SDK call: a provisioned stream of ShardCount
// shards in the even layout, or an on-demand one of 4. The account's shard
// quota (ShardLimit) counts every open shard.
func (f *Fake) CreateStream(ctx context.Context, in *kinesis.CreateStreamInput, _ ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error) {
	if err := f.call("CreateStream", in); err != nil {
		return nil, err
	}
	name := aws.ToString(in.StreamName)
	if !streamNameRE.MatchString(name) {
		return nil, validation("1 validation error detected: Value '%s' at 'streamName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+ and have length 1 to 128", name)
	}
	n := int(aws.ToInt32(in.ShardCount))
	onDemand := in.StreamModeDetails != nil && in.StreamModeDetails.StreamMode == types.StreamModeOnDemand
	switch {
	case onDemand && in.ShardCount != nil:
		return nil, invalidArg("ShardCount is not used by a stream in ON_DEMAND mode")
	case onDemand:
		n = onDemandShards
	case in.ShardCount == nil:
		return nil, invalidArg("ShardCount is required for a stream in PROVISIONED mode")
	case n < 1:
		return nil, validation("1 validation error detected: Value '%d' at 'shardCount' failed to satisfy constraint: Member must have value greater than or equal to 1", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.streams[name]; s != nil && f.settle(s) {
		return nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Stream %s under account 123456789012 already exists.", name))}
	}
	if open := f.openTotal(); open+n > f.shardLimit() {
		return nil, shardLimitExceeded(open, f.shardLimit(), n)
	}
	s := f.addStream(name, n, f.now())
	if onDemand {
		s.Mode = types.StreamModeOnDemand
	}
	f.transition(s, types.StreamStatusCreating)
	return &kinesis.CreateStreamOutput{}, nil
}

// shardLimitExceeded is the service's refusal of a change that would open
// more shards than the account's quota (CreateStream, SplitShard,
// UpdateShardCount alike).
func shardLimitExceeded(open, limit, more int) error {
	return &types.LimitExceededException{Message: aws.String(fmt.Sprintf("This request would exceed the shard limit for the account 123456789012 in us-east-1. Current shard count for the account: %d. Limit: %d. Number of additional shards that would have resulted from this request: %d.", open, limit, more))}
}

// DeleteStream implements the SDK call: DELETING for StateDelay, then gone.
func (f *Fake) DeleteStream(ctx context.Context, in *kinesis.DeleteStreamInput, _ ...func(*kinesis.Options)) (*kinesis.DeleteStreamOutput, error) {
	if err := f.call("DeleteStream", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.stream(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	if s.Status == types.StreamStatusDeleting {
		return nil, &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Stream %s under account 123456789012 is being deleted.", s.Name))}
	}
	f.transition(s, types.StreamStatusDeleting)
	return &kinesis.DeleteStreamOutput{}, nil
}

// ListStreams implements the SDK call: names in order, Limit at a time
// (100 by default), after ExclusiveStartStreamName or NextToken.
func (f *Fake) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, _ ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	if err := f.call("ListStreams", in); err != nil {
		return nil, err
	}
	limit := defaultListLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > 10000 {
			return nil, validation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 10000", *in.Limit)
		}
		limit = int(*in.Limit)
	}
	after := aws.ToString(in.ExclusiveStartStreamName)
	if in.NextToken != nil {
		if in.ExclusiveStartStreamName != nil {
			return nil, invalidArg("NextToken and ExclusiveStartStreamName cannot be provided together.")
		}
		after = *in.NextToken
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for name, s := range f.streams {
		if f.settle(s) && name > after {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := &kinesis.ListStreamsOutput{HasMoreStreams: aws.Bool(len(names) > limit), StreamNames: []string{}}
	if len(names) > limit {
		names = names[:limit]
		out.NextToken = aws.String(names[limit-1])
	}
	for _, name := range names {
		s := f.streams[name]
		out.StreamNames = append(out.StreamNames, name)
		out.StreamSummaries = append(out.StreamSummaries, types.StreamSummary{StreamName: aws.String(name), StreamARN: aws.String(s.ARN),
			StreamStatus: s.Status, StreamCreationTimestamp: aws.Time(s.Created), StreamModeDetails: &types.StreamModeDetails{StreamMode: s.mode()}})
	}
	return out, nil
}

// PutRecord implements the SDK call as a PutRecords of one entry, whose
// failure is the call's.
func (f *Fake) PutRecord(ctx context.Context, in *kinesis.PutRecordInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordOutput, error) {
	if err := f.call("PutRecord", in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.writable(in.StreamName, in.StreamARN)
	if err != nil {
		return nil, err
	}
	h, err := entryHash(in.PartitionKey, in.Data, in.ExplicitHashKey)
	if err != nil {
		return nil, err
	}
	if f.Quotas {
		if err := f.writeQuota(s, h, len(in.Data)+len(aws.ToString(in.PartitionKey))); err != nil {
			return nil, err
		}
	}
	id, seq := f.put(s, aws.ToString(in.PartitionKey), in.Data, h)
	return &kinesis.PutRecordOutput{ShardId: aws.String(id), SequenceNumber: aws.String(seq)}, nil
}

// writable finds a stream that takes records (ACTIVE or UPDATING).
func (f *Fake) writable(name, arn *string) (*Stream, error) {
	s, err := f.stream(name, arn)
	if err != nil {
		return nil, err
	}
	if s.Status != types.StreamStatusActive && s.Status != types.StreamStatusUpdating {
		return nil, &types.ResourceNotFoundException{Message: aws.String(fmt.Sprintf("Stream %s under account 123456789012 not found (it is %s).", s.Name, s.Status))}
	}
	return s, nil
}

// checkPutRecords applies the service's limits to a PutRecords request.
func checkPutRecords(in *kinesis.PutRecordsInput) ([]*big.Int, error) {
	if n := len(in.Records); n < 1 || n > maxPutEntries {
		return nil, validation("1 validation error detected: Value '%d' at 'records' failed to satisfy constraint: Member must have length between 1 and %d", n, maxPutEntries)
	}
	hashes := make([]*big.Int, len(in.Records))
	total := 0
	for i, e := range in.Records {
		h, err := entryHash(e.PartitionKey, e.Data, e.ExplicitHashKey)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
		total += len(e.Data) + len(aws.ToString(e.PartitionKey))
	}
	if total > maxPutBytes {
		return nil, invalidArg("Records size exceeds %d MB limit", maxPutBytes>>20)
	}
	return hashes, nil
}

// entryHash checks one record (its key, its size, its explicit hash key)
// and returns the hash that routes it.
func entryHash(key *string, data []byte, ehk *string) (*big.Int, error) {
	pk := aws.ToString(key)
	if n := utf8.RuneCountInString(pk); key == nil || n < 1 || n > maxKeyChars {
		return nil, validation("1 validation error detected: Value at 'partitionKey' failed to satisfy constraint: Member must have length between 1 and %d", maxKeyChars)
	}
	if n := len(data) + len(pk); n > maxRecordBytes {
		return nil, validation("1 validation error detected: the record of %d bytes (data + partition key) is larger than %d bytes", n, maxRecordBytes)
	}
	if ehk == nil {
		return HashOf(pk), nil
	}
	h, ok := new(big.Int).SetString(*ehk, 10)
	if !ok || !canonicalKey.MatchString(*ehk) || h.Cmp(maxKey) > 0 {
		return nil, invalidArg("Invalid ExplicitHashKey. ExplicitHashKey must be in the range: [0, 2^128-1]. Specified value was %s", *ehk)
	}
	return h, nil
}

// openTotal counts the open shards of every stream (the account's).
func (f *Fake) openTotal() int {
	n := 0
	for _, s := range f.streams {
		n += s.openCount()
	}
	return n
}

func (f *Fake) shardLimit() int {
	if f.ShardLimit > 0 {
		return f.ShardLimit
	}
	return 500
}

func (s *Stream) mode() types.StreamMode {
	if s.Mode == "" {
		return types.StreamModeProvisioned
	}
	return s.Mode
}
