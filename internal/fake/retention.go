package fake

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Retention, as the service keeps it: a stream's records are readable for
// its retention period (24 hours unless changed), then trimmed, oldest
// first, so TRIM_HORIZON starts after them; a closed shard leaves
// ListShards once it closed more than the period ago (its records have all
// aged out by then). The fake trims lazily, whenever a call looks a stream
// up, by its clock (Now), so a test moves time instead of waiting.
//
// MaxBytes trims the same way, by size: the oldest records of the whole
// service go first, as if they had aged out.
//
// Trimmed records leave the shard's slice, but positions stay: a reader's
// index counts every record the shard ever had (gone of them trimmed), so
// iterators issued before a trim still point where they did.

const (
	defaultRetention  = 24 * time.Hour
	minRetentionHours = 24
	maxRetentionHours = 8760
)

// keeping is what a stream keeps track of for trimming.
type keeping struct {
	retention time.Duration
	bytes     int64 // data and keys of the records its shards hold
}

// trimState is how far a shard's records have been trimmed.
type trimState struct {
	gone     int       // records trimmed from the front: Records[0] is number gone
	goneSeq  string    // the sequence number of the last of them ("" for none)
	closedAt time.Time // when the shard closed (zero while open)
	openedAt time.Time // when the shard opened (zero: with its stream)
}

// recBytes is what a record weighs for MaxBytes: data and key, as the
// service's quotas count it.
func recBytes(r Rec) int64 { return int64(len(r.Data) + len(r.PartitionKey)) }

// newRetention is the retention period of a stream created now.
func (f *Fake) newRetention() time.Duration {
	if f.Retention > 0 {
		return f.Retention
	}
	return defaultRetention
}

// retentionHours is the period as DescribeStreamSummary reports it, in
// whole hours (a shorter Retention, for practice, counts as one hour).
func (s *Stream) retentionHours() int32 {
	return int32((s.retention + time.Hour - 1) / time.Hour)
}

// noteClosed records when the stream's shards opened and closed, for
// retention to take them out of listings in time and for ListShards'
// time filters. Every call that closes shards runs
// it (through transition, or after closing); trimAged runs it too, for a
// shard a test closed by hand. Called under the lock.
func (s *Stream) noteClosed(now time.Time) {
	for _, sh := range s.shards {
		if sh.openedAt.IsZero() {
			sh.openedAt = now
		}
		if sh.Closed && sh.closedAt.IsZero() {
			sh.closedAt = now
		}
	}
}

// trimAged trims the stream's records older than its retention period and
// takes out of listings the closed shards that closed longer ago than the
// period. Called under the lock by every call that looks a stream up.
func (f *Fake) trimAged(s *Stream) {
	now := f.now()
	s.noteClosed(now)
	cutoff := now.Add(-s.retention)
	for _, sh := range s.shards {
		if sh.Trimmed {
			continue
		}
		n := 0
		for n < len(sh.Records) && sh.Records[n].Arrival.Before(cutoff) {
			n++
		}
		f.dropHead(s, sh, n)
		if sh.Closed && len(sh.Records) == 0 && sh.closedAt.Before(cutoff) {
			sh.Trimmed = true
		}
	}
}

// dropHead trims a shard's first n records.
func (f *Fake) dropHead(s *Stream, sh *Shard, n int) {
	if n == 0 {
		return
	}
	for _, r := range sh.Records[:n] {
		s.bytes -= recBytes(r)
		f.stored -= recBytes(r)
	}
	sh.goneSeq = sh.Records[n-1].Seq
	// Cleared, the trimmed records' data is freed now rather than when
	// the slice next grows into a new array.
	clear(sh.Records[:n])
	sh.Records = sh.Records[n:]
	sh.gone += n
}

// storedRecord counts a record just put on s and, over MaxBytes, trims.
func (f *Fake) storedRecord(s *Stream, r Rec) {
	s.bytes += recBytes(r)
	f.stored += recBytes(r)
	if f.MaxBytes > 0 && f.stored > f.MaxBytes {
		f.trimToSize()
	}
}

// trimToSize trims the oldest records of the service, whatever their
// stream, until what it holds is within MaxBytes. f.stored still counts
// the records of deleted streams, so it is counted again first.
func (f *Fake) trimToSize() {
	f.stored = 0
	for _, s := range f.streams {
		f.stored += s.bytes
	}
	for f.stored > f.MaxBytes {
		// The shard whose first record is the oldest, and when the next
		// oldest first record (of any other shard) arrived: that shard's
		// records up to then go in one step.
		var (
			oldest   *Shard
			owner    *Stream
			next     time.Time
			haveNext bool
		)
		for _, s := range f.streams {
			for _, sh := range s.shards {
				if len(sh.Records) == 0 {
					continue
				}
				switch a := sh.Records[0].Arrival; {
				case oldest == nil || a.Before(oldest.Records[0].Arrival):
					if oldest != nil {
						next, haveNext = oldest.Records[0].Arrival, true
					}
					oldest, owner = sh, s
				case !haveNext || a.Before(next):
					next, haveNext = a, true
				}
			}
		}
		if oldest == nil {
			return
		}
		if !f.maxBytesHit {
			f.maxBytesHit = true
			if f.OnMaxBytes != nil {
				f.OnMaxBytes()
			}
		}
		n, over := 0, f.stored-f.MaxBytes
		for n < len(oldest.Records) && over > 0 && (n == 0 || !haveNext || !oldest.Records[n].Arrival.After(next)) {
			over -= recBytes(oldest.Records[n])
			n++
		}
		f.dropHead(owner, oldest, n)
	}
}

// trimmedSeq says whether seq is that of a record the shard no longer
// holds: from its start up to the last record trimmed.
func (sh *Shard) trimmedSeq(seq string) bool {
	if sh.goneSeq == "" {
		return false
	}
	n, ok := new(big.Int).SetString(seq, 10)
	last, _ := new(big.Int).SetString(sh.goneSeq, 10)
	start, _ := new(big.Int).SetString(sh.startSeq, 10)
	return ok && n.Cmp(start) > 0 && n.Cmp(last) <= 0
}

// IncreaseStreamRetentionPeriod implements the SDK call, with the
// service's checks: 24 to 8760 hours, not shorter than the current period,
// an ACTIVE stream.
func (f *Fake) IncreaseStreamRetentionPeriod(ctx context.Context, in *kinesis.IncreaseStreamRetentionPeriodInput, _ ...func(*kinesis.Options)) (*kinesis.IncreaseStreamRetentionPeriodOutput, error) {
	if err := f.call("IncreaseStreamRetentionPeriod", in); err != nil {
		return nil, err
	}
	if err := f.setRetention(in.StreamName, in.StreamARN, in.RetentionPeriodHours, true); err != nil {
		return nil, err
	}
	return &kinesis.IncreaseStreamRetentionPeriodOutput{}, nil
}

// DecreaseStreamRetentionPeriod implements the SDK call: as Increase, but
// not longer than the current period. Records older than the new period
// are trimmed at once (at the next call that looks at the stream).
func (f *Fake) DecreaseStreamRetentionPeriod(ctx context.Context, in *kinesis.DecreaseStreamRetentionPeriodInput, _ ...func(*kinesis.Options)) (*kinesis.DecreaseStreamRetentionPeriodOutput, error) {
	if err := f.call("DecreaseStreamRetentionPeriod", in); err != nil {
		return nil, err
	}
	if err := f.setRetention(in.StreamName, in.StreamARN, in.RetentionPeriodHours, false); err != nil {
		return nil, err
	}
	return &kinesis.DecreaseStreamRetentionPeriodOutput{}, nil
}

// setRetention checks and sets a stream's retention period; the stream is
// UPDATING for StateDelay, as after a reshard.
func (f *Fake) setRetention(name, arn *string, hours *int32, increase bool) error {
	if hours == nil {
		return validation("1 validation error detected: Value null at 'retentionPeriodHours' failed to satisfy constraint: Member must not be null")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.stream(name, arn)
	if err != nil {
		return err
	}
	h, cur := *hours, s.retentionHours()
	switch {
	case s.Status != types.StreamStatusActive:
		return &types.ResourceInUseException{Message: aws.String(fmt.Sprintf("Stream %s under account 123456789012 not ACTIVE, instead in state %s", s.Name, s.Status))}
	case h < minRetentionHours:
		return invalidArg("Minimum allowed retention period is %d hours. Requested retention period (%d hours) is too short.", minRetentionHours, h)
	case h > maxRetentionHours:
		return invalidArg("Maximum allowed retention period is %d hours. Requested retention period (%d hours) is too long.", maxRetentionHours, h)
	case increase && h < cur:
		return invalidArg("Requested retention period (%d hours) for stream %s can not be shorter than existing retention period (%d hours). Use DecreaseRetentionPeriod API.", h, s.Name, cur)
	case !increase && h > cur:
		return invalidArg("Requested retention period (%d hours) for stream %s can not be longer than existing retention period (%d hours). Use IncreaseRetentionPeriod API.", h, s.Name, cur)
	}
	s.retention = time.Duration(h) * time.Hour
	f.transition(s, types.StreamStatusUpdating)
	return nil
}
