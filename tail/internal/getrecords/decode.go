package getrecords

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kinesis-shards/kinesis-shards/internal/swar"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// GetRecords decoding. The SDK decodes every response through a generic
// shape deserializer: each Data blob is unquoted into a string and base64
// decoded into its own slice, and each record costs about nine allocations
// (a pointer per field, a big.Float per timestamp). On full pages that was
// most of tail's CPU (docs/BENCHMARKS.md). Option swaps in a
// decoder for the one shape a successful GetRecords returns: it base64
// decodes every blob of the page into one buffer and keeps keys and
// sequence numbers in a few string blocks, so a page costs a handful of
// allocations. Whatever it does not recognise (an escaped string, an
// unknown or null member, ChildShards, a malformed body) it hands to the
// SDK's own decoder unchanged, so errors and rare shapes decode exactly as
// before.

// Option is a per-call option of GetRecords that swaps in the decoder.
func Option(o *kinesis.Options) {
	if o.Protocol == nil {
		return
	}
	if _, ok := o.Protocol.(getRecordsProtocol); !ok {
		o.Protocol = getRecordsProtocol{o.Protocol}
	}
}

type reserveKey struct{}

// WithReserve returns a context whose GetRecords calls (with Option) call
// reserve with a response's payload size, about three quarters of its
// Content-Length (base64), before the body is read: the caller accounts
// for the memory the page will take. reserve must not wait: it runs under
// the call's deadline.
func WithReserve(ctx context.Context, reserve func(payload int64)) context.Context {
	return context.WithValue(ctx, reserveKey{}, reserve)
}

// getRecordsProtocol decodes successful GetRecords responses itself and
// leaves everything else to the SDK's protocol.
type getRecordsProtocol struct {
	smithyhttp.ClientProtocol
}

var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

func (p getRecordsProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, out smithy.Deserializable) error {
	o, ok := out.(*kinesis.GetRecordsOutput)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	if reserve, ok := ctx.Value(reserveKey{}).(func(int64)); ok && resp.ContentLength > 0 {
		// The payload is about three quarters of the body (base64).
		reserve(resp.ContentLength / 4 * 3)
	}
	bp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(bp)
	body, err := readBody(resp.Body, resp.ContentLength, (*bp)[:0])
	*bp = body
	if err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	if Decode(body, o) {
		return nil
	}
	// Not a shape the fast path knows: the SDK decodes the same bytes.
	*o = kinesis.GetRecordsOutput{}
	orig := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{bytes.NewReader(body), orig}
	err = p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	resp.Body = orig
	return err
}

// readBody reads a response body into buf, sized by Content-Length when
// the server sent one.
func readBody(r io.Reader, length int64, buf []byte) ([]byte, error) {
	if length > 0 && length <= 64<<20 && int64(cap(buf)) < length+1 {
		buf = make([]byte, 0, length+1) // +1: the read that sees EOF
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// stringBlock is the size of the blocks that hold a page's partition keys
// and sequence numbers: small enough that a string kept after delivery
// keeps little else alive.
const stringBlock = 16 << 10

// recordsParser is a strict JSON reader for the GetRecords output shape.
type recordsParser struct {
	b []byte
	i int
	// data holds the page's decoded blobs; strs the current string block.
	data []byte
	strs []byte
}

// Decode decodes a successful GetRecords body into out. It returns false,
// leaving out in any state, for anything it does not handle (Option then
// hands the body to the SDK's decoder).
func Decode(body []byte, out *kinesis.GetRecordsOutput) bool {
	p := recordsParser{b: body}
	if !p.consume('{') {
		return false
	}
	seenRecords := false
	if p.consume('}') {
		return p.end()
	}
	for {
		key, ok := p.str()
		if !ok || !p.consume(':') {
			return false
		}
		switch string(key) {
		case "Records", "NextShardIterator", "MillisBehindLatest", "ChildShards":
		default:
			return false
		}
		if p.null() {
			// The SDK skips null members.
		} else {
			switch string(key) {
			case "Records":
				if seenRecords || !p.records(out) {
					return false
				}
				seenRecords = true
			case "NextShardIterator":
				s, ok := p.str()
				if !ok {
					return false
				}
				it := string(s)
				out.NextShardIterator = &it
			case "MillisBehindLatest":
				n, ok := p.int64()
				if !ok {
					return false
				}
				out.MillisBehindLatest = &n
			case "ChildShards":
				// Only at the end of a shard: the SDK decodes those.
				if !p.consume('[') || !p.consume(']') {
					return false
				}
				out.ChildShards = []types.ChildShard{}
			}
		}
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return p.end()
		}
		return false
	}
}

func (p *recordsParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *recordsParser) consume(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *recordsParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

func (p *recordsParser) null() bool {
	p.ws()
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// str returns the bytes of a short string that needs no decoding: false
// when it holds an escape (the SDK unescapes those), a control character or
// invalid UTF-8 (which the SDK refuses or replaces).
func (p *recordsParser) str() ([]byte, bool) {
	if !p.consume('"') {
		return nil, false
	}
	ascii := true
	j := p.i
	// Eight plain bytes at a time, then byte by byte from the first chunk
	// that holds anything else.
	for j+8 <= len(p.b) && !swar.Special(binary.LittleEndian.Uint64(p.b[j:])) {
		j += 8
	}
	for ; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[p.i:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// raw returns a long string's bytes up to the closing quote, unchecked: it
// is for base64 text, whose decoder refuses every byte outside its alphabet.
func (p *recordsParser) raw() ([]byte, bool) {
	if !p.consume('"') {
		return nil, false
	}
	j := bytes.IndexByte(p.b[p.i:], '"')
	if j < 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+j]
	p.i += j + 1
	return s, true
}

// number returns a JSON number's bytes, nil unless it follows the JSON
// grammar exactly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *recordsParser) number() []byte {
	p.ws()
	b, i := p.b, p.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return nil
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil
		}
	}
	tok := b[p.i:i]
	p.i = i
	return tok
}

func (p *recordsParser) int64() (int64, bool) {
	tok := p.number()
	if len(tok) == 0 || len(tok) > 18 {
		return 0, false
	}
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	var n int64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent: the SDK decides
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// keep copies s into the current string block.
func (p *recordsParser) keep(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > cap(p.strs)-len(p.strs) {
		p.strs = make([]byte, 0, max(stringBlock, len(s)))
	}
	off := len(p.strs)
	p.strs = append(p.strs, s...)
	return unsafe.String(&p.strs[off], len(s))
}

// Record members.
const (
	memberUnknown = iota
	memberSequenceNumber
	memberArrival
	memberData
	memberPartitionKey
	memberEncryption
)

var memberLiterals = [...]string{
	memberSequenceNumber: `"SequenceNumber":`,
	memberArrival:        `"ApproximateArrivalTimestamp":`,
	memberData:           `"Data":`,
	memberPartitionKey:   `"PartitionKey":`,
	memberEncryption:     `"EncryptionType":`,
}

// member reads a record member's name and its colon.
func (p *recordsParser) member() int {
	p.ws()
	rest := p.b[p.i:]
	if len(rest) > 1 && rest[0] == '"' {
		m := memberUnknown
		switch rest[1] {
		case 'S':
			m = memberSequenceNumber
		case 'A':
			m = memberArrival
		case 'D':
			m = memberData
		case 'P':
			m = memberPartitionKey
		case 'E':
			m = memberEncryption
		}
		if lit := memberLiterals[m]; m != memberUnknown && len(rest) >= len(lit) && string(rest[:len(lit)]) == lit {
			p.i += len(lit)
			return m
		}
	}
	// Spaced out or unknown.
	name, ok := p.str()
	if !ok || !p.consume(':') {
		return memberUnknown
	}
	for m, lit := range memberLiterals {
		if m != memberUnknown && len(name)+3 == len(lit) && string(name) == lit[1:len(lit)-2] {
			return m
		}
	}
	return memberUnknown
}

// records decodes the Records array. It is one loop over the members of
// each record, longer than most functions here: the hot path of every page,
// kept in one frame so the per-record state stays in registers.
func (p *recordsParser) records(out *kinesis.GetRecordsOutput) bool {
	if !p.consume('[') {
		return false
	}
	if p.consume(']') {
		out.Records = []types.Record{}
		return true
	}
	// The fields the SDK keeps behind pointers, in one block per page.
	type fields struct {
		seq, key string
		at       time.Time
	}
	var (
		recs  []types.Record
		fs    []fields
		first = p.i
	)
	for {
		if !p.consume('{') {
			return false
		}
		var (
			rec            types.Record
			f              fields
			seq, key, when bool
		)
		for first := true; !p.consume('}'); first = false {
			if !first && !p.consume(',') {
				return false
			}
			m := p.member()
			if m == memberUnknown || p.null() {
				return false // unknown, or null (the SDK leaves it nil): let the SDK decode
			}
			switch m {
			case memberSequenceNumber:
				s, ok := p.str()
				if !ok {
					return false
				}
				f.seq, seq = p.keep(s), true
			case memberPartitionKey:
				s, ok := p.str()
				if !ok {
					return false
				}
				f.key, key = p.keep(s), true
			case memberArrival:
				v, ok := epochSeconds(p.number())
				if !ok {
					return false
				}
				// As the SDK does (smithy-go time.ParseEpochSeconds): the
				// float times 1000, truncated to milliseconds, in UTC.
				f.at, when = time.Unix(0, int64(v*1000)*int64(time.Millisecond)).UTC(), true
			case memberData:
				s, ok := p.raw()
				if !ok || rec.Data != nil {
					return false
				}
				d, ok := p.blob(s)
				if !ok {
					return false
				}
				rec.Data = d
			case memberEncryption:
				s, ok := p.str()
				if !ok {
					return false
				}
				switch string(s) {
				case "NONE":
					rec.EncryptionType = types.EncryptionTypeNone
				case "KMS":
					rec.EncryptionType = types.EncryptionTypeKms
				default:
					rec.EncryptionType = types.EncryptionType(s)
				}
			}
		}
		if !seq || !key || !when || rec.Data == nil {
			return false // a record without a required member: let the SDK decide
		}
		if recs == nil {
			// Room for the page at the first record's sizes.
			per := max(p.i-first, 1)
			n := (len(p.b)-first)/per + 1
			recs, fs = make([]types.Record, 0, n), make([]fields, 0, n)
			p.data = make([]byte, 0, min((len(p.b)-p.i)/4*3+3, (len(p.b)-p.i)/per*(len(rec.Data)+len(rec.Data)/8+16)+4096))
		}
		recs = append(recs, rec)
		fs = append(fs, f)
		if p.consume(',') {
			continue
		}
		if !p.consume(']') {
			return false
		}
		break
	}
	for i := range recs {
		recs[i].SequenceNumber = &fs[i].seq
		recs[i].PartitionKey = &fs[i].key
		recs[i].ApproximateArrivalTimestamp = &fs[i].at
	}
	out.Records = recs
	return true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// epochSeconds reads a timestamp number as the SDK does (ParseFloat). The
// usual form, at most 15 digits with a fraction, takes a shortcut that
// gives the same float: both operands of the division are exact, so its
// one rounding is the correct one. Values whose milliseconds do not fit
// an int64 are refused (the SDK's conversion saturates there).
func epochSeconds(tok []byte) (float64, bool) {
	if len(tok) == 0 {
		return 0, false
	}
	var (
		m      uint64
		digits int
		frac   = -1
	)
	for _, c := range tok {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			digits = 99 // a sign or an exponent
		}
	}
	if digits <= 15 {
		return float64(m) / pow10[max(frac, 0)], true
	}
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > 1e15 {
		return 0, false
	}
	return v, true
}

// blob base64-decodes s into the page's data buffer.
func (p *recordsParser) blob(s []byte) ([]byte, bool) {
	want := base64.StdEncoding.DecodedLen(len(s))
	if len(s)%4 != 0 {
		return nil, false
	}
	if len(s) > 0 && s[len(s)-1] == '=' {
		want--
		if s[len(s)-2] == '=' {
			want--
		}
	}
	if p.data == nil || want > cap(p.data)-len(p.data) {
		// The first record, or more than the estimate: a new buffer; those
		// before it stay with the records that use them.
		size := max(want, 1)
		if p.data != nil {
			size = max(want, min(64<<10, (len(p.b)-p.i)/4*3+3))
		}
		p.data = make([]byte, 0, size)
	}
	off := len(p.data)
	n, err := base64.StdEncoding.Decode(p.data[off:off+want], s)
	// n != want: the decoder skipped line breaks the SDK would refuse.
	if err != nil || n != want {
		return nil, false
	}
	p.data = p.data[:off+n]
	return p.data[off : off+n : off+n], true
}
