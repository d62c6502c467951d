// Package lineage owns the shard DAG of a Kinesis stream and the hash-key
// arithmetic that goes with it.
//
// Build turns a ListShards listing into a Graph: shards, parents (ParentShardId
// and AdjacentParentShardId both count), children, open/closed/trimmed states,
// roots and a topological order that never trusts listing order (Kahn's
// algorithm, ties broken by hash range start, then shard id). A parent that is
// named but no longer listed is a trimmed root. Build is pure and fuzzed.
//
// HashKey is an unsigned 128-bit integer, parsed from and printed as the
// canonical decimal the service uses; HashRange is inclusive at both ends.
// EvenLayout reproduces the boundaries CreateStream gives N shards, and
// KeyAtPercent the split points of `split --at-percent`.
//
// ListShards and Load page ListShards the way the service requires (the
// stream and filter on the first call only, NextToken alone afterwards),
// each page under the ControlRead rule of internal/awscall (awscall.Do).
//
// Errors wrap one of the Err* sentinels and read as one sentence.
//
// Imports: the standard library, aws-sdk-go-v2 types, internal/awscall
// and internal/awserr only. Nothing in this package prints, reads flags or builds clients.
package lineage
