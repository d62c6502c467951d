package render

import (
	"strconv"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// The lines of `tail --cwlogs`: one per log event of a CloudWatch Logs
// subscription batch. r is the Kinesis record (a KPL user record when
// r.Aggregated) whose data held the batch, ev the event.

// AppendLogEvent appends the line of a log event in the given format;
// text times are shown in loc.
func AppendLogEvent(b []byte, format RecordFormat, theme Theme, loc *time.Location, r *tail.Record, ev *tail.LogEvent) []byte {
	switch format {
	case RecordRaw:
		return AppendLogEventRaw(b, ev)
	case RecordText:
		return AppendLogEventText(b, theme, loc, r, ev)
	}
	return AppendLogEventJSON(b, r, ev)
}

// AppendLogEventJSON appends the JSON line of a log event (README: "tail
// --cwlogs"): {"shardId","sequenceNumber","subSequenceNumber"?,
// "logEventIndex","logGroup","logStream","owner","id","timestamp",
// "message"}. subSequenceNumber is there when the batch was a KPL user
// record; timestamp is the event's time, RFC 3339 in UTC with
// milliseconds.
func AppendLogEventJSON(b []byte, r *tail.Record, ev *tail.LogEvent) []byte {
	b = appendJSONHead(b, r)
	b = append(b, `,"logEventIndex":`...)
	b = strconv.AppendInt(b, ev.Index, 10)
	b = append(b, `,"logGroup":`...)
	b = appendJSONString(b, ev.LogGroup)
	b = append(b, `,"logStream":`...)
	b = appendJSONString(b, ev.LogStream)
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, ev.Owner)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, `,"timestamp":"`...)
	b = ev.Time().UTC().AppendFormat(b, arrivalLayout)
	b = append(b, `","message":`...)
	b = appendJSONString(b, ev.Message)
	return append(b, "}\n"...)
}

// AppendLogEventRaw appends the message and a newline, unless the message
// ends with one already (Lambda's own lines do): one line per event for
// one-line messages, and the message's bytes as they are.
func AppendLogEventRaw(b []byte, ev *tail.LogEvent) []byte {
	b = append(b, ev.Message...)
	if !strings.HasSuffix(ev.Message, "\n") {
		b = append(b, '\n')
	}
	return b
}

// AppendLogEventText is the terminal form: the event's time, the short
// shard id with the sub-sequence (KPL) and the event's index, the log group
// and stream, and the message on one line (its final line break dropped,
// the others escaped).
func AppendLogEventText(b []byte, theme Theme, loc *time.Location, r *tail.Record, ev *tail.LogEvent) []byte {
	b = append(b, theme.Dim.Render(ev.Time().In(loc).Format("15:04:05.000"))...)
	b = append(b, ' ')
	id := lineage.ShortID(r.ShardID)
	if r.Aggregated {
		id += "." + strconv.FormatInt(r.SubSequence, 10)
	}
	id += "#" + strconv.FormatInt(ev.Index, 10)
	b = append(b, theme.Accent.Render("["+id+"]")...)
	b = append(b, ' ')
	b = append(b, theme.Key.Render(string(appendPrintable(nil, []byte(ev.LogGroup))))...)
	b = append(b, ' ')
	b = append(b, theme.Dim.Render(string(appendPrintable(nil, []byte(ev.LogStream))))...)
	b = append(b, ' ')
	msg := strings.TrimSuffix(strings.TrimSuffix(ev.Message, "\n"), "\r")
	b = appendPrintable(b, []byte(msg))
	return append(b, '\n')
}
