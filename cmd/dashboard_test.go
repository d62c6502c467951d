package cmd

import (
	"context"
	"strings"
	"testing"
	"time"
)

// runDashboardArgs runs the command line in-process with test streams
// (none a terminal unless tty) and no client: every case here must stop
// before any call.
func runDashboardArgs(t *testing.T, tty bool, args ...string) cliResult {
	t.Helper()
	ios, _, out, errOut := TestIO()
	ios.StdinTTY, ios.StdoutTTY, ios.StderrTTY = tty, tty, tty
	f := NewFactory(ios)
	f.KinesisClient = nil // a call would panic: validation comes first
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := run(ctx, f, args)
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestDashboardCommandNeedsTerminal(t *testing.T) {
	for _, args := range [][]string{{"dashboard"}, {"dashboard", "orders"}, {"dashboard", "orders", "--read-only"}} {
		r := runDashboardArgs(t, false, args...)
		if r.code != exitUsage {
			t.Fatalf("%v: exit %d, want %d (stderr %q)", args, r.code, exitUsage, r.stderr)
		}
		want := "error: dashboard needs a terminal (stdin and stdout); in scripts use `streams`, `tree STREAM` or `tail STREAM`\n"
		if r.stderr != want || r.stdout != "" {
			t.Fatalf("%v: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
}

func TestDashboardCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dashboard", "a", "b"}, "dashboard takes at most one STREAM (got 2 arguments)"},
		{[]string{"dashboard", "orders", "--refresh", "500ms"}, "--refresh must be at least 1s"},
		{[]string{"dashboard", "orders", "--poll-interval", "100ms"}, "--poll-interval must be at least 200ms"},
		{[]string{"dashboard", "orders", "-o", "json"}, "dashboard has no -o/--output"},
		{[]string{"dashboard", "orders", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"dashboard", "not a stream!"}, "is not a stream name"},
	} {
		r := runDashboardArgs(t, true, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

func TestDashboardCommandHelp(t *testing.T) {
	r := runDashboardArgs(t, false, "dashboard", "--help")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"dashboard [STREAM]", "--read-only", "--checkpoint FILE", "--refresh", "--poll-interval", "q quit"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("help lacks %q:\n%s", want, r.stdout)
		}
	}
}
