package cpumeter

import (
	"testing"
	"time"
)

// Meter measures from Start to Report.
type Meter struct{ start time.Duration }

// Start starts measuring; call it just before the benchmark loop.
func Start() Meter { return Meter{processCPU()} }

// Report adds cpu-ns/op, MiB/cpu-s and records/cpu-s, for ops of
// recordsPerOp records and bytesPerOp bytes each.
func (m Meter) Report(b *testing.B, recordsPerOp, bytesPerOp int) {
	cpu := processCPU() - m.start
	if cpu <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/(1<<20)/cpu.Seconds(), "MiB/cpu-s")
	b.ReportMetric(float64(recordsPerOp)*float64(b.N)/cpu.Seconds(), "records/cpu-s")
}
