// Package pacing holds what every reader of shards shares about waiting:
// the backoff after a failed call, and the wait after a throttle
// (AfterThrottle: never within the second the service keeps refusing the
// shard). tail's polling and subscribed readers, the reshard sampler and
// window reader (hot, split/scale --balanced, the dashboard) and lag's
// probes all use it, so a throttled shard is retried the same way
// whichever command reads it.
//
// Imports: the standard library only.
package pacing
