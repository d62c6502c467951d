// Package pacing holds what every reader of shards shares about waiting:
// the backoff after a throttled or failed call. tail's readers and the
// reshard sampler both use it, so a throttled shard is retried the same
// way whichever command reads it.
//
// Imports: the standard library only.
package pacing
