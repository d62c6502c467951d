// Package leases reads and writes a lease table in the Kinesis Client
// Library's DynamoDB schema (docs/KINESIS-NOTES.md §6): the Worker shares a stream's
// shards among several `tail` processes, and Diagnose explains a KCL
// application's table over the lineage (who holds what, and which child is
// blocked by which parent).
//
// Imports: tail (the Leases interface and positions), lineage,
// internal/awserr, the DynamoDB SDK and the standard library.
package leases
