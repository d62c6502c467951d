// Command soak is `make soak`: minutes of continuous keyed writes, periodic
// splits and merges, and injected faults against kinesis-mock, while the real
// `kinesis-shards tail` binary runs and is killed (-9) or interrupted and
// restarted on one checkpoint file; then a lease-table phase (leases.go).
// Every run must end the way it was
// stopped (kill -9: by SIGKILL; Ctrl-C: exit 130; the final drain: exit 0).
// At the end it drains the rest and checks every record was delivered, each
// key in write order in every run, and replays stayed within the checkpoint
// window. It prints the figures and writes them into docs/RELIABILITY.md
// between the soak markers.
package main
