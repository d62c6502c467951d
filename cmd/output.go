package cmd

import (
	"fmt"
	"strings"
	"time"
)

// outputFormat validates -o against the formats a command supports; the
// first one is the default.
func (f *Factory) outputFormat(allowed ...string) (string, error) {
	o := f.Global.Output
	if o == "" {
		return allowed[0], nil
	}
	for _, a := range allowed {
		if o == a {
			return o, nil
		}
	}
	return "", usageErrorf("unknown output format %q: use one of %s", o, strings.Join(allowed, ", "))
}

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
