package kstream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// CreateAPI is the part of the Kinesis client Ensure uses.
type CreateAPI interface {
	DescribeAPI
	CreateStream(ctx context.Context, in *kinesis.CreateStreamInput, optFns ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error)
}

// Spec says how to create a stream that is missing.
type Spec struct {
	Shards   int  // provisioned shard count, at least 1 (ignored when OnDemand)
	OnDemand bool // ON_DEMAND capacity mode
}

// Validate checks the spec before anything is sent.
func (s Spec) Validate() error {
	if !s.OnDemand && s.Shards < 1 {
		return fmt.Errorf("a provisioned stream needs at least 1 shard, not %d", s.Shards)
	}
	if s.Shards > 10000 {
		return fmt.Errorf("%d shards is more than a stream can have (10000)", s.Shards)
	}
	return nil
}

// Outcome says what Ensure did.
type Outcome int

const (
	// Created: this call created the stream.
	Created Outcome = iota
	// Existed: the stream was already there (possibly still being created by
	// someone else, in which case it was waited for).
	Existed
)

// EnsureResult is what Ensure returns.
type EnsureResult struct {
	Outcome Outcome
	// Summary is the stream once ACTIVE; nil when Wait.Timeout is negative
	// (return at once) and the stream was not yet ACTIVE.
	Summary *Summary
	// StatusSeen is the status at the first look (CREATING for a new stream).
	StatusSeen types.StreamStatus
}

// Ensure creates the stream unless it exists, then waits until it is ACTIVE.
// A stream that exists and is CREATING or UPDATING is waited for; one that is
// DELETING is an error. CreateStream's ResourceInUse means someone
// else created it in the meantime: it is waited for too. LimitExceeded is
// returned as it is (the caller's retryer must not retry it for a minute).
// With wait.Timeout < 0 it returns right after creating.
func Ensure(ctx context.Context, api CreateAPI, ref Ref, spec Spec, wait WaitOptions) (*EnsureResult, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	res := &EnsureResult{Outcome: Existed}
	s, err := Describe(ctx, api, ref)
	switch {
	case err == nil:
		res.StatusSeen = s.Status
		switch s.Status {
		case types.StreamStatusActive:
			res.Summary = s
			return res, nil
		case types.StreamStatusDeleting:
			return nil, fmt.Errorf("stream %s: %w", ref, ErrDeleting)
		}
	case awserr.Of(err) == awserr.NotFound:
		in := &kinesis.CreateStreamInput{StreamName: aws.String(ref.Name)}
		if spec.OnDemand {
			in.StreamModeDetails = &types.StreamModeDetails{StreamMode: types.StreamModeOnDemand}
		} else {
			// Provisioned is the default; not naming it keeps backends
			// without capacity modes (kinesalite) happy.
			in.ShardCount = aws.Int32(int32(spec.Shards))
		}
		_, cerr := api.CreateStream(ctx, in)
		switch {
		case cerr == nil:
			res.Outcome = Created
		case awserr.Of(cerr) == awserr.InUse:
			// Created by someone else between our look and our call.
		default:
			return nil, cerr
		}
		res.StatusSeen = types.StreamStatusCreating
	default:
		return nil, err
	}
	if wait.Timeout < 0 {
		return res, nil
	}
	s, err = WaitActive(ctx, api, ref, wait)
	if err != nil {
		return res, err
	}
	res.Summary = s
	return res, nil
}
