package awscall

import "github.com/kinesis-shards/kinesis-shards/internal/awserr"

// Verdict is what a reader of a shard does after a failed GetRecords or
// GetShardIterator: the DataRead row of the backoff table, as a decision.
type Verdict int

const (
	// Stop: report the error (the request itself is wrong, access is
	// denied, an answer that is not the API's, …).
	Stop Verdict = iota
	// Throttle: the shard's read quota (5 calls or 2 MiB a second) is
	// spent: ask again with the same iterator after Pacer.Throttled.
	Throttle
	// Retry: a passing failure (5xx, a dropped connection, a call past its
	// deadline): ask again after Pacer.Failed.
	Retry
	// Renew: the iterator expired (five minutes old): get a new one where
	// the reader stands, at once.
	Renew
	// Gone: the shard or the stream is not there; the reader decides
	// whether that is the shard's end (trimmed) or an error.
	Gone
)

// OnRead is the verdict on a failed data-plane read. A LimitExceeded
// counts as a throttle: some backends answer a shard's exhausted quota
// with it.
func OnRead(err error) Verdict {
	switch awserr.Of(err) {
	case awserr.Throttled, awserr.LimitExceeded:
		return Throttle
	case awserr.ExpiredIterator:
		return Renew
	case awserr.NotFound:
		return Gone
	}
	if Rules[DataRead].RetriesOn(err) {
		return Retry
	}
	return Stop
}
