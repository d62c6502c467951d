// Package reshard plans and executes changes to a stream's shard layout
// (SplitShard, MergeShards and UpdateShardCount), and reads and analyses the
// traffic those plans are made for.
//
// NewPlan is pure: from a lineage.Graph, the stream's status and mode and a
// goal (split at a key, a percentage or the median of sampled traffic; merge
// two shards; scale to N, evenly or balanced by sampled traffic) it returns
// the API calls in order and the open layout they lead to, having checked
// every rule the service enforces (and the ones it is known to enforce only
// on AWS) before anything is sent. A refusal is one sentence wrapping an
// Err* sentinel. Scaling by splits and merges reaches the even layout (each
// boundary within EvenTolerance) or the balanced one with the fewest calls.
//
// ReadWindows reads the records of some shards over a window, within each
// shard's read limits, sampling evenly across the window when it holds
// more than asked for; SampleTraffic turns that into the Sample a plan's
// traffic shares and balanced layouts come from, and Analyze into the
// hot-shard report (which shard is hot, by which keys, and whether a split
// helps). The Executor runs a plan one call at a time, waits for ACTIVE
// between steps, resolves the ids of shards made by earlier steps from a
// fresh listing, stops at the first failure and reports progress through a
// callback. When a call fails, the Executor looks, from a listing once the
// stream is ACTIVE, whether it took effect all the same (its answer was
// lost): the whole workflow, for the commands and the dashboard alike,
// which keep only the presentation and the confirmation.
//
// Imports: lineage, internal/kstream, internal/awscall, internal/awsdebug,
// internal/awserr, the SDK and the standard library.
package reshard
