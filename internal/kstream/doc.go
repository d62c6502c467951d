// Package kstream holds the stream-level operations that several commands
// share: parsing a STREAM argument (name or ARN), describing a stream,
// waiting until it is ACTIVE by polling DescribeStreamSummary with short
// delays, and creating a missing stream (create, tail --create-if-missing,
// the reshard executor).
//
// Imports: the SDK and the standard library only.
package kstream
