package tail

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/cpumeter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
	"github.com/kinesis-shards/kinesis-shards/tail/internal/getrecords"
)

// The tail hot path, piece by piece, on full GetRecords pages from the
// loopback stub (internal/kinesistest/wirestub): the SDK call and decode, convert, and
// the delivery bookkeeping. render/records_bench_test.go has the output
// encoding and the whole pipeline; docs/BENCHMARKS.md has the figures.
// Run with -cpu 1: the figures are per core.

var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1024}, {"100B", 100}}

func startStub(b *testing.B, o wirestub.Options) *wirestub.Server {
	b.Helper()
	s, err := wirestub.Start(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// stubClient is a client like the tool's: one attempt per call (the
// reader retries), a keep-alive transport, static credentials.
func stubClient(s *wirestub.Server) *kinesis.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = 1024
	return kinesis.New(kinesis.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(s.URL),
		HTTPClient:   &http.Client{Transport: tr},
	})
}

func benchIterator(b *testing.B, c *kinesis.Client) string {
	out, err := c.GetShardIterator(context.Background(), &kinesis.GetShardIteratorInput{
		StreamName: aws.String("bench"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		b.Fatal(err)
	}
	return aws.ToString(out.ShardIterator)
}

// BenchmarkGetRecords is one GetRecords call of a full page answered from
// memory (no network): the SDK's request path and the decoding, with the
// SDK's decoder (sdk) and with the reader's (fast).
func BenchmarkGetRecords(b *testing.B) {
	for _, dec := range []struct {
		name string
		opts []func(*kinesis.Options)
	}{{"sdk", []func(*kinesis.Options){awscall.Once}}, {"fast", []func(*kinesis.Options){awscall.Once, getrecords.Option}}} {
		for _, sz := range benchSizes {
			b.Run(dec.name+"/"+sz.name, func(b *testing.B) {
				s := startStub(b, wirestub.Options{RecordSize: sz.size})
				c := wirestub.BodyClient(200, s.PageBody())
				b.SetBytes(int64(s.PagePayload()))
				b.ReportAllocs()
				m := cpumeter.Start()
				for b.Loop() {
					out, err := c.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}, dec.opts...)
					if err != nil {
						b.Fatal(err)
					}
					if len(out.Records) != len(s.PageRecords()) {
						b.Fatalf("%d records", len(out.Records))
					}
				}
				m.Report(b, len(s.PageRecords()), s.PagePayload())
			})
		}
	}
}

// BenchmarkGetRecordsLoopback is the same call over loopback HTTP to the
// stub in this process (its serving shares the CPU): informative only.
func BenchmarkGetRecordsLoopback(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startStub(b, wirestub.Options{RecordSize: sz.size, Pages: wirestub.Forever})
			c := stubClient(s)
			it := benchIterator(b, c)
			b.SetBytes(int64(s.PagePayload()))
			b.ReportAllocs()
			m := cpumeter.Start()
			retries := 0
			for b.Loop() {
				out, err := c.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String(it)}, awscall.Once, getrecords.Option)
				// Over loopback the stub can answer before the client's
				// write loop has finished with the request, and net/http
				// then drops the connection under the body being read
				// ("use of closed network connection"), now and then. The
				// reader retries such a call as it does any dropped
				// connection; so does the benchmark, and counts them.
				for err != nil && awserr.Of(err) == awserr.Transient && retries < 100 {
					retries++
					out, err = c.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String(it)}, awscall.Once, getrecords.Option)
				}
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Records) != len(s.PageRecords()) {
					b.Fatalf("%d records", len(out.Records))
				}
			}
			m.Report(b, len(s.PageRecords()), s.PagePayload())
			b.ReportMetric(float64(retries)/float64(b.N), "retries/op")
		})
	}
}

// benchTailer is a Tailer whose deliver only counts.
func benchTailer(api API) *Tailer {
	t := New(api, NewMemoryStore(nil), Options{StreamName: "bench"}, func(batch []Record) error { return nil })
	t.positions = map[string]Position{}
	return t
}

// BenchmarkDecodeGetRecords is the fast decoder alone on a full page
// (BenchmarkGetRecords is the whole call).
func BenchmarkDecodeGetRecords(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startStub(b, wirestub.Options{RecordSize: sz.size})
			body := s.PageBody()
			b.SetBytes(int64(s.PagePayload()))
			b.ReportAllocs()
			m := cpumeter.Start()
			for b.Loop() {
				var out kinesis.GetRecordsOutput
				if !getrecords.Decode(body, &out) || len(out.Records) != len(s.PageRecords()) {
					b.Fatal("not decoded")
				}
			}
			m.Report(b, len(s.PageRecords()), s.PagePayload())
		})
	}
}

// BenchmarkConvert turns a decoded page into records (plain records: the
// KPL check fails at the magic bytes).
func BenchmarkConvert(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startStub(b, wirestub.Options{RecordSize: sz.size})
			page := s.PageRecords()
			r := &reader{t: benchTailer(nil), id: "shardId-000000000000"}
			b.SetBytes(int64(s.PagePayload()))
			b.ReportAllocs()
			m := cpumeter.Start()
			for b.Loop() {
				out, _ := r.convert(page)
				if len(out) != len(page) {
					b.Fatal(len(out))
				}
			}
			m.Report(b, len(page), s.PagePayload())
		})
	}
}

// BenchmarkReadPage is the reader's whole work for one page except the
// output encoding (render's BenchmarkRecordWriter): the GetRecords call
// answered from memory, convert, and deliverBatch (positions, counts).
func BenchmarkReadPage(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startStub(b, wirestub.Options{RecordSize: sz.size})
			t := benchTailer(wirestub.BodyClient(200, s.PageBody()))
			t.opts.CallTimeout = time.Minute
			r := &reader{t: t, id: "shardId-000000000000"}
			b.SetBytes(int64(s.PagePayload()))
			b.ReportAllocs()
			m := cpumeter.Start()
			for b.Loop() {
				out, err := r.getRecords(context.Background(), "it")
				if err != nil {
					b.Fatal(err)
				}
				batch, _ := r.convert(out.Records)
				if _, err := t.deliverBatch(r, batch); err != nil {
					b.Fatal(err)
				}
			}
			m.Report(b, len(s.PageRecords()), s.PagePayload())
		})
	}
}
