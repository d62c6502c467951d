package fake

import (
	"fmt"
	"math/big"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// A shard's quotas (Fake.Quotas), as the service keeps them.
const (
	readCallsPerSecond  = 5
	readBytesPerSecond  = 2 << 20
	writeRecordsPerSec  = 1000
	writeBytesPerSecond = 1 << 20
	iteratorLifetime    = 5 * time.Minute
)

// shardQuota is what a shard has served lately.
type shardQuota struct {
	reads        []time.Time // GetRecords calls of the last second
	readsBlocked time.Time   // after a big answer: no read before then
	writeSecond  int64       // the second (Unix) the write counts are for
	writeRecords int
	writeBytes   int
}

// readQuota admits a GetRecords call on the shard now, or says why not:
// an iterator older than five minutes, the shard's 5 calls of this second
// (the refused call counts too), or the bytes of an earlier answer not yet
// refilled. Called under the lock.
func (f *Fake) readQuota(s *Stream, sh *Shard, issued time.Time) error {
	now := f.now()
	if now.Sub(issued) > iteratorLifetime {
		return &types.ExpiredIteratorException{Message: aws.String(fmt.Sprintf("Iterator expired. The iterator was created at time %s while right now it is %s which is further in the future than the tolerated delay of 300000 milliseconds.",
			issued.UTC().Format("Mon Jan 02 15:04:05 UTC 2006"), now.UTC().Format("Mon Jan 02 15:04:05 UTC 2006")))}
	}
	q := &sh.quota
	recent := q.reads[:0]
	for _, t := range q.reads {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	q.reads = append(recent, now)
	if len(q.reads) > readCallsPerSecond || now.Before(q.readsBlocked) {
		return &types.ProvisionedThroughputExceededException{Message: aws.String(fmt.Sprintf("Rate exceeded for Shard - %s in stream %s under account 123456789012.", sh.ID, s.Name))}
	}
	return nil
}

// readAnswered charges an answer's bytes to the shard's read quota: the
// shard refuses reads until they have refilled at 2 MiB a second.
func (f *Fake) readAnswered(sh *Shard, recs []types.Record) {
	n := 0
	for _, r := range recs {
		n += len(r.Data) + len(aws.ToString(r.PartitionKey))
	}
	if n > 0 {
		sh.quota.readsBlocked = f.now().Add(time.Duration(float64(n) / readBytesPerSecond * float64(time.Second)))
	}
}

// writeQuota admits a record of n bytes (data and key) to the open shard
// that owns hash h in this second, or throttles it. Called under the lock.
func (f *Fake) writeQuota(s *Stream, h *big.Int, n int) *types.ProvisionedThroughputExceededException {
	for _, sh := range s.shards {
		if sh.Closed || sh.Trimmed || sh.Start.Cmp(h) > 0 || h.Cmp(sh.End) > 0 {
			continue
		}
		q := &sh.quota
		if sec := f.now().Unix(); q.writeSecond != sec {
			q.writeSecond, q.writeRecords, q.writeBytes = sec, 0, 0
		}
		if q.writeRecords+1 > writeRecordsPerSec || q.writeBytes+n > writeBytesPerSecond {
			return &types.ProvisionedThroughputExceededException{Message: aws.String(fmt.Sprintf("Rate exceeded for shard %s in stream %s under account 123456789012.", sh.ID, s.Name))}
		}
		q.writeRecords++
		q.writeBytes += n
		return nil
	}
	return nil
}
