// Package reshard plans and executes changes to a stream's shard layout:
// SplitShard, MergeShards and UpdateShardCount.
//
// Plan is pure: from a lineage.Graph and a goal it returns the API calls in
// order and the open layout after each, having checked every rule the service
// enforces (and the ones it is known to enforce only on AWS) before anything
// is sent. The executor runs a plan step by step, waits for ACTIVE between
// steps and reports progress through a callback.
//
// Imports: lineage, internal helpers, the SDK and the standard library.
package reshard
