//go:build !linux

package emulator

import "testing"

func bindOnly(t *testing.T) (int, func()) { t.Skip("Linux only"); return 0, nil }

func children(t *testing.T) []int { return nil }
