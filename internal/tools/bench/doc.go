// Command bench measures kinesis-shards and writes docs/BENCHMARKS.md:
// `make bench` runs it from the repository root.
//
// It runs the Go benchmarks of the tail hot path, of jq filters and of
// `tree` (go test -bench -json), the real binary against a loopback stub
// (internal/kinesistest/wirestub, in a child process on the other core) for
// throughput, memory and goroutines, and against the emulators
// (internal/kinesistest/emulator: kinesis-mock for latency, kinesalite for bulk
// writes and reads) next to the AWS CLI. Every figure is the median of
// several runs with their minimum and maximum; the machine is shared, so
// CPU-time figures are given wherever wall time would measure the
// neighbours too.
//
//	go run ./internal/tools/bench            # full run, ~10-15 min
//	go run ./internal/tools/bench -quick     # one short run of each, ~3 min
//	go run ./internal/tools/bench -only tail,rss -out /tmp/b.md
//
// "bench stub ..." is the stub server's child process (see stubproc.go;
// "bench stub fanout ..." serves enhanced fan-out, efobench.go).
package main
