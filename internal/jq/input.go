package jq

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// RecordInput is what an expression sees of a record: its --format json
// line as an object, plus "payload" when the data is JSON.
func RecordInput(r *tail.Record) map[string]any {
	o := render.RecordObject(r)
	if v, ok := parseJSON(r.Data); ok {
		o["payload"] = v
	}
	return o
}

// LogEventInput is what an expression sees of a log event (--cwlogs): its
// JSON line as an object, plus "payload" when the message is JSON.
func LogEventInput(r *tail.Record, ev *tail.LogEvent) map[string]any {
	o := render.LogEventObject(r, ev)
	if v, ok := parseJSON([]byte(ev.Message)); ok {
		o["payload"] = v
	}
	return o
}

// parseJSON reads data as exactly one JSON value with nothing but white
// space around it, in valid UTF-8. Numbers stay json.Number, which gojq
// takes as they are written: an integer beyond 2^53 keeps every digit.
func parseJSON(data []byte) (any, bool) {
	if !maybeJSON(data) || !utf8.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// maybeJSON is a quick no for data that cannot start a JSON value (most
// log lines), before any decoder is made.
func maybeJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', '-', 't', 'f', 'n':
			return true
		}
		return c >= '0' && c <= '9'
	}
	return false
}
