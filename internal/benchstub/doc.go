// Package benchstub is a loopback Kinesis stub for benchmarks: an HTTP
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
package benchstub
