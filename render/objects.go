package render

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// The objects that jq expressions (tail --filter, --jq) see: the JSON lines
// of --format json as values, built directly instead of encoded and parsed
// again. Numbers are ints (gojq's integer type); every other rule is
// AppendRecordJSON's and AppendLogEventJSON's, and a test holds them equal.

// RecordObject is the JSON line of a record as a value.
func RecordObject(r *tail.Record) map[string]any {
	o := make(map[string]any, 11)
	o["shardId"] = r.ShardID
	o["sequenceNumber"] = r.SequenceNumber
	if r.Aggregated {
		o["subSequenceNumber"] = int(r.SubSequence)
	}
	o["partitionKey"] = r.PartitionKey
	if r.ExplicitHashKey != "" {
		o["explicitHashKey"] = r.ExplicitHashKey
	}
	o["arrivalTime"] = r.ArrivalTime.UTC().Format(arrivalLayout)
	if utf8.Valid(r.Data) {
		o["data"] = string(r.Data)
	} else {
		o["data"] = base64.StdEncoding.EncodeToString(r.Data)
		o["dataEncoding"] = "base64"
	}
	if r.Decompressed {
		o["decompressed"] = true
	}
	if r.OutsideShard {
		o["outsideShard"] = true
	}
	return o
}

// LogEventObject is the JSON line of a log event (tail --cwlogs) as a value.
func LogEventObject(r *tail.Record, ev *tail.LogEvent) map[string]any {
	o := make(map[string]any, 11)
	o["shardId"] = r.ShardID
	o["sequenceNumber"] = r.SequenceNumber
	if r.Aggregated {
		o["subSequenceNumber"] = int(r.SubSequence)
	}
	o["logEventIndex"] = int(ev.Index)
	o["logGroup"] = ev.LogGroup
	o["logStream"] = ev.LogStream
	o["owner"] = ev.Owner
	o["id"] = ev.ID
	o["timestamp"] = ev.Time().UTC().Format(arrivalLayout)
	o["message"] = ev.Message
	return o
}
