// Package kstream is the Kinesis access layer that several commands share:
// parsing a STREAM argument (name or ARN), listing the streams of a region
// (ListStreams, paged both ways backends page), describing a stream,
// waiting until it is ACTIVE by polling DescribeStreamSummary with short
// delays, and creating a missing stream (create, tail --create-if-missing,
// the reshard executor). Its read-only calls go through the read-retry
// policy of internal/readretry, as do the ListShards pages of lineage.
//
// Imports: the SDK, the standard library and internal/readretry.
package kstream
