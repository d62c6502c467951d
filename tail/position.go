package tail

import (
	"fmt"
	"regexp"
	"time"
)

// Position is how far a shard has been delivered: the last record written
// out, or the end of the shard.
type Position struct {
	// SequenceNumber of the last delivered record; "" when none.
	SequenceNumber string
	// SubSequence is the index of the last delivered user record inside a
	// KPL aggregate; meaningful only when Aggregated.
	SubSequence int64
	// Aggregated says the last delivered record came out of a KPL aggregate
	// (resume re-reads that aggregate and skips what was delivered).
	Aggregated bool
	// InBatch says the last delivered item was a log event of a
	// CloudWatch Logs batch (--cwlogs) that was not the batch's last:
	// LogEventIndex is that event's index in the batch, which the record
	// (the user record, when Aggregated) holds. Resume re-reads the record
	// and delivers the events after it. A batch delivered to its end is
	// recorded as a plain record is.
	InBatch       bool
	LogEventIndex int64
	// ShardEnd: every record of the (closed) shard was delivered.
	ShardEnd bool
	// From: nothing delivered yet, and reading starts at records that
	// arrived from this time on (AT_TIMESTAMP). A lease table holds it for a
	// shard first read from its tip, so that whoever reads the shard next
	// starts there, not at their own tip.
	From time.Time
}

// IsZero reports whether nothing of the shard was delivered yet and no
// start was recorded.
func (p Position) IsZero() bool { return p == Position{} }

func (p Position) String() string {
	switch {
	case p.ShardEnd:
		return "SHARD_END"
	case p.SequenceNumber == "" && !p.From.IsZero():
		return "AT_TIMESTAMP " + p.From.UTC().Format(time.RFC3339Nano)
	case p.SequenceNumber == "":
		return "-"
	case p.Aggregated && p.InBatch:
		return fmt.Sprintf("%s/%d#%d", p.SequenceNumber, p.SubSequence, p.LogEventIndex)
	case p.Aggregated:
		return fmt.Sprintf("%s/%d", p.SequenceNumber, p.SubSequence)
	case p.InBatch:
		return fmt.Sprintf("%s#%d", p.SequenceNumber, p.LogEventIndex)
	}
	return p.SequenceNumber
}

// seqRE is the service's sequence number syntax: up to 129 digits, no
// leading zeros.
var seqRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,128})$`)

// validSequence reports whether s is a sequence number.
func validSequence(s string) bool { return seqRE.MatchString(s) }

// compareSequence compares two canonical sequence numbers of one shard
// numerically. They are decimals of up to 129 digits, too long for machine
// integers; for canonical decimals (no leading zeros) the longer is larger
// and equal lengths compare digit by digit.
func compareSequence(a, b string) int {
	if len(a) != len(b) {
		// Canonical decimals: the longer one is larger.
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
