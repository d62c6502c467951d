package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// Tests against the package's emulator (kinesis-mock by default).

// mode is how a test's client reaches the emulator through the Injector.
type mode struct {
	name   string
	client func(t *testing.T, e *emulator.Emulator, in *Injector) *kinesis.Client
}

var modes = []mode{
	{"RoundTripper", func(t *testing.T, e *emulator.Emulator, in *Injector) *kinesis.Client {
		return e.Client(t, func(o *kinesis.Options) {
			o.HTTPClient = &http.Client{Transport: in.RoundTripper(e.Transport())}
			o.RetryMaxAttempts = 1
		})
	}},
	{"Proxy", func(t *testing.T, e *emulator.Emulator, in *Injector) *kinesis.Client {
		p := in.Proxy(t, e.Endpoint)
		return e.Client(t, func(o *kinesis.Options) {
			o.BaseEndpoint = aws.String(p.URL)
			o.RetryMaxAttempts = 1
		})
	}},
}

func shardIterator(t *testing.T, c *kinesis.Client, stream, shard string) *string {
	t.Helper()
	out, err := c.GetShardIterator(t.Context(), &kinesis.GetShardIteratorInput{
		StreamName: aws.String(stream), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.ShardIterator
}

// TestEmulatorTypedErrors: faults in front of a real emulator come out as
// the SDK's typed errors, and the calls around them work.
func TestEmulatorTypedErrors(t *testing.T) {
	e := emulator.Require(t)
	direct := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, direct, stream, 1)
	e.Put(t, direct, stream, []emulator.Rec{{PartitionKey: "k", Data: []byte("x")}})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			in := New(7,
				Rule{Op: "GetRecords", Kind: Throttle, Nth: []int{1}},
				Rule{Op: "GetRecords", Kind: ExpiredIterator, Nth: []int{2}},
				Rule{Op: "ListShards", Kind: LimitExceeded, Times: 1},
				Rule{Op: "UpdateShardCount", Kind: ResourceInUse},
			)
			c := m.client(t, e, in)
			iter := shardIterator(t, c, stream, "shardId-000000000000")
			for i, check := range []func(error) bool{
				isA[*types.ProvisionedThroughputExceededException],
				isA[*types.ExpiredIteratorException],
			} {
				if err := getRecords(t.Context(), c, *iter); !check(err) {
					t.Fatalf("GetRecords #%d: %T %v", i+1, err, err)
				}
			}
			out, err := c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil || len(out.Records) != 1 {
				t.Fatalf("GetRecords #3: %v, %d records; want the record", err, len(out.Records))
			}

			_, err = c.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(stream)})
			if !isA[*types.LimitExceededException](err) {
				t.Fatalf("ListShards: %T %v", err, err)
			}
			_, err = c.UpdateShardCount(t.Context(), &kinesis.UpdateShardCountInput{
				StreamName: aws.String(stream), TargetShardCount: aws.Int32(2), ScalingType: types.ScalingTypeUniformScaling,
			})
			if !isA[*types.ResourceInUseException](err) {
				t.Fatalf("UpdateShardCount: %T %v", err, err)
			}
			s, err := direct.DescribeStreamSummary(t.Context(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
			if err != nil || aws.ToInt32(s.StreamDescriptionSummary.OpenShardCount) != 1 {
				t.Fatalf("the faulted UpdateShardCount reached the emulator (%v)", err)
			}
		})
	}
}

// TestEmulatorConnectionFaults: through the proxy, Drop is a connection
// closed without a response, DropResponse one closed after the call took
// effect, and a Stall ends with the client's deadline or the proxy's Close.
func TestEmulatorConnectionFaults(t *testing.T) {
	e := emulator.Require(t)
	direct := e.Client(t)

	t.Run("Drop", func(t *testing.T) {
		in := New(1, Rule{Op: "ListStreams", Kind: Drop, Times: 1})
		p := in.Proxy(t, e.Endpoint)
		c := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL); o.RetryMaxAttempts = 1 })
		_, err := c.ListStreams(t.Context(), &kinesis.ListStreamsInput{})
		var rse *smithyhttp.RequestSendError
		if !errors.As(err, &rse) {
			t.Fatalf("err = %T %v, want a connection error", err, err)
		}
		if _, err := c.ListStreams(t.Context(), &kinesis.ListStreamsInput{}); err != nil {
			t.Fatalf("the next call: %v", err)
		}
	})

	t.Run("DropResponse", func(t *testing.T) {
		in := New(1, Rule{Op: "CreateStream", Kind: DropResponse})
		p := in.Proxy(t, e.Endpoint)
		c := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL); o.RetryMaxAttempts = 1 })
		stream := emulator.StreamName(t)
		_, err := c.CreateStream(t.Context(), &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)})
		var rse *smithyhttp.RequestSendError
		if !errors.As(err, &rse) {
			t.Fatalf("err = %T %v, want a connection error", err, err)
		}
		e.WaitActive(t, direct, stream) // created all the same
		t.Cleanup(func() {
			direct.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)})
		})
	})

	t.Run("Stall until the deadline", func(t *testing.T) {
		in := New(1, Rule{Op: "ListStreams", Kind: Stall})
		p := in.Proxy(t, e.Endpoint)
		c := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL); o.RetryMaxAttempts = 1 })
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if _, err := c.ListStreams(ctx, &kinesis.ListStreamsInput{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the client's deadline", err)
		}
	})

	t.Run("Close releases a stall", func(t *testing.T) {
		in := New(1, Rule{Op: "ListStreams", Kind: Stall})
		p, err := in.StartProxy(e.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		c := e.Client(t, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(p.URL); o.RetryMaxAttempts = 1 })
		errc := make(chan error, 1)
		go func() { // no deadline: only Close can end it
			_, err := c.ListStreams(context.Background(), &kinesis.ListStreamsInput{})
			errc <- err
		}()
		for in.Counts()["ListStreams"] == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		p.Close()
		var rse *smithyhttp.RequestSendError
		if err := <-errc; !errors.As(err, &rse) {
			t.Fatalf("stalled call after Close: %T %v, want a connection error", err, err)
		}
	})
}

// TestPartialPut: the failed entries are reported at their positions, are
// counted in FailedRecordCount, and are really not written; the others are
// written where the response says. The same seed fails the same positions.
func TestPartialPut(t *testing.T) {
	e := emulator.Require(t)
	direct := e.Client(t)
	const n = 40
	recs := make([]types.PutRecordsRequestEntry, n)
	for i := range recs {
		recs[i] = types.PutRecordsRequestEntry{PartitionKey: aws.String(strconv.Itoa(i)), Data: []byte(fmt.Sprintf("rec-%02d", i))}
	}
	failedAt := map[string][]int{}
	for _, m := range modes {
		for _, frac := range []float64{0.25, 1} {
			t.Run(fmt.Sprintf("%s/%v", m.name, frac), func(t *testing.T) {
				stream := emulator.StreamName(t)
				e.CreateStream(t, direct, stream, 2)
				in := New(99, Rule{Op: "PutRecords", Kind: PartialPut, PartialFraction: frac})
				out, err := m.client(t, e, in).PutRecords(t.Context(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: recs})
				if err != nil {
					t.Fatal(err)
				}
				wantFailed := int(frac * n)
				if aws.ToInt32(out.FailedRecordCount) != int32(wantFailed) || len(out.Records) != n {
					t.Fatalf("FailedRecordCount %d, %d entries; want %d of %d", aws.ToInt32(out.FailedRecordCount), len(out.Records), wantFailed, n)
				}
				written := map[string]string{} // data -> "shard/seq"
				var failed []int
				for i, r := range out.Records {
					if r.ErrorCode != nil {
						if *r.ErrorCode != "ProvisionedThroughputExceededException" || r.ErrorMessage == nil || r.SequenceNumber != nil {
							t.Fatalf("entry %d: %+v", i, r)
						}
						failed = append(failed, i)
						continue
					}
					written[string(recs[i].Data)] = aws.ToString(r.ShardId) + "/" + aws.ToString(r.SequenceNumber)
				}
				got := map[string]string{}
				for shard, rs := range e.ReadAll(t, direct, stream) {
					for _, r := range rs {
						got[string(r.Data)] = shard + "/" + aws.ToString(r.SequenceNumber)
					}
				}
				if len(got) != len(written) {
					t.Fatalf("stream holds %d records, want the %d written", len(got), len(written))
				}
				for data, where := range written {
					if got[data] != where {
						t.Errorf("%s: read at %q, response said %q", data, got[data], where)
					}
				}
				key := strconv.FormatFloat(frac, 'g', -1, 64)
				if prev, ok := failedAt[key]; ok && !slices.Equal(prev, failed) {
					t.Errorf("seed 99 failed %v here, %v in the other mode", failed, prev)
				}
				failedAt[key] = failed
			})
		}
	}
}

// TestPutRetriesPartialPut: emulator.Put retries the failed entries, so
// every record lands exactly once.
func TestPutRetriesPartialPut(t *testing.T) {
	e := emulator.Require(t)
	direct := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, direct, stream, 2)
	in := New(5, Rule{Op: "PutRecords", Kind: PartialPut, PartialFraction: 0.3, Times: 2})
	c := modes[0].client(t, e, in)
	recs := make([]emulator.Rec, 50)
	for i := range recs {
		recs[i] = emulator.Rec{PartitionKey: strconv.Itoa(i), Data: []byte(fmt.Sprintf("rec-%02d", i))}
	}
	e.Put(t, c, stream, recs)
	if in.Fired()["PutRecords/PartialPut"] != 2 || in.Counts()["PutRecords"] != 3 {
		t.Fatalf("Fired %v, Counts %v: want 2 partial failures and 3 calls", in.Fired(), in.Counts())
	}
	seen := map[string]int{}
	for _, rs := range e.ReadAll(t, direct, stream) {
		for _, r := range rs {
			seen[string(r.Data)]++
		}
	}
	for _, r := range recs {
		if seen[string(r.Data)] != 1 {
			t.Errorf("%s written %d times", r.Data, seen[string(r.Data)])
		}
	}
	if len(seen) != len(recs) {
		t.Errorf("stream holds %d distinct records, want %d", len(seen), len(recs))
	}
}

// TestEmulatorGetRecordsCalls follows real iterator chains (through
// NextShardIterator) on two shards, throttled attempts included.
func TestEmulatorGetRecordsCalls(t *testing.T) {
	e := emulator.Require(t)
	direct := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, direct, stream, 2)
	recs := make([]emulator.Rec, 20)
	for i := range recs {
		recs[i] = emulator.Rec{PartitionKey: strconv.Itoa(i), Data: []byte{byte(i)}}
	}
	e.Put(t, direct, stream, recs)
	shards, err := direct.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}

	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			in := New(3, Rule{Op: "GetRecords", Kind: Throttle, Nth: []int{2, 3, 7}})
			c := m.client(t, e, in)
			want := map[string]int{}
			for _, s := range shards.Shards {
				shard := aws.ToString(s.ShardId)
				iter := shardIterator(t, c, stream, shard)
				for range 4 { // Limit 2: the shard's records span several calls
					out, err := c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(2)})
					want[shard]++
					for isA[*types.ProvisionedThroughputExceededException](err) { // retry on the same iterator
						out, err = c.GetRecords(t.Context(), &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(2)})
						want[shard]++
					}
					if err != nil {
						t.Fatal(err)
					}
					iter = out.NextShardIterator
				}
			}
			got := in.GetRecordsCalls()
			if len(got) != len(shards.Shards) {
				t.Fatalf("GetRecordsCalls has %v, want the stream's %d shards", keys(got), len(shards.Shards))
			}
			for shard, n := range want {
				if len(got[shard]) != n {
					t.Errorf("%s: %d calls recorded, want %d", shard, len(got[shard]), n)
				}
				if MaxCallsInWindow(got[shard], time.Hour) != n {
					t.Errorf("%s: MaxCallsInWindow over an hour != %d", shard, n)
				}
			}
			if in.Fired()["GetRecords/Throttle"] != 3 {
				t.Errorf("Fired = %v", in.Fired())
			}
		})
	}
}
