package reshard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/hotstub"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// fakeClock is a clock that only sleeps move.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return ctx.Err()
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// hotStream starts a hot-shard stub on clock c and returns it with a
// client and its open shards.
func hotStream(t *testing.T, c *fakeClock, o hotstub.Options) (*hotstub.Server, *kinesis.Client, []*lineage.Shard) {
	t.Helper()
	o.Now = c.Now
	s, err := hotstub.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// A fresh connection per call: now and then a reused one fails as it
	// is read ("use of closed network connection"), which the reader
	// retries as a passing failure (TestSampleTrafficFailures) but which
	// would add an attempt to the exact counts these tests assert.
	api := kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	g, err := lineage.Load(t.Context(), api, lineage.ListOptions{StreamName: "hot"})
	if err != nil {
		t.Fatal(err)
	}
	return s, api, g.Open()
}

var hotRef = kstream.Ref{Name: "hot"}

func TestReadWindowReadsAQuietWindowExactly(t *testing.T) {
	c := &fakeClock{now: t0}
	s, api, shards := hotStream(t, c, hotstub.Options{Start: t0.Add(-2 * time.Minute), Rate: []float64{100}, RecordSize: 100})
	ws, err := ReadWindows(t.Context(), api, hotRef, shards, WindowOptions{From: t0.Add(-time.Minute), Until: t0, MaxRecords: 10000, Now: c.Now, Sleep: c.Sleep, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	// 100 records a second for the minute, both ends included: records
	// 6000..12000, in order.
	if len(w.Records) != 6001 || w.Sampled || w.Estimated != 6001 || w.Covered != time.Minute || w.Stopped != "" || w.Throttled != 0 {
		t.Fatalf("%d records, sampled %v, estimated %v, covered %v, stopped %q, throttled %d", len(w.Records), w.Sampled, w.Estimated, w.Covered, w.Stopped, w.Throttled)
	}
	for i, r := range w.Records {
		if r.PartitionKey != s.Key(0, 6000+i) || !r.Arrival.Equal(s.Arrival(0, 6000+i)) || r.Weight != 1 || r.Bytes != 100+len(r.PartitionKey) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	// After the first call the calls grow with the shard's rate instead of
	// a slice's share at a time: a handful, not 50.
	if st := s.Stats()[0]; st.Throttled != 0 || st.GetRecords > 6 || st.Iterators != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReadWindowSamplesEvenly(t *testing.T) {
	c := &fakeClock{now: t0}
	s, api, shards := hotStream(t, c, hotstub.Options{Start: t0.Add(-10 * time.Minute)}) // 1,000 records of 1,000 bytes a second
	ws, err := ReadWindows(t.Context(), api, hotRef, shards, WindowOptions{From: t0.Add(-time.Minute), Until: t0, MaxRecords: 5000, Now: c.Now, Sleep: c.Sleep, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	truth := s.RecordsBetween(0, t0.Add(-time.Minute), t0)
	// 50 slices of 1.2 s, 100 records read from the start of each: each
	// stands for the 1,200 of its slice.
	if len(w.Records) != 5000 || !w.Sampled || w.Estimated != float64(truth) || w.Covered != time.Minute || w.SampledShare() != 5000.0/60000 {
		t.Fatalf("%d records, sampled %v, estimated %v of %d, covered %v", len(w.Records), w.Sampled, w.Estimated, truth, w.Covered)
	}
	for sl := range 50 {
		start := t0.Add(-time.Minute + time.Duration(sl)*1200*time.Millisecond)
		r := w.Records[sl*100]
		if !r.Arrival.Equal(start) || r.Weight != 12 || !w.Records[sl*100+99].Arrival.Equal(start.Add(99*time.Millisecond)) {
			t.Fatalf("slice %d starts with %+v", sl, r)
		}
	}
	// Each call asked for what its slice still needed (plus the one record
	// that shows where the sample ends): never a big response.
	st := s.Stats()[0]
	recordBytes := 1000 + len(s.Key(0, 0))
	if st.Throttled != 0 || st.MaxResponseBytes > 101*(recordBytes+2) || slices.Max(st.Limits) > 101 || st.Iterators != 50 {
		t.Fatalf("stats: %d calls, %d throttled, largest response %d bytes, limits up to %d, %d iterators", st.GetRecords, st.Throttled, st.MaxResponseBytes, slices.Max(st.Limits), st.Iterators)
	}
}

// A shard written at about 1 MiB/s: the sample the old sampler gave up
// on (10,000 records a call: a 10 MiB response, then refused for 5 s).
func hotShard(t *testing.T, c *fakeClock) (*hotstub.Server, *kinesis.Client, []*lineage.Shard) {
	return hotStream(t, c, hotstub.Options{Start: t0.Add(-time.Hour), Rate: []float64{1000}, RecordSize: 1000})
}

func TestSampleTrafficSurvivesAHotShard(t *testing.T) {
	c := &fakeClock{now: t0}
	s, api, shards := hotShard(t, c)
	sample, err := SampleTraffic(t.Context(), api, hotRef, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	ss := sample.Shards[0]
	st := s.Stats()[0]
	if ss.Records != 1000 || !ss.Truncated || ss.Stopped != "" || st.Throttled != 0 || st.MaxResponseBytes > 2<<20 {
		t.Fatalf("%d records, truncated %v, stopped %q; stub: %d throttled, largest response %d", ss.Records, ss.Truncated, ss.Stopped, st.Throttled, st.MaxResponseBytes)
	}
	// The estimate of the window's records: 1,000 a second for 5 minutes.
	if ss.Estimated != 300000 || ss.Span != 5*time.Minute {
		t.Fatalf("estimated %v over %v", ss.Estimated, ss.Span)
	}
}

func TestSampleTrafficWaitsOutAnotherConsumersBigRead(t *testing.T) {
	c := &fakeClock{now: t0}
	s, api, shards := hotShard(t, c)
	// Another consumer has just read 10 MiB: the shard refuses every call
	// for 5 s, and each refused call for a second after it.
	s.Block(0, t0.Add(5*time.Second))
	sample, err := SampleTraffic(t.Context(), api, hotRef, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ss := sample.Shards[0]
	st := s.Stats()[0]
	if ss.Records != 1000 || ss.Stopped != "" || st.Throttled == 0 || ss.Throttled != st.Throttled {
		t.Fatalf("%d records, stopped %q, throttled %d (stub %d)", ss.Records, ss.Stopped, ss.Throttled, st.Throttled)
	}
	// The waits after throttles grow: 1-2 s, then 2-4 s, ...
	var waits []time.Duration
	for _, d := range c.sleeps {
		if d >= time.Second {
			waits = append(waits, d)
		}
	}
	if len(waits) != st.Throttled {
		t.Fatalf("waits %v for %d throttles", waits, st.Throttled)
	}
	for i, d := range waits {
		lo := time.Second << i
		if d < min(lo, 5*time.Second) || d > min(2*lo, 10*time.Second) {
			t.Fatalf("wait %d: %v (waits %v)", i+1, d, waits)
		}
	}
}

func TestSampleTrafficBudget(t *testing.T) {
	t.Run("nothing sampled in time is an error", func(t *testing.T) {
		c := &fakeClock{now: t0}
		s, api, shards := hotShard(t, c)
		s.Block(0, t0.Add(time.Hour))
		_, err := SampleTraffic(t.Context(), api, hotRef, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep, Seed: 1})
		st := s.Stats()[0]
		want := fmt.Sprintf("too few records sampled in time: only 0 records of shard shardId-000000000000 could be sampled (its 20s time budget ran out; the shard refused %d calls: other consumers are reading it hard); try again later, or with a longer --sample-window", st.Throttled)
		if !errors.Is(err, ErrSampleShort) || err.Error() != want || st.Throttled < 3 {
			t.Fatalf("%v (throttled %d)", err, st.Throttled)
		}
		if c.now.Sub(t0) > 21*time.Second {
			t.Fatalf("took %v", c.now.Sub(t0))
		}
	})
	t.Run("a partial sample goes on with what it has", func(t *testing.T) {
		c := &fakeClock{now: t0}
		_, api, shards := hotShard(t, c)
		sample, err := SampleTraffic(t.Context(), api, hotRef, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep, MaxCalls: 3, MinRecords: 100})
		if err != nil {
			t.Fatal(err)
		}
		// Slice 0 (30 s) takes two calls (100 records, then the one that
		// shows the cut), slice 1 one: two slices of ten were sampled.
		ss := sample.Shards[0]
		if ss.Records != 200 || ss.Span != time.Minute || ss.Estimated != 60000 || ss.Stopped != "the limit of 3 GetRecords calls was reached" {
			t.Fatalf("%d records over %v, estimated %v, stopped %q", ss.Records, ss.Span, ss.Estimated, ss.Stopped)
		}
		want := []string{"the sample of shard shardId-000000000000 stopped early (the limit of 3 GetRecords calls was reached): going on with its 200 records, which cover 1m0s of the window"}
		if !slices.Equal(sample.Short(), want) {
			t.Fatalf("%q", sample.Short())
		}
		// Below MinRecords it would be an error.
		_, err = SampleTraffic(t.Context(), api, hotRef, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep, MaxCalls: 3, MinRecords: 201})
		if !errors.Is(err, ErrSampleShort) {
			t.Fatal(err)
		}
	})
}

// fakeStream puts recent records on a one-shard fake: 50 before the
// window, then n within it, a millisecond apart, keys k-0 .. k-(n-1).
func fakeStream(t *testing.T, c *fakeClock, n int) (*fake.Fake, []*lineage.Shard, []string) {
	fk := fake.New()
	fk.AddStream("s", 1)
	arrival := c.now.Add(-10 * time.Minute)
	fk.Now = func() time.Time { arrival = arrival.Add(time.Millisecond); return arrival }
	for i := range 50 {
		fk.Put("s", fmt.Sprintf("old-%d", i), []byte("x"))
	}
	arrival = c.now.Add(-2 * time.Minute)
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("k-%d", i))
		fk.Put("s", keys[i], []byte("xy"))
	}
	g, err := lineage.Load(context.Background(), fk, lineage.ListOptions{StreamName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return fk, g.Open(), keys
}

// sortedHashes are the hashes of keys, sorted as a sample holds them.
func sortedHashes(keys []string) []lineage.HashKey {
	var out []lineage.HashKey
	for _, k := range keys {
		out = append(out, lineage.PartitionKeyHash(k))
	}
	slices.SortFunc(out, lineage.HashKey.Cmp)
	return out
}

func TestSampleTrafficExactWhenTheWindowHoldsLess(t *testing.T) {
	c := &fakeClock{now: t0}
	fk, shards, keys := fakeStream(t, c, 700)
	var onShard []string
	s, err := SampleTraffic(context.Background(), fk, kstream.Ref{Name: "s"}, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep,
		OnShard: func(s ShardSample) { onShard = append(onShard, s.ShardID) }})
	if err != nil {
		t.Fatal(err)
	}
	want := sortedHashes(keys)
	ss := s.Shards[0]
	if !slices.Equal(ss.Hashes, want) || ss.Truncated || ss.Span != 5*time.Minute || ss.Bytes != 700*2+len(strings.Join(keys, "")) ||
		!slices.Equal(onShard, []string{sid(0)}) || s.Records != 700 || s.Window != 5*time.Minute {
		t.Fatalf("%d records, truncated %v, span %v, bytes %d", ss.Records, ss.Truncated, ss.Span, ss.Bytes)
	}
}

func TestSampleTrafficFailures(t *testing.T) {
	c := &fakeClock{now: t0}
	fk, shards, keys := fakeStream(t, c, 300)
	calls := 0
	fk.Hook = func(op string, in any) error {
		if op != "GetRecords" {
			return nil
		}
		calls++
		switch calls {
		case 2:
			return &types.InternalFailureException{Message: aws.String("boom")}
		case 3:
			return &types.ExpiredIteratorException{Message: aws.String("expired")}
		}
		return nil
	}
	// A passing failure and an expired iterator lose and repeat nothing.
	s, err := SampleTraffic(context.Background(), fk, kstream.Ref{Name: "s"}, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if ss := s.Shards[0]; ss.Records != len(keys) || ss.Calls != calls {
		t.Fatalf("%d records of %d, %d calls of %d", ss.Records, len(keys), ss.Calls, calls)
	}
	// A call that fails for good ends the sample with the shard's name.
	fk.Hook = func(op string, in any) error {
		if op == "GetRecords" {
			return &types.AccessDeniedException{Message: aws.String("no")}
		}
		return nil
	}
	_, err = SampleTraffic(context.Background(), fk, kstream.Ref{Name: "s"}, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep})
	var ade *types.AccessDeniedException
	if !errors.As(err, &ade) || err.Error() != "read records of shard shardId-000000000000: get records: AccessDeniedException: no" {
		t.Fatal(err)
	}
}

func TestSampleTrafficFallsBackToTrimHorizon(t *testing.T) {
	c := &fakeClock{now: t0}
	fk, shards, keys := fakeStream(t, c, 20)
	var iterTypes []types.ShardIteratorType
	fk.Hook = func(op string, in any) error {
		if op == "GetShardIterator" {
			it := in.(*kinesis.GetShardIteratorInput).ShardIteratorType
			iterTypes = append(iterTypes, it)
			if it == types.ShardIteratorTypeAtTimestamp {
				time.Sleep(100 * time.Millisecond) // kinesalite: no answer
			}
		}
		return nil
	}
	s, err := SampleTraffic(context.Background(), fk, kstream.Ref{Name: "s"}, shards, SampleOptions{Now: c.Now, Sleep: c.Sleep, IteratorTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := sortedHashes(keys)
	// The 50 records older than the window are read and left out.
	if ss := s.Shards[0]; !slices.Equal(ss.Hashes, want) || ss.Truncated || ss.Span != 5*time.Minute ||
		!slices.Equal(iterTypes, []types.ShardIteratorType{types.ShardIteratorTypeAtTimestamp, types.ShardIteratorTypeTrimHorizon}) {
		t.Fatalf("%d records, span %v, iterators %v", ss.Records, ss.Span, iterTypes)
	}
}

func TestReadWindowNeverCutsABurst(t *testing.T) {
	c := &fakeClock{now: t0}
	fk := fake.New()
	fk.AddStream("s", 1)
	// 20 bursts of 30 records that arrive together (PutRecords batches),
	// a tenth of a second apart: 300 records a second for 2 s.
	var at time.Time
	fk.Now = func() time.Time { return at }
	from := t0.Add(-2 * time.Second)
	for b := range 20 {
		at = from.Add(time.Duration(b) * 100 * time.Millisecond)
		for i := range 30 {
			fk.Put("s", fmt.Sprintf("k-%d-%d", b, i), []byte("x"))
		}
	}
	g, _ := lineage.Load(context.Background(), fk, lineage.ListOptions{StreamName: "s"})
	ws, err := ReadWindows(t.Context(), fk, kstream.Ref{Name: "s"}, g.Open(), WindowOptions{From: from, Until: t0, MaxRecords: 200, Now: c.Now, Sleep: c.Sleep, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	// Two slices of 1 s. The first may take 100: its fourth burst is taken
	// whole (120 records) and the fifth is where its sample ends, so they
	// stand for 0.4 s, 2.5 each. The second may take the 80 left: three
	// bursts, 0.3 s. 600 in all, the truth.
	if len(w.Records) != 210 || !w.Sampled || math.Abs(w.Estimated-600) > 1e-9 || w.Records[0].Weight != 2.5 || w.Records[209].Weight != 1000.0/300 || fk.Calls("GetRecords") > 10 {
		t.Fatalf("%d records, sampled %v, estimated %v, weight %v, %d calls", len(w.Records), w.Sampled, w.Estimated, w.Records[0].Weight, fk.Calls("GetRecords"))
	}
}
