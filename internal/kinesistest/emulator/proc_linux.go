//go:build linux

package emulator

import "syscall"

// sysProcAttr makes the kernel kill the emulator when the test binary dies
// (a crash, a -timeout panic, SIGKILL), so none is left behind. Pdeathsig
// follows the OS thread that forked; Go never ends an unlocked thread, so the
// signal comes only when the whole test process goes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
