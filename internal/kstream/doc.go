// Package kstream is the Kinesis access layer that several commands share:
// parsing a STREAM argument (name or ARN), listing the streams of a region
// (ListStreams, paged both ways backends page), describing a stream,
// waiting until it is ACTIVE by polling DescribeStreamSummary with short
// delays, and creating a missing stream (create, tail --create-if-missing,
// the reshard executor), and the life of an enhanced fan-out consumer:
// register (or reuse one of the same name), describe, wait for ACTIVE with
// progress, list, deregister, the default name for a user and host, and
// the 20-consumer limit in one sentence naming the consumers there are.
// Its read-only calls go through the ControlRead rule of internal/awscall
// (awscall.Do), as do the ListShards pages of lineage.
//
// Imports: the SDK, the standard library, internal/awserr and
// internal/awscall.
package kstream
