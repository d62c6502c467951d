package emulator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Environment variables read by Main and Require.
const (
	EnvBackend  = "KINESIS_SHARDS_TEST_BACKEND"  // fake (default) | kinesis-mock | kinesalite | moto
	EnvEndpoint = "KINESIS_SHARDS_TEST_ENDPOINT" // use this running emulator, start nothing
)

// The package's emulator, set by Main before m.Run (so tests read it without
// locking) and stopped after.
var (
	current     *Emulator
	unavailable string // why current is nil, for Require
)

// Main runs a package's tests with an emulator: call it from TestMain as
//
//	func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }
//
// KINESIS_SHARDS_TEST_BACKEND, when set, overrides o.Backend;
// KINESIS_SHARDS_TEST_ENDPOINT attaches to a running emulator instead of
// starting one. When the backend cannot run here (no node, no node_modules,
// no moto_server), Main fails at once if CI is set; otherwise it runs the
// tests without an emulator and Require skips those that need one, giving
// the reason in one line. Any other start failure fails the package. The
// emulator is stopped after the tests; if they failed, its log is kept and
// its path printed. An emulator that died during the tests fails the package.
func Main(m *testing.M, o Options) int {
	// A fuzzing worker (go test -fuzz starts several) runs fuzz targets
	// only, which need no emulator: don't start one per worker.
	if FuzzWorker() {
		unavailable = "fuzzing worker"
		return m.Run()
	}
	if b := os.Getenv(EnvBackend); b != "" {
		o.Backend = Backend(b)
	}
	if o.Backend == "" {
		o.Backend = Fake
	}
	if !slices.Contains(Backends, o.Backend) {
		fmt.Fprintf(os.Stderr, "emulator: unknown backend %q in %s (want %s, %s, %s or %s)\n", o.Backend, EnvBackend, Fake, KinesisMock, Kinesalite, Moto)
		return 1
	}
	ctx := context.Background()
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		e, err := Attach(ctx, ep, o.Backend)
		if err != nil {
			fmt.Fprintf(os.Stderr, "emulator: %s=%s: %v\n", EnvEndpoint, ep, err)
			return 1
		}
		current = e
		return m.Run()
	}
	if err := Available(o.Backend); err != nil {
		if InCI() {
			fmt.Fprintf(os.Stderr, "FAIL: emulator: %v (CI is set, so emulator tests may not be skipped)\n", err)
			return 1
		}
		unavailable = err.Error()
		return m.Run()
	}
	e, err := Start(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	if e.PID != 0 {
		fmt.Printf("emulator: %s (pid %d) ready at %s in %v\n", e.Backend, e.PID, e.Endpoint, e.StartupTime.Round(1e6))
	}
	current = e
	code := m.Run()
	if code != 0 && e.LogPath != "" {
		e.KeepLog = true
		fmt.Fprintf(os.Stderr, "emulator: %s log kept at %s\n", e.Backend, e.LogPath)
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		code = 1
	}
	return code
}

// Require returns the package's emulator, or skips the test with the reason
// there is none (a failure instead when CI is set: emulator tests never
// silently skip there).
func Require(t testing.TB) *Emulator {
	t.Helper()
	if current != nil {
		return current
	}
	why := unavailable
	if why == "" {
		why = "no emulator: the package's TestMain must call emulator.Main"
	}
	if InCI() {
		t.Fatalf("emulator: %s (CI is set)", why)
	}
	t.Skipf("emulator: %s", why)
	return nil
}

// InCI reports whether the CI environment variable is set to something other
// than "", "0" or "false".
func InCI() bool {
	v := strings.TrimSpace(os.Getenv("CI"))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// FuzzWorker reports whether this test process is a worker of go test
// -fuzz, which runs fuzz targets only (call it from TestMain).
func FuzzWorker() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}
