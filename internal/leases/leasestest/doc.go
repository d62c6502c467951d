// Package leasestest holds helpers for tests of lease tables: KCLRow
// builds rows the way the Kinesis Client Library writes them (leaseKey,
// checkpoint, sub-sequence, owner, counter, parents), for tests of code that
// reads tables kinesis-shards did not write (docs/KINESIS-NOTES.md §6), written from the schema rather
// than from the leases package's own writer so that the two can disagree;
// MemTable is an in-memory DynamoDB for tests and benchmarks of the lease
// worker that need no emulator (latency, hung and failing calls).
//
// Imports: internal/fake/dynamo (MemTable), the DynamoDB SDK and the
// standard library.
package leasestest
