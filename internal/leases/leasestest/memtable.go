package leasestest

import "github.com/kinesis-shards/kinesis-shards/internal/fake/dynamo"

// MemTable is an in-memory DynamoDB holding lease tables, for tests and
// benchmarks that need no emulator: internal/fake/dynamo's Service, called
// in process through the SDK's method signatures. Latency adds to every
// call, Hook fails or hangs calls, Put and Item set up and read rows,
// MaxInFlight counts concurrent calls.
type MemTable = dynamo.Service

// NewMemTable returns an empty store.
func NewMemTable() *MemTable { return dynamo.New() }
