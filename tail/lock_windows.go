//go:build windows

package tail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock (LockFileEx) on path, creating it, and
// writes our pid into it so a refused second process can name us.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the checkpoint lock %s: %w", path, unwrapPathError(err))
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		defer f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			b, _ := io.ReadAll(io.LimitReader(f, 32))
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &LockedError{Path: strings.TrimSuffix(path, ".lock"), PID: pid}
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func unlockFile(f *os.File) error {
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
	return f.Close()
}

func syncDir(string) {}
