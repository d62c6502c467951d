package leases

// The worker's calls to the table, each under its own deadline, and how a
// lease's checkpoint reads as a tail position.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// attrFrom is our own attribute (the KCL ignores it): the time, in Unix
// milliseconds, an AT_TIMESTAMP checkpoint starts at. The KCL's schema has
// no field for it; with it, whoever takes the lease starts where its
// first reader did.
const attrFrom = "kinesisShardsAtTimestamp"

// attrLogEvent is our own attribute too: a checkpoint inside a CloudWatch
// Logs batch (tail --cwlogs) is the record (and sub-sequence number) that
// holds the batch, plus the index of the last log event written out of it.
// Set with such a checkpoint and removed by every other, in the same
// UpdateItem.
const attrLogEvent = "checkpointLogEventIndex"

// positionOf reads a lease's checkpoint.
func positionOf(l *Lease) (tail.Position, tail.StartMode) {
	switch l.Checkpoint {
	case ShardEnd:
		return tail.Position{ShardEnd: true}, 0
	case "", TrimHorizon:
		return tail.Position{}, tail.StartTrimHorizon
	case Latest:
		if l.From > 0 {
			// Made by a --from-tip worker, which wrote when: a successor
			// reads from there, not from its own tip.
			return tail.Position{From: fromMillis(l.From)}, 0
		}
		return tail.Position{}, tail.StartLatest
	case AtTimestamp:
		if l.From > 0 {
			return tail.Position{From: fromMillis(l.From)}, 0
		}
		return tail.Position{}, tail.StartAtTimestamp
	}
	// A sequence number. checkpointSubSequenceNumber 0 cannot tell a plain
	// record from the first user record of an aggregate: resuming at the
	// record and skipping sub-sequence ≤ 0 is right for both.
	p := tail.Position{SequenceNumber: l.Checkpoint, SubSequence: l.SubSequence, Aggregated: true}
	if l.HasLogEvent {
		p.InBatch, p.LogEventIndex = true, l.LogEvent
	}
	return p, 0
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

var errConflict = errors.New("conditional check failed")

func conflict(err error) bool {
	var cc *types.ConditionalCheckFailedException
	return errors.As(err, &cc)
}

// create writes the lease of a shard nobody has written yet.
func (w *Worker) create(ctx context.Context, s tail.ShardInfo, first bool) (*Lease, error) {
	cp, from := TrimHorizon, int64(0)
	if first {
		switch w.opts.Start {
		case tail.StartLatest:
			// LATEST for the KCL, and for us the moment the tip was (less
			// the clock margin): if the reader that starts it at the tip
			// never records its start (the table failing, a crash), whoever
			// takes the lease next still misses nothing written since.
			cp, from = Latest, w.opts.Now().Add(-tail.LatestMargin).UnixMilli()
			if s.Closed {
				cp, from = ShardEnd, 0 // --from-tip: a closed shard counts as read
			}
		case tail.StartAtTimestamp:
			cp, from = AtTimestamp, w.opts.Timestamp.UnixMilli()
		}
	}
	l := &Lease{Key: s.ID, ShardID: s.ID, Checkpoint: cp, Parents: s.Parents, From: from}
	item := map[string]types.AttributeValue{
		attrKey:        &types.AttributeValueMemberS{Value: s.ID},
		attrCheckpoint: &types.AttributeValueMemberS{Value: cp},
		attrSubSeq:     &types.AttributeValueMemberN{Value: "0"},
		attrCounter:    &types.AttributeValueMemberN{Value: "0"},
		attrSwitches:   &types.AttributeValueMemberN{Value: "0"},
	}
	if from != 0 {
		item[attrFrom] = &types.AttributeValueMemberN{Value: strconv.FormatInt(from, 10)}
	}
	if len(s.Parents) > 0 {
		item[attrParents] = &types.AttributeValueMemberSS{Value: s.Parents}
	}
	if s.HaveRange {
		l.StartHash, l.EndHash = s.Range.Start.String(), s.Range.End.String()
		item[attrStartHash] = &types.AttributeValueMemberS{Value: l.StartHash}
		item[attrEndHash] = &types.AttributeValueMemberS{Value: l.EndHash}
	}
	_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.PutItemOutput, error) {
		return w.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(w.opts.Table),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(leaseKey)"),
		})
	})
	if conflict(err) {
		return nil, nil // another worker created it; the next scan has it
	}
	if err != nil {
		return nil, fmt.Errorf("create lease %s: %w", s.ID, err)
	}
	return l, nil
}

// bump increments the counter of a lease we hold (a renewal).
func (w *Worker) bump(ctx context.Context, shard string, counter int64) (int64, error) {
	out, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           aws.String(w.opts.Table),
			Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression:    aws.String("SET leaseCounter = leaseCounter + :one"),
			ConditionExpression: aws.String("leaseOwner = :me AND leaseCounter = :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": &types.AttributeValueMemberN{Value: "1"},
				":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
				":c":   &types.AttributeValueMemberN{Value: strconv.FormatInt(counter, 10)},
			},
			ReturnValues: types.ReturnValueUpdatedNew,
		})
	})
	if conflict(err) {
		return 0, errConflict
	}
	if err != nil {
		return 0, fmt.Errorf("renew lease %s: %w", shard, err)
	}
	return num(out.Attributes, attrCounter)
}

// take makes us the owner of a lease, if nobody changed it since the scan.
func (w *Worker) take(ctx context.Context, l *Lease) bool {
	cond := "leaseCounter = :c AND attribute_not_exists(leaseOwner)"
	vals := map[string]types.AttributeValue{
		":one":  &types.AttributeValueMemberN{Value: "1"},
		":zero": &types.AttributeValueMemberN{Value: "0"},
		":me":   &types.AttributeValueMemberS{Value: w.opts.WorkerID},
		":c":    &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Counter, 10)},
	}
	if l.Owner != "" {
		cond = "leaseCounter = :c AND leaseOwner = :old"
		vals[":old"] = &types.AttributeValueMemberS{Value: l.Owner}
	}
	sent := w.opts.Now()
	out, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(w.opts.Table),
			Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: l.Key}},
			UpdateExpression:          aws.String("SET leaseOwner = :me, leaseCounter = leaseCounter + :one, ownerSwitchesSinceCheckpoint = if_not_exists(ownerSwitchesSinceCheckpoint, :zero) + :one"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueAllNew,
		})
	})
	if err != nil {
		if !conflict(err) {
			w.opts.Logf("lease %s: take failed: %v", l.ShardID, err)
		}
		return false
	}
	got, ok, err := ParseItem(out.Attributes)
	if err != nil || !ok {
		return false
	}
	prev := l.Owner
	l.Owner, l.Counter, l.Checkpoint, l.SubSequence, l.From = w.opts.WorkerID, got.Counter, got.Checkpoint, got.SubSequence, got.From
	w.mu.Lock()
	w.held[l.ShardID] = heldLease{counter: got.Counter, until: sent.Add(w.opts.LeaseDuration)}
	w.mu.Unlock()
	if prev != "" {
		w.opts.Logf("lease %s: taken over from %s at %s", l.ShardID, prev, l.Checkpoint)
	} else {
		w.opts.Logf("lease %s: taken at %s", l.ShardID, l.Checkpoint)
	}
	return true
}

// Checkpoint implements tail.Leases: a conditional write on ownership. It
// waits for no sync.
func (w *Worker) Checkpoint(ctx context.Context, shard string, p tail.Position) error {
	w.mu.Lock()
	_, ok := w.held[shard]
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("checkpoint %s: %w", shard, tail.ErrLeaseLost)
	}
	vals := map[string]types.AttributeValue{
		":zero": &types.AttributeValueMemberN{Value: "0"},
		":me":   &types.AttributeValueMemberS{Value: w.opts.WorkerID},
	}
	var update string
	switch {
	case p.ShardEnd:
		// Finished: nobody holds it any more.
		update = "SET checkpoint = :cp, checkpointSubSequenceNumber = :zero, ownerSwitchesSinceCheckpoint = :zero REMOVE leaseOwner, " + attrFrom + ", " + attrLogEvent
		vals[":cp"] = &types.AttributeValueMemberS{Value: ShardEnd}
	case p.SequenceNumber != "":
		update = "SET checkpoint = :cp, checkpointSubSequenceNumber = :sub, ownerSwitchesSinceCheckpoint = :zero"
		if p.InBatch {
			update += ", " + attrLogEvent + " = :ev REMOVE " + attrFrom
			vals[":ev"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.LogEventIndex, 10)}
		} else {
			update += " REMOVE " + attrFrom + ", " + attrLogEvent
		}
		vals[":cp"] = &types.AttributeValueMemberS{Value: p.SequenceNumber}
		vals[":sub"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.SubSequence, 10)}
	case !p.From.IsZero():
		update = "SET checkpoint = :cp, checkpointSubSequenceNumber = :zero, " + attrFrom + " = :from REMOVE " + attrLogEvent
		vals[":cp"] = &types.AttributeValueMemberS{Value: AtTimestamp}
		vals[":from"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.From.UnixMilli(), 10)}
	default:
		return nil
	}
	_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(w.opts.Table),
			Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("leaseOwner = :me"),
			ExpressionAttributeValues: vals,
		})
	})
	if conflict(err) {
		w.mu.Lock()
		delete(w.held, shard)
		w.mu.Unlock()
		return fmt.Errorf("checkpoint %s: %w", shard, tail.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", shard, err)
	}
	if p.ShardEnd {
		w.mu.Lock()
		delete(w.held, shard) // nothing more to renew
		w.mu.Unlock()
	}
	return nil
}

// Release implements tail.Leases: every held lease loses its owner, so
// other workers take it at once instead of after a lease duration.
func (w *Worker) Release(ctx context.Context) error {
	w.mu.Lock()
	shards := slices.Collect(maps.Keys(w.held))
	clear(w.held)
	w.mu.Unlock()
	errs := make([]error, len(shards))
	parallel(len(shards), func(i int) {
		_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:           aws.String(w.opts.Table),
				Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shards[i]}},
				UpdateExpression:    aws.String("REMOVE leaseOwner SET leaseCounter = leaseCounter + :one"),
				ConditionExpression: aws.String("leaseOwner = :me"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":one": &types.AttributeValueMemberN{Value: "1"},
					":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
				},
			})
		})
		if err != nil && !conflict(err) {
			errs[i] = fmt.Errorf("release lease %s: %w", shards[i], err)
		}
	})
	return errors.Join(errs...)
}
