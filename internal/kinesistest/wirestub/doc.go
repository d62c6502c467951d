// Package wirestub is a loopback Kinesis stub that speaks the wire protocol:
// an HTTP
// server on 127.0.0.1 that speaks the awsJson1.1 protocol (POST /,
// X-Amz-Target: Kinesis_20131202.<Op>) well enough for `tail` and the SDK:
// DescribeStreamSummary, ListStreams, ListShards (NextToken paging),
// GetShardIterator and GetRecords.
//
// GetRecords answers at once with a full page of records that was encoded
// once at start (every shard and every page serves the same bytes), with
// MillisBehindLatest > 0 while a shard is "behind" so a reader reads back to
// back; after Options.Pages pages a shard is caught up and answers empty
// pages. It measures the client, not a service: no throttling, no
// resharding, no retention, and no checks of signatures or sequence numbers.
//
// Use it where the bytes on the wire matter: benchmarks of the whole read
// path (SDK, HTTP, the GetRecords decoder), the decoder's differential
// tests, and answers no emulator gives. For scheduling and ordering logic
// the in-process fake is faster and scriptable; for the binary end to end,
// the emulator (with faults in front of it).
package wirestub
