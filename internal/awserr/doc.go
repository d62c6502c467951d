// Package awserr is the one place that knows what an error of an AWS call
// means: Classify maps an error of any service the tool calls (Kinesis,
// DynamoDB, and those to come) to a Kind, keeping the error code, message,
// HTTP status and request id for the sentence the user reads. Every retry
// decision and every message about a failed call starts from it, and the
// services' error code strings appear here and nowhere else in the
// production code.
//
// The Kind says what happened, not what to do: whether a throttle is
// waited out, a LimitExceeded retried or an undecodable answer given up on
// is the caller's policy (a reader of a shard waits out what a call that
// changes a stream must report at once).
//
// To handle a new error code: add it to the codes table (and a case to
// TestClassify); every caller that asks for its kind follows.
//
// Imports: smithy-go and the standard library.
package awserr
