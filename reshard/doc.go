// Package reshard plans and executes changes to a stream's shard layout:
// SplitShard, MergeShards and UpdateShardCount.
//
// NewPlan is pure: from a lineage.Graph, the stream's status and mode and a
// goal (split at a key, a percentage or the median of sampled traffic; merge
// two shards; scale to N) it returns the API calls in order and the open
// layout they lead to, having checked every rule the service enforces (and
// the ones it is known to enforce only on AWS) before anything is sent. A
// refusal is one sentence wrapping an Err* sentinel. Scaling by splits and
// merges reaches exactly lineage.EvenLayout(N) with the fewest calls.
//
// SampleTraffic reads a bounded, paced sample of the recent records of some
// shards, for traffic shares in previews and for splitting at the median.
// The Executor runs a plan one call at a time, waits for ACTIVE between
// steps, resolves the ids of shards made by earlier steps from a fresh
// listing, stops at the first failure and reports progress through a
// callback. TookEffect tells, from a listing, whether a step that failed
// before it was sent took effect all the same (its answer was lost).
//
// Imports: lineage, internal/kstream, the SDK and the standard library.
package reshard
