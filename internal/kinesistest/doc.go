// Package kinesistest is the parent of the test harness; nothing in the
// binary imports it or its sub-packages (a test in cmd checks). Its layers
// test different things, from the fastest to the most real:
//
//   - fake: an in-process Kinesis behind the SDK's method signatures, for
//     the logic above the SDK (scheduling, ordering, reshard plans run by
//     the executor). Scripted histories, deterministic, no HTTP.
//   - wirestub: a loopback HTTP server speaking the awsJson1.1 protocol,
//     for what happens on the wire: the SDK path, the GetRecords decoder,
//     throughput benchmarks, and answers no emulator gives.
//   - hotstub: a loopback stub of shards written hard that refuses calls
//     as AWS does (5 a second, 5 s after a 10 MiB response), for readers
//     that must survive hot shards.
//   - emulator: starts kinesis-mock, kinesalite or dynalite (and moto when
//     installed) for integration tests of the commands and the binary.
//   - faults: a seeded fault injector (throttling, expired iterators, 5xx,
//     dropped or stalled connections, partial PutRecords), as an
//     http.RoundTripper or a reverse proxy in front of an emulator.
//   - fanout: enhanced fan-out, which no emulator serves as AWS does: a
//     shim in front of kinesis-mock that makes its SubscribeToShard usable
//     by the SDK and ends closed shards' subscriptions, and a stub of the
//     consumer and SubscribeToShard API with AWS's limits and scripted
//     faults (in-use, limits, five-minute ends, dropped and failing
//     streams) for the error paths.
//
// Beside them: kpl builds KPL aggregates as the producer library writes
// them, golden compares output with golden files (one -update flag for
// every package), and cpumeter reads a process's CPU time for benchmarks.
package kinesistest
