//go:build unix

package render

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/cpumeter"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// The output half of tail's hot path: a full page of records (as the
// reader delivers them) written by RecordWriter, which flushes once per
// batch. tail/reader_bench_test.go has the input half; docs/BENCHMARKS.md
// the figures. Run with -cpu 1: the figures are per core.

var recordSizes = []struct {
	name string
	size int
}{{"1KiB", 1024}, {"100B", 100}}

// benchPage is one full page of the stub, delivered.
func benchPage(b *testing.B, size int, binary bool) (batch []tail.Record, payload int) {
	b.Helper()
	s, err := wirestub.Start(wirestub.Options{RecordSize: size, Binary: binary})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, r := range s.PageRecords() {
		batch = append(batch, tail.Record{
			ShardID: "shardId-000000000042", SequenceNumber: aws.ToString(r.SequenceNumber),
			PartitionKey: aws.ToString(r.PartitionKey), ArrivalTime: aws.ToTime(r.ApproximateArrivalTimestamp), Data: r.Data,
		})
	}
	return batch, s.PagePayload()
}

// countingDiscard counts write calls: one per flush is the goal.
type countingDiscard struct{ writes int }

func (c *countingDiscard) Write(p []byte) (int, error) { c.writes++; return len(p), nil }

func BenchmarkRecordWriter(b *testing.B) {
	for _, f := range []struct {
		name   string
		format RecordFormat
		binary bool
	}{{"json", RecordJSON, false}, {"json-binary", RecordJSON, true}, {"raw", RecordRaw, false}, {"text", RecordText, false}} {
		for _, sz := range recordSizes {
			b.Run(f.name+"/"+sz.name, func(b *testing.B) {
				batch, payload := benchPage(b, sz.size, f.binary)
				out := &countingDiscard{}
				w := NewRecordWriter(out, f.format, NewTheme(false))
				b.SetBytes(int64(payload))
				b.ReportAllocs()
				m := cpumeter.Start()
				for b.Loop() {
					if err := w.Write(batch); err != nil {
						b.Fatal(err)
					}
				}
				m.Report(b, len(batch), payload)
				b.ReportMetric(float64(out.writes)/float64(b.N), "writes/op")
			})
		}
	}
}

var _ io.Writer = (*countingDiscard)(nil)

// RecordWriter's fast paths (encoding into the output buffer, records
// bigger than it, the per-second time cache, raw payloads written as they
// are) give exactly what AppendRecordJSON's plain path gives. (Here with
// the benchmark they guard.)
func TestRecordWriterMatchesAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	base := time.Date(2026, 11, 30, 23, 59, 58, 0, time.UTC)
	var batch []tail.Record
	for i := range 400 {
		size := rng.IntN(300)
		switch i % 97 {
		case 5:
			size = 300 << 10 // bigger than the output buffer
		case 6:
			size = 200 << 10 // fits, after a flush
		}
		alphabet := []rune("abc\"\\\n\x01é\u2028xyz0123456789 {}:,\u2029\x7f\t")
		data := make([]byte, 0, size)
		for len(data) < size {
			data = utf8.AppendRune(data, alphabet[rng.IntN(len(alphabet))])
		}
		if i%7 == 0 {
			data = append(data, 0xff) // not UTF-8: base64
		}
		at := base.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
		switch i % 50 {
		case 1:
			at = time.Date(-3, 1, 1, 0, 0, 0, 5e6, time.UTC)
		case 2:
			at = time.Date(12000, 1, 1, 0, 0, 0, 999999999, time.UTC)
		case 3:
			at = at.In(time.FixedZone("x", -5*3600))
		case 4:
			at = time.Time{}
		}
		batch = append(batch, tail.Record{ShardID: "shardId-000000000001", SequenceNumber: "4959", PartitionKey: string(data[:min(len(data), 5)]),
			ArrivalTime: at, Data: data, Aggregated: i%11 == 0, SubSequence: int64(i)})
	}
	for _, f := range []RecordFormat{RecordJSON, RecordRaw} {
		var want []byte
		for i := range batch {
			if f == RecordJSON {
				want = AppendRecordJSON(want, &batch[i])
			} else {
				want = append(append(want, batch[i].Data...), '\n')
			}
		}
		var got bytes.Buffer
		w := NewRecordWriter(&got, f, NewTheme(false))
		// In two batches, so the second starts with a warm time cache.
		if err := w.Write(batch[:150]); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(batch[150:]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			g, wl := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
			for i := range min(len(g), len(wl)) {
				if !bytes.Equal(g[i], wl[i]) {
					t.Fatalf("format %d, line %d:\n got %.300s\nwant %.300s", f, i, g[i], wl[i])
				}
			}
			t.Fatalf("format %d: %d bytes, want %d", f, got.Len(), len(want))
		}
	}
}

func TestTimeCache(t *testing.T) {
	var c timeCache
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)
	for range 100000 {
		at = at.Add(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
		got := string(c.append(nil, at))
		if want := at.UTC().Format(arrivalLayout); got != want {
			t.Fatalf("%v: got %s want %s", at, got, want)
		}
	}
}

// appendJSONStringRef is appendJSONString before its eight-byte skip, the
// reference the fuzz target holds the fast one to.
func appendJSONStringRef(b []byte, s string) []byte {
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

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain ascii text that is longer than eight bytes")
	f.Add("q\"uo\\te\x01\n\t\u2028\u2029é€😀\x7f12345678")
	f.Add("\xff\xfe invalid")
	f.Fuzz(func(t *testing.T, s string) {
		got, want := appendJSONString(nil, s), appendJSONStringRef(nil, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", s, got, want)
		}
	})
}
