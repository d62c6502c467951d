// Command demo runs kinesis-shards against a local kinesis-mock: `make demo`.
// It starts the emulator (from testdata/emulator, installed by make), points
// the tool at it through the environment (no --endpoint-url needed), runs a
// short tour of the commands, and stops the emulator.
package main
