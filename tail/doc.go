// Package tail reads a whole stream in an order that keeps every partition
// key's records in order across splits and merges: a shard is read only once
// each of its parents has been read to its end (SHARD_END in the checkpoint
// store) or has been trimmed away.
//
// It owns the scheduler, the per-shard readers and their pacing, KPL
// de-aggregation and the checkpoint store (the local file is the first
// implementation). It never prints: records leave through a callback, and
// checkpoints follow what the caller acknowledges as written.
//
// Imports: lineage, internal helpers, the SDK and the standard library.
package tail
