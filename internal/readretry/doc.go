// Package readretry is the one read-retry policy of the tool: which
// Kinesis control-plane operations are read-only, and how a
// LimitExceeded on one of them is waited out before it is
// reported. Every read-only control-plane call goes through Do: the
// ListStreams iterator and Describe of internal/kstream, and the pages of
// lineage.ListShards. cmd words a LimitExceeded after these retries
// differently from one on a call that changes the stream (ReadOnly).
//
// It sits below lineage and kstream so that both (and tail, reshard and
// cmd above them) can use it.
//
// Imports: internal/awserr and the standard library.
package readretry
