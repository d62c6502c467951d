//go:build !linux

package emulator

import "syscall"

// sysProcAttr: only Linux can tie the child's life to ours; elsewhere Main's
// Stop (and the developer) must end it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
