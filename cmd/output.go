package cmd

import (
	"fmt"
	"time"
)

// formatDuration prints a duration the way people read it (1.2s, 3m0s).
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}
