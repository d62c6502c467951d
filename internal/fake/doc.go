// Package fake is a Kinesis of the tool's own, in memory: streams, shards
// with hash ranges and MD5 routing of partition keys, records with
// sequence numbers, iterators of every type, splits, merges and
// UpdateShardCount (parents closed, children opened, ChildShards at a
// shard's end), trimming, the account's shard quota, PutRecords' limits,
// and stream states (CREATING, UPDATING, DELETING for StateDelay).
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
// call). The error codes it answers with are the service's (it is the
// service side: the client's reading of them is internal/awserr's). Not
// served yet: enhanced fan-out (consumers, SubscribeToShard), the per-shard
// read and write quotas and their throttles, iterator expiry, retention
// trimming by age; tests that need those use the wire stubs under
// internal/kinesistest and the emulators.
//
// Imports: the SDK (its Kinesis types and schemas, smithy's AWS JSON
// protocol) and the standard library.
package fake
