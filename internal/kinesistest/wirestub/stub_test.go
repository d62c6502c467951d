package wirestub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

func start(t *testing.T, o Options) (*Server, *kinesis.Client) {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	// A fresh connection per call: under a loaded test run a reused one
	// now and then fails as it is read ("use of closed network
	// connection"), which these tests, with no retries, would report as
	// the stub's failure (the reshard window tests do the same).
	c := kinesis.New(kinesis.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint:     aws.String(s.URL),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	})
	return s, c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestDescribeAndList(t *testing.T) {
	s, c := start(t, Options{Stream: "s1", Shards: 2500, ListPageSize: 700})
	d, err := c.DescribeStreamSummary(ctx(t), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s1")})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.StreamDescriptionSummary; aws.ToInt32(got.OpenShardCount) != 2500 || got.StreamStatus != types.StreamStatusActive ||
		!strings.HasSuffix(aws.ToString(got.StreamARN), ":stream/s1") || got.StreamCreationTimestamp == nil {
		t.Fatalf("summary %+v", got)
	}
	shards, err := lineage.ListShards(ctx(t), c, lineage.ListOptions{StreamName: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2500 {
		t.Fatalf("listed %d shards, want 2500", len(shards))
	}
	if got := s.Stats().Calls["ListShards"]; got != 4 {
		t.Fatalf("ListShards calls %d, want 4 pages of at most 700", got)
	}
	// The layout is CreateStream's: a valid lineage whose open shards tile
	// the key space.
	g, err := lineage.Build(shards)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Open()); n != 2500 {
		t.Fatalf("open %d", n)
	}
	if err := g.CheckOpenCoverage(); err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(shards[1].HashKeyRange.StartingHashKey); got != "136112946768375385385349842972707284" {
		t.Fatalf("shard 1 starts at %s", got)
	}

	// A token with the stream name is refused, as AWS does.
	_, err = c.ListShards(ctx(t), &kinesis.ListShardsInput{StreamName: aws.String("s1"), NextToken: aws.String("list/700")})
	var inv *types.InvalidArgumentException
	if !errors.As(err, &inv) {
		t.Fatalf("NextToken with StreamName: %v", err)
	}
	_, err = c.DescribeStreamSummary(ctx(t), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("nope")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("unknown stream: %v", err)
	}
}

func iterator(t *testing.T, c *kinesis.Client, shard string, typ types.ShardIteratorType) *string {
	t.Helper()
	out, err := c.GetShardIterator(ctx(t), &kinesis.GetShardIteratorInput{StreamName: aws.String("bench"), ShardId: aws.String(shard), ShardIteratorType: typ})
	if err != nil {
		t.Fatal(err)
	}
	return out.ShardIterator
}

func TestGetRecordsPages(t *testing.T) {
	for _, binary := range []bool{false, true} {
		t.Run(fmt.Sprint("binary=", binary), func(t *testing.T) {
			s, c := start(t, Options{Shards: 3, RecordSize: 100, RecordsPerPage: 50, Pages: 2, Binary: binary})
			it := iterator(t, c, "shardId-000000000002", types.ShardIteratorTypeTrimHorizon)
			want := s.PageRecords()
			if len(want) != 50 || s.PagePayload() != 50*(100+keyLen) {
				t.Fatalf("page of %d records, %d bytes", len(want), s.PagePayload())
			}
			for pg := range 4 {
				out, err := c.GetRecords(ctx(t), &kinesis.GetRecordsInput{ShardIterator: it})
				if err != nil {
					t.Fatal(err)
				}
				if out.NextShardIterator == nil {
					t.Fatal("the stub's shards never end")
				}
				it = out.NextShardIterator
				if pg >= 2 {
					if len(out.Records) != 0 || aws.ToInt64(out.MillisBehindLatest) != 0 {
						t.Fatalf("page %d: %d records, %d ms behind; want a caught-up empty page", pg, len(out.Records), aws.ToInt64(out.MillisBehindLatest))
					}
					continue
				}
				if len(out.Records) != 50 || aws.ToInt64(out.MillisBehindLatest) <= 0 {
					t.Fatalf("page %d: %d records, %d ms behind", pg, len(out.Records), aws.ToInt64(out.MillisBehindLatest))
				}
				for i, r := range out.Records {
					w := want[i]
					if !bytes.Equal(r.Data, w.Data) || aws.ToString(r.PartitionKey) != aws.ToString(w.PartitionKey) ||
						aws.ToString(r.SequenceNumber) != aws.ToString(w.SequenceNumber) ||
						!aws.ToTime(r.ApproximateArrivalTimestamp).Equal(aws.ToTime(w.ApproximateArrivalTimestamp)) {
						t.Fatalf("page %d record %d: got %+v want %+v", pg, i, r, w)
					}
					if len(r.Data) != 100 || utf8.Valid(r.Data) == binary {
						t.Fatalf("record %d: %d bytes, utf8 %v", i, len(r.Data), utf8.Valid(r.Data))
					}
				}
			}
			// Limit takes a prefix of the page.
			out, err := c.GetRecords(ctx(t), &kinesis.GetRecordsInput{ShardIterator: iterator(t, c, "shardId-000000000000", types.ShardIteratorTypeTrimHorizon), Limit: aws.Int32(7)})
			if err != nil || len(out.Records) != 7 {
				t.Fatalf("Limit 7: %v, %d records", err, len(out.Records))
			}
			// LATEST is at the tip.
			out, err = c.GetRecords(ctx(t), &kinesis.GetRecordsInput{ShardIterator: iterator(t, c, "shardId-000000000000", types.ShardIteratorTypeLatest)})
			if err != nil || len(out.Records) != 0 {
				t.Fatalf("LATEST: %v, %d records", err, len(out.Records))
			}
			st := s.Stats()
			if st.Calls["GetRecords"] != 6 || st.BehindPages != 3 || st.CaughtUpPages != 3 || st.RecordsServed != 107 || st.PayloadServed != 107*109 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestFullPage(t *testing.T) {
	for _, tt := range []struct{ size, want int }{{100, 10000}, {1024, 10000}, {4096, 2554}, {1 << 20, 9}} {
		if got := FullPage(tt.size); got != tt.want {
			t.Errorf("FullPage(%d) = %d, want %d", tt.size, got, tt.want)
		}
		if got := FullPage(tt.size) * (tt.size + keyLen); got > MaxPageBytes {
			t.Errorf("FullPage(%d) holds %d bytes", tt.size, got)
		}
	}
}

func TestErrors(t *testing.T) {
	s, c := start(t, Options{Shards: 2})
	_, err := c.GetShardIterator(ctx(t), &kinesis.GetShardIteratorInput{StreamName: aws.String("bench"), ShardId: aws.String("shardId-000000000002"), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("shard 2 of 2: %v", err)
	}
	_, err = c.GetRecords(ctx(t), &kinesis.GetRecordsInput{ShardIterator: aws.String("bogus")})
	var inv *types.InvalidArgumentException
	if !errors.As(err, &inv) {
		t.Fatalf("bogus iterator: %v", err)
	}
	_, err = c.DeleteStream(ctx(t), &kinesis.DeleteStreamInput{StreamName: aws.String("bench")})
	if err == nil || !strings.Contains(err.Error(), "UnknownOperation") {
		t.Fatalf("DeleteStream: %v", err)
	}
	resp, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %s", resp.Status)
	}
}

// The real tail reads the stub: every record of every shard, in order.
func TestTail(t *testing.T) {
	s, c := start(t, Options{Shards: 3, RecordSize: 64, RecordsPerPage: 20, Pages: 2})
	var (
		mu  sync.Mutex
		got = map[string][]string{}
	)
	deliver := func(batch []tail.Record) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range batch {
			got[r.ShardID] = append(got[r.ShardID], r.PartitionKey)
		}
		return nil
	}
	res, err := tail.New(c, tail.NewMemoryStore(nil), tail.Options{StreamName: "bench", MaxRecords: 3 * 2 * 20}, deliver).Run(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 120 || res.Reason != tail.StopMaxRecords || res.Readers != 3 {
		t.Fatalf("result %+v", res)
	}
	for i := range 3 {
		keys := got[fmt.Sprintf("shardId-%012d", i)]
		if len(keys) != 40 {
			t.Fatalf("shard %d: %d records", i, len(keys))
		}
		for j, k := range keys {
			if want := aws.ToString(s.PageRecords()[j%20].PartitionKey); k != want {
				t.Fatalf("shard %d record %d: key %s, want %s", i, j, k, want)
			}
		}
	}
}
