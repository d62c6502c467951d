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
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/tail"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
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

func conflict(err error) bool { return awserr.Of(err) == awserr.ConditionFailed }

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
			TableName:        aws.String(w.opts.Table),
			Key:              map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression: aws.String("SET leaseCounter = leaseCounter + :one"),
			// Ours, or ours to hand over (checkpointOwner) until we let go.
			ConditionExpression: aws.String("(leaseOwner = :me OR checkpointOwner = :me) AND leaseCounter = :c"),
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
			UpdateExpression:          aws.String("SET leaseOwner = :me, leaseCounter = leaseCounter + :one, ownerSwitchesSinceCheckpoint = if_not_exists(ownerSwitchesSinceCheckpoint, :zero) + :one REMOVE " + attrCheckpointOwn + ", " + attrHandOffBy),
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
	prev, handing := l.Owner, l.CheckpointOwner
	l.Owner, l.Counter, l.Checkpoint, l.SubSequence, l.From = w.opts.WorkerID, got.Counter, got.Checkpoint, got.SubSequence, got.From
	l.CheckpointOwner, l.HandOffBy = "", 0
	w.mu.Lock()
	w.held[l.ShardID] = heldLease{counter: got.Counter, until: sent.Add(w.opts.LeaseDuration)}
	w.mu.Unlock()
	switch {
	case handing != "":
		w.opts.Logf("lease %s: taken at %s: %s did not hand it over in time", l.ShardID, l.Checkpoint, handing)
	case prev != "":
		w.opts.Logf("lease %s: taken over from %s at %s", l.ShardID, prev, l.Checkpoint)
	default:
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
	sets, removes, vals := checkpointUpdate(p)
	if sets == nil {
		return nil
	}
	vals[":me"] = &types.AttributeValueMemberS{Value: w.opts.WorkerID}
	update := "SET " + strings.Join(sets, ", ")
	if len(removes) > 0 {
		update += " REMOVE " + strings.Join(removes, ", ")
	}
	_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(w.opts.Table),
			Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("(leaseOwner = :me OR checkpointOwner = :me)"),
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

// checkpointUpdate is what a checkpoint at p sets and removes (nil sets:
// nothing to write).
func checkpointUpdate(p tail.Position) (sets, removes []string, vals map[string]types.AttributeValue) {
	vals = map[string]types.AttributeValue{":zero": &types.AttributeValueMemberN{Value: "0"}}
	switch {
	case p.ShardEnd:
		// Finished: nobody holds it any more.
		vals[":cp"] = &types.AttributeValueMemberS{Value: ShardEnd}
		return []string{"checkpoint = :cp", "checkpointSubSequenceNumber = :zero", "ownerSwitchesSinceCheckpoint = :zero"},
			[]string{"leaseOwner", attrFrom, attrLogEvent}, vals
	case p.SequenceNumber != "":
		vals[":cp"] = &types.AttributeValueMemberS{Value: p.SequenceNumber}
		vals[":sub"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.SubSequence, 10)}
		sets = []string{"checkpoint = :cp", "checkpointSubSequenceNumber = :sub", "ownerSwitchesSinceCheckpoint = :zero"}
		if p.InBatch {
			vals[":ev"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.LogEventIndex, 10)}
			return append(sets, attrLogEvent+" = :ev"), []string{attrFrom}, vals
		}
		return sets, []string{attrFrom, attrLogEvent}, vals
	case !p.From.IsZero():
		vals[":cp"] = &types.AttributeValueMemberS{Value: AtTimestamp}
		vals[":from"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(p.From.UnixMilli(), 10)}
		return []string{"checkpoint = :cp", "checkpointSubSequenceNumber = :zero", attrFrom + " = :from"}, []string{attrLogEvent}, vals
	}
	return nil, nil, nil
}

// requestHandOff asks the live owner of a lease for it, as the KCL 3's
// graceful hand-off does: leaseOwner becomes us and checkpointOwner the
// owner, which goes on renewing it, checkpoints what it wrote, and then
// lets go (HandOff). The counter does not move, so the owner's renewals
// go on; the condition makes sure nobody changed the lease since the scan
// and no other hand-off is under way. We wait until HandOffBy at most;
// after that, or once the owner stops renewing, we take it.
func (w *Worker) requestHandOff(ctx context.Context, l *Lease) bool {
	by := w.opts.Now().Add(w.handOffTimeout()).UnixMilli()
	_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           aws.String(w.opts.Table),
			Key:                 map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: l.Key}},
			UpdateExpression:    aws.String("SET leaseOwner = :me, " + attrCheckpointOwn + " = :old, " + attrHandOffBy + " = :by"),
			ConditionExpression: aws.String("leaseOwner = :old AND leaseCounter = :c AND attribute_not_exists(" + attrCheckpointOwn + ")"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":me":  &types.AttributeValueMemberS{Value: w.opts.WorkerID},
				":old": &types.AttributeValueMemberS{Value: l.Owner},
				":c":   &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Counter, 10)},
				":by":  &types.AttributeValueMemberN{Value: strconv.FormatInt(by, 10)},
			},
		})
	})
	if err != nil {
		if !conflict(err) {
			w.opts.Logf("lease %s: asking %s for it failed: %v", l.ShardID, l.Owner, err)
		}
		return false
	}
	w.opts.Logf("lease %s: asked %s to hand it over (it checkpoints what it wrote, then lets go)", l.ShardID, l.Owner)
	l.CheckpointOwner, l.Owner, l.HandOffBy = l.Owner, w.opts.WorkerID, by
	return true
}

// HandOff implements tail.Leases: the last checkpoint of a lease another
// worker asked for (p, what was written before its reader stopped), and
// in the same write the lease passes to that worker (checkpointOwner
// removed, the counter moved, so that it takes it as its own).
func (w *Worker) HandOff(ctx context.Context, shard string, p tail.Position) error {
	// (Read to its end meanwhile, it is finished: nobody's.)
	sets, removes, vals := checkpointUpdate(p)
	removes = append(removes, attrCheckpointOwn, attrHandOffBy)
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":me"] = &types.AttributeValueMemberS{Value: w.opts.WorkerID}
	vals[":one"] = &types.AttributeValueMemberN{Value: "1"}
	sets = append(sets, "leaseCounter = leaseCounter + :one")
	update := "SET " + strings.Join(sets, ", ") + " REMOVE " + strings.Join(removes, ", ")
	_, err := call(ctx, w, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return w.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(w.opts.Table),
			Key:                       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shard}},
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(attrCheckpointOwn + " = :me"),
			ExpressionAttributeValues: vals,
		})
	})
	w.mu.Lock()
	if err == nil || conflict(err) {
		delete(w.held, shard)
		delete(w.handing, shard)
	}
	w.mu.Unlock()
	switch {
	case conflict(err):
		return fmt.Errorf("hand over %s: %w", shard, tail.ErrLeaseLost)
	case err != nil:
		return fmt.Errorf("hand over %s: %w", shard, err)
	}
	w.opts.Logf("lease %s: handed over at %s", shard, p)
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
				TableName: aws.String(w.opts.Table),
				Key:       map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: shards[i]}},
				// A lease being handed over is let go too: whoever asked for
				// it takes it at once, from the checkpoint just written.
				UpdateExpression:    aws.String("REMOVE leaseOwner, " + attrCheckpointOwn + ", " + attrHandOffBy + " SET leaseCounter = leaseCounter + :one"),
				ConditionExpression: aws.String("(leaseOwner = :me OR checkpointOwner = :me)"),
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
