package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// rateNote is what the summary line says of the rates, when put was capped.
func rateNote(s putStats) string {
	if s.MaxRecordsPerSecond == 0 && s.MaxBytesPerSecond == 0 {
		return ""
	}
	var caps []string
	if s.MaxRecordsPerSecond > 0 {
		caps = append(caps, strconv.FormatFloat(s.MaxRecordsPerSecond, 'f', -1, 64)+" records/s")
	}
	if s.MaxBytesPerSecond > 0 {
		caps = append(caps, text.Bytes(float64(s.MaxBytesPerSecond))+"/s")
	}
	return fmt.Sprintf(", at %.1f records/s and %s/s (cap %s)", s.RecordsPerSecond, text.Bytes(float64(int64(s.BytesPerSecond))), strings.Join(caps, ", "))
}
