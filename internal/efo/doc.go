// Package efo reads a shard through enhanced fan-out: SubscribeToShard
// event streams of a registered consumer, which give that consumer 2 MiB
// per second per shard of its own instead of a share of the shard's five
// GetRecords calls per second.
//
// A Reader owns one consumer and shard. Run subscribes from a starting
// position and hands every event over, in order, to a callback that may
// take its time: the reader reads nothing more until it returns. A
// subscription lasts at most five minutes, and may be dropped, refused or
// fail inside its stream after a 200; the reader subscribes again from
// just after the last event it handed over (AFTER_SEQUENCE_NUMBER of its
// continuation), so nothing is skipped and nothing repeated, and returns
// at the shard's end with the children the last event names. Calls are
// paced at one a second per consumer and shard (a Pacer shared by the
// readers of a process); ResourceInUse is asked again with
// backoff and, when it persists, reported as an *InUseError naming the
// consumer and the shard. docs/KINESIS-NOTES.md §8 has the service's rules
// it follows.
//
// The parent-before-child order across shards is the caller's (tail's
// scheduler): a Reader knows one shard.
//
// Imports: internal/awsdebug, internal/awserr, internal/kstream,
// internal/awscall, the SDK and the standard library.
package efo
