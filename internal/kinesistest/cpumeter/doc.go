// Package cpumeter reports the CPU time of a benchmark next to its ns/op:
// user + system time of every thread of the process, which on a shared
// machine measures the work where wall time measures the neighbours too.
// Where the process's CPU time cannot be read, nothing is reported.
package cpumeter
