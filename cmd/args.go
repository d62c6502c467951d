package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseTimestamp reads a TIMESTAMP argument: RFC 3339
// (2026-11-30T10:00:00Z), Unix seconds, or a duration meaning that long ago
// (15m, 2h, 1h30m). A time in the future is refused.
func parseTimestamp(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty timestamp: use RFC 3339 (2026-11-30T10:00:00Z), Unix seconds, or a duration ago (15m)")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.After(now.Add(time.Minute)) {
			return time.Time{}, fmt.Errorf("timestamp %s is in the future", s)
		}
		return t, nil
	}
	if isDigits(s) {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil || secs > now.Unix()+60 {
			return time.Time{}, fmt.Errorf("timestamp %s is not a Unix time in the past", s)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a timestamp: use RFC 3339 (2026-11-30T10:00:00Z), Unix seconds, or a duration ago (15m, 2h)", s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("duration %s must be positive (it means that long ago)", s)
	}
	return now.Add(-d).UTC(), nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
