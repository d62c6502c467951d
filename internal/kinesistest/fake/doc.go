// Package fake is an in-memory Kinesis for unit tests: streams,
// shards with hash ranges, records with sequence numbers, iterators, splits,
// merges and trimming, behind the SDK's own method signatures so it
// satisfies the narrow interfaces of lineage, tail and reshard. It follows
// AWS where the emulators differ (ListShards paging with NextToken alone,
// the end of a shard as a nil iterator with ChildShards) and can imitate
// kinesalite's ending (no ChildShards, an extra empty call). Tests script
// histories with its helper methods and inject faults with Hook.
//
// Use it for the logic above the SDK: the tail scheduler, the reshard
// executor, listings and lineage, where a test scripts a history (splits,
// merges, trimming, faults through Hook) and checks exactly what was read
// or called, in milliseconds and without any process. It never touches
// HTTP, so it cannot test what the SDK does on the wire (decoding, retries,
// error codes): use wirestub for that, and the emulator for the binary.
package fake
