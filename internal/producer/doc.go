// Package producer writes lines of input to a stream as records: the
// engine of `kinesis-shards put`. Run reads its input line by line, makes
// each line a record (the line with a fixed, a JSON field's or a random
// partition key, or the record of a `tail --format json` line with its own
// partition key and explicit hash key), and batches the records into
// PutRecords calls of at most 500 records and 5 MiB, sent when a batch is
// full or the input pauses for Options.Linger.
//
// A batch never holds two records of one key, so no retry can put a key's
// records out of order. After a partial failure only the failed entries
// are sent again, in their order, with a doubling backoff (capped at 5 s,
// with jitter); a whole call refused as throttled is sent again the same
// way. A call that got no answer may have written its records: Run stops
// with an *UnknownOutcomeError naming them, and does not count them. A
// limiter (Options.Rate, Options.RateBytes) caps the records and bytes
// sent per second, retries included.
//
// The stream's status, the flags and every word the user reads (the
// summary, the warnings, the notes beside an error) are the caller's: Run
// returns a Stats and hands its debug lines and warnings to callbacks.
//
// Imports: internal/awscall (waits), internal/awserr (what an error
// means), internal/kstream (the stream's Ref), lineage (explicit hash
// keys), the SDK, golang.org/x/time/rate and the standard library.
package producer
