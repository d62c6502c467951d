// Command demo runs kinesis-shards against a local Kinesis: `make demo`.
// By default that is `kinesis-shards local` (the tool's own in-memory
// Kinesis: only Go is needed); with -emulator kinesis-mock (`make demo
// EMULATOR=kinesis-mock`) it is kinesis-mock from testdata/emulator,
// installed by make. It points the
// tool at the endpoint through the environment (no --endpoint-url
// needed), runs a short tour of the commands, and stops the endpoint.
package main
