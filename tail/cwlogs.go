package tail

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// CloudWatch Logs subscription batches. A subscription filter that targets
// a Kinesis stream writes records whose data is gzip of one JSON document:
//
//	{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/aws/lambda/f",
//	 "logStream":"2026/11/30/[$LATEST]abc","subscriptionFilters":["to-kinesis"],
//	 "logEvents":[{"id":"3195...","timestamp":1796032800000,"message":"..."}]}
//
// messageType is DATA_MESSAGE for log events, or CONTROL_MESSAGE for the
// service's own health checks of the destination (one log event saying
// so), which are not the user's data. Fields the service adds later (such
// as policyLevel) are ignored.
const (
	CWLogsDataMessage    = "DATA_MESSAGE"
	CWLogsControlMessage = "CONTROL_MESSAGE"
)

// CWLogsKind is what DecodeCWLogs found in a record.
type CWLogsKind int

const (
	// NotCWLogs: not a subscription batch; the record is passed through
	// (unpacked when it was gzip, as --decompress does).
	NotCWLogs CWLogsKind = iota
	// CWLogsData: a DATA_MESSAGE; its log events are delivered.
	CWLogsData
	// CWLogsControl: a CONTROL_MESSAGE; nothing is delivered.
	CWLogsControl
)

// LogEvent is one log event of a DATA_MESSAGE batch, with the batch's
// fields it belongs to.
type LogEvent struct {
	// Index is the event's place in its batch, from 0 (logEventIndex).
	Index int64
	// Last is set on the batch's last event: once it is delivered the whole
	// record is, and a checkpoint after it is the record's own.
	Last      bool
	Owner     string
	LogGroup  string
	LogStream string
	// SubscriptionFilters names the filters that sent the batch.
	SubscriptionFilters []string
	ID                  string
	// Timestamp is the event's time in milliseconds since the epoch, as the
	// service writes it.
	Timestamp int64
	Message   string
}

// Time is the event's timestamp.
func (e *LogEvent) Time() time.Time { return time.UnixMilli(e.Timestamp) }

// CWLogs is a record's data read as a subscription batch.
type CWLogs struct {
	Kind CWLogsKind
	// Events holds a DATA_MESSAGE's log events in batch order (CWLogsData).
	Events []LogEvent
	// Data is the record's data for NotCWLogs: unpacked when it was gzip
	// (then Decompressed), else as it came.
	Data         []byte
	Decompressed bool
	// Reason says why a record is NotCWLogs (for --debug and warnings).
	Reason string
}

// cwlogsDoc is the batch as the service writes it. Pointers tell a field
// that is absent from one that is empty.
type cwlogsDoc struct {
	MessageType         *string          `json:"messageType"`
	Owner               string           `json:"owner"`
	LogGroup            string           `json:"logGroup"`
	LogStream           string           `json:"logStream"`
	SubscriptionFilters []string         `json:"subscriptionFilters"`
	LogEvents           *[]cwlogsDocItem `json:"logEvents"`
}

type cwlogsDocItem struct {
	ID        *string      `json:"id"`
	Timestamp *json.Number `json:"timestamp"`
	Message   *string      `json:"message"`
}

// DecodeCWLogs reads a record's data as a CloudWatch Logs subscription
// batch. It is a batch when the data is gzip (within the --decompress
// bound) of a JSON object whose messageType is DATA_MESSAGE or
// CONTROL_MESSAGE and, for DATA_MESSAGE, whose logEvents is an array of
// objects each with a string id, an integer timestamp and a string
// message. Anything else is NotCWLogs, with the data unpacked when it was
// gzip at all.
func DecodeCWLogs(data []byte) CWLogs {
	plain, ok := gunzip(data)
	if !ok {
		return CWLogs{Data: data, Reason: "not gzip data"}
	}
	not := func(format string, args ...any) CWLogs {
		return CWLogs{Data: plain, Decompressed: true, Reason: fmt.Sprintf(format, args...)}
	}
	var doc cwlogsDoc
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return not("gzip data that is not a CloudWatch Logs batch (%v)", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return not("gzip data with more than one JSON value")
	}
	switch {
	case doc.MessageType == nil:
		return not("gzip JSON without a messageType")
	case *doc.MessageType == CWLogsControlMessage:
		return CWLogs{Kind: CWLogsControl}
	case *doc.MessageType != CWLogsDataMessage:
		return not("messageType %q is not %s or %s", *doc.MessageType, CWLogsDataMessage, CWLogsControlMessage)
	case doc.LogEvents == nil:
		return not("a %s without logEvents", CWLogsDataMessage)
	}
	events := make([]LogEvent, len(*doc.LogEvents))
	for i, it := range *doc.LogEvents {
		if it.ID == nil || it.Timestamp == nil || it.Message == nil {
			return not("log event %d lacks its id, timestamp or message", i)
		}
		ts, err := it.Timestamp.Int64()
		if err != nil {
			return not("log event %d: timestamp %s is not whole milliseconds", i, it.Timestamp.String())
		}
		events[i] = LogEvent{Index: int64(i), Last: i == len(events)-1,
			Owner: doc.Owner, LogGroup: doc.LogGroup, LogStream: doc.LogStream, SubscriptionFilters: doc.SubscriptionFilters,
			ID: *it.ID, Timestamp: ts, Message: *it.Message}
	}
	return CWLogs{Kind: CWLogsData, Events: events}
}

// gunzip unpacks gzip data up to maxDecompressed bytes; ok is false when
// the data is not gzip, is corrupt, or unpacks to more than the bound.
func gunzip(data []byte) ([]byte, bool) {
	if !bytes.HasPrefix(data, gzipMagic) {
		return nil, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxDecompressed+1))
	if err != nil || len(b) > maxDecompressed {
		return nil, false
	}
	return b, true
}
