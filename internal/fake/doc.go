// Package fake is a Kinesis of the tool's own, in memory: streams, shards
// with hash ranges and MD5 routing of partition keys, records with
// sequence numbers, iterators of every type, splits, merges and
// UpdateShardCount (parents closed, children opened, ChildShards at a
// shard's end), trimming, the account's shard quota, PutRecords' limits,
// each shard's read and write quotas (Quotas), and stream states
// (CREATING, UPDATING, DELETING for StateDelay).
//
// It is reached three ways:
//   - in process, through the SDK's own method signatures, so it satisfies
//     the narrow interfaces of lineage, tail and reshard (tests script a
//     history with its helper methods and inject faults with Hook);
//   - over the wire, in the Kinesis JSON protocol (Handler), by any SDK
//     client: through Transport in process, or on a port;
//   - as `kinesis-shards local`, which serves Handler on a port for users
//     and their own consumer tests.
//
// It follows AWS where the emulators differ (ListShards paging with
// NextToken alone, the end of a shard as a nil iterator with ChildShards)
// and can imitate kinesalite's ending (no ChildShards, an extra empty
// call). With Quotas it keeps each shard's read and write quotas as the
// service does (throttling what goes over) and expires iterators after
// five minutes. The error codes it answers with are the service's (it is
// the service side: the client's reading of them is internal/awserr's).
// Enhanced fan-out is served too: consumers (CREATING and DELETING for
// StateDelay, 20 a stream) and SubscribeToShard's event stream, one
// subscription per consumer and shard, ending at the shard's end with its
// children or after five minutes.
//
// Retention is kept as the service keeps it: records older than their
// stream's period (24 hours, or Retention for new streams; the retention
// calls change it) are trimmed, lazily, by the fake's clock (Now), so
// TRIM_HORIZON starts after them and a closed shard leaves ListShards once
// it closed longer ago than the period; tests move Now instead of waiting,
// or take a shard out at once with Trim. MaxBytes bounds the records kept,
// trimming the oldest of the service first, as if they had aged out.
// Faults answers a share of the calls with throttles, failures or expired
// iterators, in the service's shape, to practise a client's handling of
// them.
//
// Imports: the SDK (its Kinesis types and schemas, smithy's AWS JSON
// protocol) and the standard library.
package fake
