// Package hotstub is a loopback Kinesis stub of shards written hard, which
// enforces the read limits of a shard the way AWS does: at most 5
// GetRecords calls in any second (every attempt counts), and after a
// response of B bytes the shard refuses calls for B / 2 MiB per second
// (10 MiB: 5 s), answering ProvisionedThroughputExceededException; a
// throttled call itself keeps the shard refused for a further second.
// GetShardIterator has its own 5 calls a second. No emulator throttles, so
// this is where readers that must survive hot shards (the reshard sampler,
// the hot-shard reader) are tested.
//
// Each shard holds records written at a steady rate from a start time, made
// on demand (nothing is stored): record i arrives at Start + i/Rate, with
// the partition key Key(shard, i) and RecordSize bytes of data. Records are
// readable once they have arrived by the stub's clock, which tests share
// with the reader (a fake clock that only the reader's sleeps move), so a
// test of a 5-second rule takes no 5 seconds.
//
// It serves DescribeStreamSummary, ListShards (one page), GetShardIterator
// (TRIM_HORIZON, LATEST, AT_TIMESTAMP, AT_/AFTER_SEQUENCE_NUMBER) and
// GetRecords over the awsJson1.1 protocol, and counts what it served.
// Unlike wirestub it models the service's limits, not its speed.
package hotstub
