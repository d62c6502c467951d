// Package awscall is the one way the tool calls AWS: which calls are asked
// again after a failure and how long to wait first (the backoff table,
// Rules), the retry helper of read-only control-plane calls (Do), the
// SDK's own retryers and per-call options (KinesisRetryer, DynamoRetryer,
// Once, NoQuotaRetries), and the pacer of every reader that polls a shard
// (Pacer: 5 calls a second, 2 MiB a second, quiet after a throttle).
//
// What an error means is internal/awserr's answer; every decision here
// asks for the kind, never for an error code or an exception's type. A
// new throttling code is one line there and every rule here follows.
//
// There is one retry per failure: the SDK's retryer rides out transient
// failures (5xx, dropped connections) of the calls it sends more than
// once; Do rides out a crowded control plane on top of that, for kinds
// the SDK lets through; the readers of shards turn the SDK's retries off
// (Once) and decide every attempt with their Pacer. No caller wraps a
// retry loop around another.
//
// Imports: internal/awserr, the AWS SDK's aws, retry, ratelimit and
// kinesis packages, and the standard library.
package awscall
