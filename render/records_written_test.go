package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// WriteReporting says, as it goes, how many records have left the process:
// at each report, what the underlying writer holds is exactly the lines of
// those records, and a batch much bigger than a pipe's buffer is reported
// in pieces of about that size (so that tail's checkpoint follows the
// output within a page), in every format and for log events too.
func TestRecordWriterReportsWhatWasWritten(t *testing.T) {
	batch := make([]tail.Record, 2000)
	for i := range batch {
		batch[i] = tail.Record{ShardID: "shardId-000000000000", SequenceNumber: fmt.Sprint(1000 + i), PartitionKey: "k",
			ArrivalTime: time.Unix(1700000000, 0), Data: []byte(strings.Repeat("x", 1000))}
	}
	logs := make([]tail.Record, 3000)
	for i := range logs {
		logs[i] = tail.Record{ShardID: "shardId-000000000000", SequenceNumber: "7", ArrivalTime: time.Unix(1700000000, 0),
			Log: &tail.LogEvent{Index: int64(i), Last: i == len(logs)-1, ID: fmt.Sprint(i), Message: strings.Repeat("m", 300), LogGroup: "g", LogStream: "s"}}
	}
	// Records bigger than the output buffer go out around it: each is
	// reported once written.
	big := make([]tail.Record, 8)
	for i := range big {
		big[i] = tail.Record{ShardID: "shardId-000000000000", SequenceNumber: fmt.Sprint(i), ArrivalTime: time.Unix(1700000000, 0), Data: []byte(strings.Repeat("x", 900<<10))}
	}
	for _, tc := range []struct {
		name   string
		format RecordFormat
		batch  []tail.Record
	}{{"json", RecordJSON, batch}, {"raw", RecordRaw, batch}, {"text", RecordText, batch}, {"cwlogs", RecordJSON, logs},
		{"big raw", RecordRaw, big}, {"big json", RecordJSON, big}} {
		t.Run(tc.name, func(t *testing.T) {
			// Each record's line alone, to know where each one ends.
			var ends []int
			var one bytes.Buffer
			for i := range tc.batch {
				if err := NewRecordWriter(&one, tc.format, NewTheme(false)).Write(tc.batch[i : i+1]); err != nil {
					t.Fatal(err)
				}
				ends = append(ends, one.Len())
			}
			var out bytes.Buffer
			var reports []int
			err := NewRecordWriter(&out, tc.format, NewTheme(false)).WriteReporting(tc.batch, func(n int) {
				if got, want := out.Len(), ends[n-1]; got != want {
					t.Fatalf("written(%d) with %d bytes out; the first %d records are %d", n, got, n, want)
				}
				reports = append(reports, n)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), one.Bytes()) {
				t.Fatal("the batch written at once differs from its records written one by one")
			}
			if reports[len(reports)-1] != len(tc.batch) {
				t.Fatalf("last report %d of %d records", reports[len(reports)-1], len(tc.batch))
			}
			// About one report per 64 KiB of output (or per record, when
			// records are bigger).
			if min := min(len(tc.batch), out.Len()/(flushEvery+8<<10)-1); len(reports) < min {
				t.Fatalf("%d reports for %d bytes: want at least %d", len(reports), out.Len(), min)
			}
		})
	}
}
