// Package parity holds the parity suite: the same scenarios (create, put
// and routing, list, split, merge, UpdateShardCount, reading across a
// reshard to ChildShards, iterators of every type, consumers and
// SubscribeToShard, errors for bad input) run through the SDK against the
// tool's own fake Kinesis (internal/fake, on a port, as `kinesis-shards
// local` serves it), kinesis-mock and kinesalite. The fake must agree
// with at least one of the emulators on every observation, except where a
// documented quirk says an emulator differs from AWS (the fake follows
// AWS): quirks.go lists them, and docs/KINESIS-NOTES.md says the same.
//
// It needs node and the emulators' npm packages (make test installs
// them); without them it skips, saying why.
//
// Imports: nothing outside its tests (which use internal/fake,
// internal/kinesistest/emulator, the SDK and the standard library).
package parity
