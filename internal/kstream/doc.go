// Package kstream holds the stream-level operations that several commands
// share: parsing a STREAM argument (name or ARN), describing a stream,
// waiting until it is ACTIVE by polling DescribeStreamSummary with short
// delays, and creating a missing stream (create, tail --create-if-missing,
// the reshard executor), and the life of an enhanced fan-out consumer:
// register (or reuse one of the same name), describe, wait for ACTIVE with
// progress, list, deregister, the default name for a user and host, and
// the 20-consumer limit in one sentence naming the consumers there are.
//
// Imports: the SDK and the standard library only.
package kstream
