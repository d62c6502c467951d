package cmd

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "2026-11-30T10:00:00Z", want: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
		{in: "2026-11-30T11:00:00+01:00", want: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
		{in: "1796040000", want: time.Unix(1796040000, 0).UTC()},
		{in: "15m", want: now.Add(-15 * time.Minute)},
		{in: "2h", want: now.Add(-2 * time.Hour)},
		{in: "1h30m", want: now.Add(-90 * time.Minute)},
		{in: "", err: true},
		{in: "yesterday", err: true},
		{in: "-5m", err: true},
		{in: "0s", err: true},
		{in: "2027-01-01T00:00:00Z", err: true},
		{in: "99999999999", err: true},
		{in: "2026-11-30", err: true},
	} {
		got, err := parseTimestamp(tt.in, now)
		if (err != nil) != tt.err || (!tt.err && !got.Equal(tt.want)) {
			t.Errorf("parseTimestamp(%q) = %v, %v", tt.in, got, err)
		}
	}
}
