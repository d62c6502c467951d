package cmd

import (
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// FuzzParseTimestamp: never panics, never accepts a time more than a minute
// in the future.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2026-11-30T10:00:00Z", "15m", "2h", "1796040000", "", "-5m", "0s", "9999999999999999999999", "1h30m", "2026-11-30"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := parseTimestamp(s, now)
		if err == nil && ts.After(now.Add(time.Minute)) {
			t.Fatalf("parseTimestamp(%q) = %v, in the future", s, ts)
		}
	})
}

// FuzzStreamRef: never panics; an accepted ARN yields a name, a region and a
// 12-digit account; an accepted name is 1..128 characters.
func FuzzStreamRef(f *testing.F) {
	for _, s := range []string{"orders", "arn:aws:kinesis:us-east-1:123456789012:stream/orders", "arn:aws:kinesis:us-east-1:123:stream/x", "", "a/b", "arn:aws-cn:kinesis:cn-north-1:123456789012:stream/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := kstream.ParseRef(s)
		if err != nil {
			return
		}
		if r.Name == "" || len(r.Name) > 128 {
			t.Fatalf("ParseRef(%q) = %+v", s, r)
		}
		if r.ARN != "" && (len(r.Account) != 12 || r.Region == "") {
			t.Fatalf("ParseRef(%q) = %+v", s, r)
		}
	})
}

// FuzzJSONField: --key-field never panics and returns a non-empty key or an
// error.
func FuzzJSONField(f *testing.F) {
	f.Add([]byte(`{"k":"v"}`), "k")
	f.Add([]byte(`{"a":{"b":1}}`), "a.b")
	f.Add([]byte(`[1,2]`), "0")
	f.Fuzz(func(t *testing.T, line []byte, path string) {
		_, _ = jsonField(line, path)
	})
}
