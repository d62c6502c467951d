package main

import (
	"context"
	"fmt"
)

// leaseSection: one sync of a lease worker holding 2,000 leases, against an
// in-memory table answering each call after 5 ms (internal/leases,
// BenchmarkSyncHeldLeases). A sync must stay well under a third of the
// lease duration, or workers would take leases back and forth.
func leaseSection(ctx context.Context, c *config, rep *report) error {
	c.log("go test -bench ./internal/leases/ (lease sync)")
	res, err := goTest(ctx, c, "./internal/leases/", "^BenchmarkSyncHeldLeases$")
	if err != nil {
		return err
	}
	s := scale(res.get("BenchmarkSyncHeldLeases", "ns/op"), 1e-6)
	if len(s) == 0 {
		return fmt.Errorf("no BenchmarkSyncHeldLeases result")
	}
	rep.add(62, "Lease sync of 2,000 held leases (in-memory table, 5 ms a call)",
		"internal/leases/worker_test.go `BenchmarkSyncHeldLeases`: a worker holding 2,000 leases renews them all, scans the table and "+
			"balances, against an in-memory table that answers every call after 5 ms. Renewals run 64 at a time, so a sync costs "+
			"about 2,000 / 64 × 5 ms plus the scan, not 2,000 × 5 ms (10 s, the whole default lease duration).\n\n"+
			"| Benchmark | ms / sync |\n|---|---|\n"+
			fmt.Sprintf("| one sync, 2,000 leases held | %s |\n", s.cell()))
	ms := s.median()
	rep.target(target{What: "lease sync of 2,000 held leases at 5 ms a call (in-memory table)", Goal: "< 3.33 s (a third of the 10 s lease duration)",
		Measured: fmt.Sprintf("%s ms", num(ms)), Met: ms < 10000.0/3})
	return nil
}
