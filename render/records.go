package render

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kinesis-shards/kinesis-shards/internal/swar"
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
// hand straight into its output buffer: no reflection, no allocation and no
// system call per record (one write per flushEvery bytes, and one flush per
// batch). WriteReporting says, at each of those writes, how many records
// of the batch have left the process.
//
// flushEvery is a pipe's buffer: behind a slow reader (a pager, a
// rate-limited put) each write returns once the reader has taken about
// that much, so what is reported trails the output by one pipe's worth,
// and a write to a fast stdout is still one system call per 64 KiB.
type RecordWriter struct {
	w      *bufio.Writer
	format RecordFormat
	theme  Theme
	buf    []byte // for a record too big for the output buffer
	times  timeCache
	// pending counts the bytes handed to w since the last report of
	// WriteReporting.
	pending int
}

// NewRecordWriter writes to w in the given format.
func NewRecordWriter(w io.Writer, format RecordFormat, theme Theme) *RecordWriter {
	return &RecordWriter{w: bufio.NewWriterSize(w, 256<<10), format: format, theme: theme}
}

const flushEvery = 64 << 10

// Write writes a batch and flushes it: each record's line, or its log
// event's (--cwlogs), or its Out as it is (--jq).
func (rw *RecordWriter) Write(batch []tail.Record) error {
	return rw.WriteReporting(batch, nil)
}

// WriteReporting is Write that calls written(n) each time the batch's
// first n records have been written out (tail.WriteFunc); written may be
// nil.
func (rw *RecordWriter) WriteReporting(batch []tail.Record, written func(n int)) error {
	rw.pending = 0
	for i := range batch {
		// Counted from what was handed to the buffer, not what is in it:
		// a record bigger than the buffer goes out around it.
		if i > 0 && rw.pending >= flushEvery {
			if err := rw.w.Flush(); err != nil {
				return err
			}
			rw.pending = 0
			if written != nil {
				written(i)
			}
		}
		if err := rw.write(&batch[i]); err != nil {
			return err
		}
	}
	if err := rw.w.Flush(); err != nil {
		return err
	}
	if written != nil {
		written(len(batch))
	}
	return nil
}

// write puts one record's line into the output buffer.
func (rw *RecordWriter) write(r *tail.Record) error {
	if r.Out != nil {
		// --jq: the lines were made already.
		n, err := rw.w.Write(r.Out)
		rw.pending += n
		return err
	}
	if rw.format == RecordRaw && r.Log == nil {
		// The payload goes from the record to the output buffer: one copy.
		n, err := rw.w.Write(r.Data)
		rw.pending += n + 1
		if err != nil {
			return err
		}
		return rw.w.WriteByte('\n')
	}
	// Encode into the output buffer's free space when the record is
	// sure to fit (bufio.Writer.AvailableBuffer); else flush first, or
	// for a record bigger than the buffer, encode it aside.
	need := maxLineLen(r)
	if rw.w.Available() < need && rw.w.Buffered() > 0 {
		if err := rw.w.Flush(); err != nil {
			return err
		}
	}
	b := rw.w.AvailableBuffer()
	aside := cap(b) < need
	if aside {
		b = rw.buf[:0]
	}
	switch {
	case r.Log != nil:
		b = AppendLogEvent(b, rw.format, rw.theme, time.Local, r, r.Log)
	case rw.format == RecordText:
		b = rw.appendText(b, r)
	default:
		b = appendRecordJSON(b, r, &rw.times)
	}
	n, err := rw.w.Write(b)
	rw.pending += n
	if err != nil {
		return err
	}
	if aside {
		rw.buf = b // kept for the next big record
	}
	return nil
}

// maxLineLen bounds a record's line in any format: every payload byte can
// take six (\u00XX), a key's too, plus the fixed fields and colours.
func maxLineLen(r *tail.Record) int {
	n := len(r.Data) + len(r.PartitionKey) + len(r.ExplicitHashKey)
	if ev := r.Log; ev != nil {
		n = len(ev.Message) + len(ev.LogGroup) + len(ev.LogStream) + len(ev.Owner) + len(ev.ID)
	}
	return 6*n + len(r.ShardID) + len(r.SequenceNumber) + 512
}

// AppendRecordJSON appends the JSON line of a record (README: "tail -o
// json"): {"shardId","sequenceNumber","subSequenceNumber"?,"partitionKey",
// "arrivalTime","data","dataEncoding"?,...}. data is the payload as a string
// when it is valid UTF-8, else base64 with "dataEncoding":"base64".
func AppendRecordJSON(b []byte, r *tail.Record) []byte {
	return appendRecordJSON(b, r, nil)
}

func appendRecordJSON(b []byte, r *tail.Record, times *timeCache) []byte {
	b = appendJSONHead(b, r)
	b = append(b, `,"partitionKey":`...)
	b = appendJSONString(b, r.PartitionKey)
	if r.ExplicitHashKey != "" {
		// From the KPL aggregate, so written by whoever writes to the
		// stream: escaped like the key, never trusted to be digits.
		b = append(b, `,"explicitHashKey":`...)
		b = appendJSONString(b, r.ExplicitHashKey)
	}
	b = append(b, `,"arrivalTime":"`...)
	b = times.append(b, r.ArrivalTime)
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

// appendJSONHead opens a line with where the record is: {"shardId",
// "sequenceNumber","subSequenceNumber"? (a KPL user record). The lines of
// records and of log events (--cwlogs) start alike.
func appendJSONHead(b []byte, r *tail.Record) []byte {
	b = append(b, `{"shardId":`...)
	b = appendJSONString(b, r.ShardID)
	b = append(b, `,"sequenceNumber":"`...)
	b = append(b, r.SequenceNumber...)
	b = append(b, '"')
	if r.Aggregated {
		b = append(b, `,"subSequenceNumber":`...)
		b = strconv.AppendInt(b, r.SubSequence, 10)
	}
	return b
}

// arrivalLayout is the arrivalTime format: UTC, milliseconds.
const arrivalLayout = "2006-01-02T15:04:05.000Z07:00"

// timeCache formats arrival times. The records of a page mostly share their
// second, so the date and time of day are formatted once per second and
// only the milliseconds per record; the text is what arrivalLayout gives.
type timeCache struct {
	sec  int64
	text []byte // "2006-01-02T15:04:05." of sec
}

func (c *timeCache) append(b []byte, t time.Time) []byte {
	t = t.UTC()
	if c == nil {
		return t.AppendFormat(b, arrivalLayout)
	}
	sec := t.Unix()
	if c.text == nil || sec != c.sec {
		if y := t.Year(); y < 1 || y > 9999 {
			return t.AppendFormat(b, arrivalLayout) // signs and wide years: the general path
		}
		c.text = t.AppendFormat(c.text[:0], "2006-01-02T15:04:05.")
		c.sec = sec
	}
	b = append(b, c.text...)
	ms := t.Nanosecond() / 1e6
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. s must be valid UTF-8 (the
// caller checks); control characters, quotes and backslashes are escaped,
// and U+2028/U+2029 too, so a line is safe for JavaScript consumers.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time.
		for i+8 <= len(s) && !swar.Special(loadUint64(s[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
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

// loadUint64 reads eight bytes of s, little-endian (len(s) >= 8).
func loadUint64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
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
	b = append(b, t.Key.Render(string(appendPrintable(nil, []byte(r.PartitionKey))))...)
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
