// Package fanout tests enhanced fan-out (SubscribeToShard event streams)
// at two layers, since no local emulator serves it the way the Go SDK and
// AWS do (docs/KINESIS-NOTES.md §8 and §10).
//
// Shim is a loopback reverse proxy in front of kinesis-mock, for tests of
// the real read path against a real emulator (records, continuations,
// re-subscription, consumers, the binary end to end). For SubscribeToShard
// answers of status 200 and type application/vnd.amazon.eventstream it
//
//   - writes the initial-response event the SDK reads first and
//     kinesis-mock never sends, then passes the emulator's events on as
//     they come, each flushed at once;
//   - ends a closed shard's subscription as AWS does, which kinesis-mock
//     never does: once ListShards says the shard is closed and an event
//     with no records has come after that (so everything was delivered),
//     it sends a final event with a null ContinuationSequenceNumber naming
//     the children, and ends the stream (ShimOptions.PassThrough turns this
//     off);
//   - with ShimOptions.EndAfter, ends every subscription early and cleanly
//     at an event boundary, as AWS does after five minutes.
//
// Everything else, errors inside the stream included (kinesis-mock answers
// a busy consumer and shard with a ResourceInUseException after a 200),
// passes through unchanged. The shim records every call's starting
// position (Calls).
//
// Stub is a loopback server of its own for what no emulator produces: it
// serves the consumer calls (register, describe with CREATING and DELETING
// that last a given number of polls, paged listing, deregister, the
// 20-consumer limit), DescribeStreamSummary and ListShards (enough for a
// client to schedule its shards) and SubscribeToShard over shards whose records the
// test puts, with AWS's rules: one call a second per consumer and shard
// (LimitExceededException), a second subscription within 5 s of the first
// refused (ResourceInUseException from the call) and a later one taking
// over (the old stream ends with ResourceInUseException), a five-minute
// lifetime (short in tests), and the shard's end as a final event with the
// children. Faults are scripted per call (Fail): an error or a 5xx from the
// call, a call that never answers, an exception inside the stream after a
// 200, a stream cut in the middle of an event, a stalled stream, an early
// clean end, a stream that repeats records. It serves HTTP/1.1, or HTTP/2
// over TLS (StubOptions.TLS) to test the client's transport.
//
// FakeServer serves SubscribeToShard over loopback HTTP from an in-memory
// fake.Fake, so that the tail scheduler's tests, which script reshard
// histories on the fake, read them subscribed as well as polling: the same
// records, closed shards and children, ends as AWS sends them (or, with
// NeverEnd, as kinesis-mock does not), and the Stub's scripted faults.
//
// Use the stub for the reader's and the consumer lifecycle's error paths,
// exactly and fast; the fake server for the scheduler over histories; the
// shim on kinesis-mock to show the same code works against an emulator
// that really stores and streams records.
package fanout
