//go:build linux

package emulator

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// bindOnly holds a loopback port with a socket that is bound but does not
// listen and has no SO_REUSEADDR: connecting is refused, binding fails.
func bindOnly(t *testing.T) (port int, release func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port, func() { syscall.Close(fd) }
}

// children lists the pids whose parent is this process, zombies included.
func children(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var pids []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == me {
			pid, _ := strconv.Atoi(s[:strings.IndexByte(s, ' ')])
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestStartRetriesTakenPort: the first free port handed out is taken
// before the emulator binds it (as when parallel test binaries race for
// ports); Start picks another and succeeds.
func TestStartRetriesTakenPort(t *testing.T) {
	needBackend(t, Kinesalite)
	taken, release := bindOnly(t)
	defer release()
	orig := freePort
	t.Cleanup(func() { freePort = orig })
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return orig()
	}
	e := startT(t, Options{Backend: Kinesalite})
	if calls != 2 || e.plainPort == taken {
		t.Fatalf("%d ports picked, emulator on %d (taken: %d): want a second pick", calls, e.plainPort, taken)
	}
	if !strings.Contains(readFile(t, e.LogPath), "EADDRINUSE") {
		t.Error("the log does not show the first, failed start")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
