// Package awsdebug logs SDK calls for --debug: one line per call with the
// operation, stream, shard, HTTP status, attempts, latency and request id.
// It never logs headers, bodies, credentials or signatures (unlike
// aws.LogRequest, which dumps the Authorization header).
//
// Imports: internal/text, smithy-go's middleware, the SDK and the standard
// library.
package awsdebug
