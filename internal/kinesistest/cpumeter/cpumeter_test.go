package cpumeter

import (
	"runtime"
	"testing"
)

// A busy loop shows as CPU time (where it can be read).
func TestProcessCPUAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no process CPU time here")
	}
	before := processCPU()
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	_ = x
	if processCPU() <= before {
		t.Fatalf("CPU time did not advance: %v", before)
	}
}
