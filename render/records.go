package render

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// RecordFormat is how tail prints records.
type RecordFormat int

const (
	// RecordJSON: one JSON object per line (the default off a terminal).
	RecordJSON RecordFormat = iota
	// RecordRaw: the payload and a newline.
	RecordRaw
	// RecordText: a readable line per record for terminals.
	RecordText
)

// ParseRecordFormat reads --format.
func ParseRecordFormat(s string) (RecordFormat, error) {
	switch s {
	case "json":
		return RecordJSON, nil
	case "raw":
		return RecordRaw, nil
	case "text":
		return RecordText, nil
	}
	return 0, fmt.Errorf("unknown record format %q: use json, raw or text", s)
}

// RecordWriter writes batches of records and flushes after each batch, so a
// record counts as delivered only once it left the process. It encodes by
// hand into one reused buffer: no reflection and no allocation per record
// on the hot path.
type RecordWriter struct {
	w      *bufio.Writer
	format RecordFormat
	theme  Theme
	buf    []byte
}

// NewRecordWriter writes to w in the given format.
func NewRecordWriter(w io.Writer, format RecordFormat, theme Theme) *RecordWriter {
	return &RecordWriter{w: bufio.NewWriterSize(w, 256<<10), format: format, theme: theme, buf: make([]byte, 0, 64<<10)}
}

// Write writes a batch and flushes it.
func (rw *RecordWriter) Write(batch []tail.Record) error {
	for i := range batch {
		b := rw.buf[:0]
		switch rw.format {
		case RecordRaw:
			b = append(b, batch[i].Data...)
			b = append(b, '\n')
		case RecordText:
			b = rw.appendText(b, &batch[i])
		default:
			b = AppendRecordJSON(b, &batch[i])
		}
		if _, err := rw.w.Write(b); err != nil {
			return err
		}
		rw.buf = b
	}
	return rw.w.Flush()
}

// AppendRecordJSON appends the JSON line of a record (README: "tail -o
// json"): {"shardId","sequenceNumber","subSequenceNumber"?,"partitionKey",
// "arrivalTime","data","dataEncoding"?,...}. data is the payload as a string
// when it is valid UTF-8, else base64 with "dataEncoding":"base64".
func AppendRecordJSON(b []byte, r *tail.Record) []byte {
	b = append(b, `{"shardId":`...)
	b = appendJSONString(b, r.ShardID)
	b = append(b, `,"sequenceNumber":"`...)
	b = append(b, r.SequenceNumber...)
	b = append(b, '"')
	if r.Aggregated {
		b = append(b, `,"subSequenceNumber":`...)
		b = strconv.AppendInt(b, r.SubSequence, 10)
	}
	b = append(b, `,"partitionKey":`...)
	b = appendJSONString(b, r.PartitionKey)
	if r.ExplicitHashKey != "" {
		b = append(b, `,"explicitHashKey":"`...)
		b = append(b, r.ExplicitHashKey...)
		b = append(b, '"')
	}
	b = append(b, `,"arrivalTime":"`...)
	b = r.ArrivalTime.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","data":`...)
	if utf8.Valid(r.Data) {
		b = appendJSONString(b, unsafeString(r.Data))
	} else {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, r.Data)
		b = append(b, `","dataEncoding":"base64`...)
		b = append(b, '"')
	}
	if r.Decompressed {
		b = append(b, `,"decompressed":true`...)
	}
	if r.OutsideShard {
		b = append(b, `,"outsideShard":true`...)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. s must be valid UTF-8 (the
// caller checks); control characters, quotes and backslashes are escaped,
// and U+2028/U+2029 too, so a line is safe for JavaScript consumers.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendText is the terminal form: time, short shard id, key, payload.
func (rw *RecordWriter) appendText(b []byte, r *tail.Record) []byte {
	t := rw.theme
	b = append(b, t.Dim.Render(r.ArrivalTime.Local().Format("15:04:05.000"))...)
	b = append(b, ' ')
	id := lineage.ShortID(r.ShardID)
	if r.Aggregated {
		id += "." + strconv.FormatInt(r.SubSequence, 10)
	}
	b = append(b, t.Accent.Render(fmt.Sprintf("[%s]", id))...)
	b = append(b, ' ')
	b = append(b, t.Key.Render(r.PartitionKey)...)
	if r.OutsideShard {
		b = append(b, ' ')
		b = append(b, t.Warn.Render("(outside shard)")...)
	}
	b = append(b, ' ')
	if utf8.Valid(r.Data) {
		b = appendPrintable(b, r.Data)
	} else {
		b = append(b, t.Dim.Render("base64:")...)
		b = base64.StdEncoding.AppendEncode(b, r.Data)
	}
	return append(b, '\n')
}

// appendPrintable keeps a record on one line: control characters are
// escaped so a payload cannot move the cursor or clear the screen.
func appendPrintable(b, data []byte) []byte {
	for _, r := range string(data) {
		switch {
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b = append(b, fmt.Sprintf(`\x%02x`, r)...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// unsafeString views b as a string without copying the payload; b is not
// changed while the string is in use (it is appended and dropped at once).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
