// Package leasestest builds lease-table rows the way the Kinesis Client
// Library writes them (docs/KINESIS-NOTES.md §6), for tests of code that reads tables
// kinesis-shards did not write. It is written from the schema, not from the
// leases package's own writer, so that the two can disagree.
//
// Imports: the DynamoDB SDK types and the standard library.
package leasestest
