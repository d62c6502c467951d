// Package kpl builds KPL aggregated records for tests, as the Kinesis
// Producer Library writes them: the magic F3 89 9A C2, a protobuf
// AggregatedRecord, and the MD5 of the protobuf bytes.
//
//	message AggregatedRecord { repeated string partition_key_table = 1; repeated string explicit_hash_key_table = 2; repeated Record records = 3; }
//	message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2; required bytes data = 3; repeated Tag tags = 4; }
package kpl
