// Package consumer answers "how far behind is my consumer?". It reads
// where a consumer is on each shard from the place the consumer keeps its
// positions (a tail checkpoint file, a tail lease table, or a KCL
// application's lease table, all read without changing them), lays that
// over the lineage (reading, finished, blocked by a parent that is not
// finished, not started, trimmed), and measures how far behind the tip
// each shard's position is: the MillisBehindLatest of one GetRecords
// (Limit 1) from just after it. `kinesis-shards lag` and the dashboard's
// LAG column both come from Lag.
//
// Imports: tail (positions and the checkpoint reader), internal/leases
// (lease tables), internal/kstream, internal/awscall, internal/awserr, internal/awsdebug
// (the shard of each call in --debug), lineage, the Kinesis SDK and the
// standard library.
package consumer
