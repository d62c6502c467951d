package efo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

// Every way a call or a stream can fail, with the shard's records read
// exactly once, in order, to the shard's end; and where each new
// subscription started.
func TestFaultsLoseNothing(t *testing.T) {
	tests := []struct {
		name   string
		faults []fanout.Fault
		// positions of the calls: "" for the first (TRIM_HORIZON), or the
		// index of the record the call must resume after
		after []int
		stat  func(efo.Stats) bool
	}{
		{"in use from the call", []fanout.Fault{{CallError: "ResourceInUseException"}}, []int{-1, -1},
			func(s efo.Stats) bool { return s.InUse == 1 && s.Subscriptions == 1 }},
		{"in use in the stream after a 200", []fanout.Fault{{StreamError: "ResourceInUseException"}}, []int{-1, -1},
			func(s efo.Stats) bool { return s.InUse == 1 && s.Subscriptions == 2 }},
		{"in use in the stream after records", []fanout.Fault{{AfterEvents: 2, StreamError: "ResourceInUseException"}}, []int{-1, 1},
			func(s efo.Stats) bool { return s.InUse == 1 }},
		{"limit exceeded", []fanout.Fault{{CallError: "LimitExceededException"}}, []int{-1, -1},
			func(s efo.Stats) bool { return s.Failures == 1 }},
		{"500 from the call", []fanout.Fault{{Status: 500}}, []int{-1, -1},
			func(s efo.Stats) bool { return s.Failures == 1 }},
		{"503 twice", []fanout.Fault{{Status: 503}, {Status: 503}}, []int{-1, -1, -1},
			func(s efo.Stats) bool { return s.Failures == 2 }},
		{"internal failure in the stream", []fanout.Fault{{AfterEvents: 1, StreamError: "InternalFailureException"}}, []int{-1, 0},
			func(s efo.Stats) bool { return s.Failures == 1 && s.Resubscriptions == 1 }},
		{"dropped mid-event", []fanout.Fault{{AfterEvents: 2, Drop: true}}, []int{-1, 1}, nil},
		{"dropped before any event", []fanout.Fault{{Drop: true}}, []int{-1, -1}, nil},
		{"stalled stream", []fanout.Fault{{AfterEvents: 1, Stall: true}}, []int{-1, 0},
			func(s efo.Stats) bool { return s.Failures == 1 }},
		{"call never answers", []fanout.Fault{{Hang: true}}, []int{-1, -1},
			func(s efo.Stats) bool { return s.Failures == 1 && s.Subscriptions == 1 }},
		{"clean early end", []fanout.Fault{{AfterEvents: 3, End: true}}, []int{-1, 2},
			func(s efo.Stats) bool { return s.Failures == 0 && s.Resubscriptions == 1 }},
		{"a service that repeats itself", []fanout.Fault{{AfterEvents: 2, End: true}, {Repeat: 2}}, []int{-1, 1},
			func(s efo.Stats) bool { return s.Duplicates == 2 }},
		{"all of them in a row", []fanout.Fault{{CallError: "ResourceInUseException"}, {AfterEvents: 1, Drop: true},
			{Status: 503}, {AfterEvents: 1, StreamError: "InternalFailureException"}, {AfterEvents: 1, End: true}}, []int{-1, -1, 0, 0, 1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One record per event, so that faults land between records.
			e := newStub(t, fanout.StubOptions{MaxEventRecords: 1})
			want := e.put(0, 5)
			e.stub.CloseShard(shard0, children...)
			e.stub.Fail(shard0, tt.faults...)
			var c collector
			o := e.fast(efo.TrimHorizon())
			var failures []error
			o.OnFailure = func(err error) { failures = append(failures, err) }
			r, err := efo.NewReader(e.client, o)
			if err != nil {
				t.Fatal(err)
			}
			end, err := r.Run(t.Context(), c.deliver)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.got(), want) || !slices.Equal(childIDs(end), wantChildren) {
				t.Fatalf("records %v\nwant %v\nchildren %v", c.got(), want, childIDs(end))
			}
			var got []string
			for _, call := range e.stub.Calls() {
				got = append(got, call.Position())
			}
			var wantPos []string
			for _, i := range tt.after {
				if i < 0 {
					wantPos = append(wantPos, "TRIM_HORIZON")
				} else {
					wantPos = append(wantPos, "AFTER_SEQUENCE_NUMBER "+want[i])
				}
			}
			if !slices.Equal(got, wantPos) {
				t.Fatalf("calls from\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(wantPos, "\n"))
			}
			if tt.stat != nil && !tt.stat(r.Stats()) {
				t.Fatalf("stats %+v", r.Stats())
			}
			// Every failure is reported, a clean end is not.
			if st := r.Stats(); len(failures) != st.Failures+st.InUse {
				t.Fatalf("OnFailure called %d times (%v) for stats %+v", len(failures), failures, st)
			}
		})
	}
}

func TestInUsePersists(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault fanout.Fault
	}{
		{"from the call", fanout.Fault{CallError: "ResourceInUseException"}},
		{"in the stream", fanout.Fault{StreamError: "ResourceInUseException"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newStub(t, fanout.StubOptions{})
			for range 200 {
				e.stub.Fail(shard0, tt.fault)
			}
			o := e.fast(efo.TrimHorizon())
			o.InUseTimeout = 300 * time.Millisecond
			_, err := run(t, e.client, o, &collector{})
			var iue *efo.InUseError
			if !errors.As(err, &iue) || !errors.Is(err, efo.ErrInUse) {
				t.Fatalf("error %v, want an *InUseError", err)
			}
			if iue.Consumer != "tester" || iue.ShardID != shard0 || iue.For < o.InUseTimeout {
				t.Fatalf("%+v", iue)
			}
			msg := err.Error()
			for _, w := range []string{"consumer tester", "shard " + shard0, "two tails"} {
				if !strings.Contains(msg, w) {
					t.Fatalf("%q does not say %q", msg, w)
				}
			}
			var riu *types.ResourceInUseException
			if !errors.As(iue.Err, &riu) {
				t.Fatalf("Err %v", iue.Err)
			}
		})
	}
}

// Two readers with one consumer and shard take the subscription from each
// other (as AWS does after 5 s); one of them says so and stops.
func TestTwoReadersOneConsumer(t *testing.T) {
	e := newStub(t, fanout.StubOptions{InUseWindow: 50 * time.Millisecond})
	e.put(0, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	pacer := efo.NewPacer(30 * time.Millisecond) // one process: one pacer
	for range 2 {
		wg.Go(func() {
			o := e.fast(efo.TrimHorizon())
			o.Pacer = pacer
			o.InUseTimeout = 500 * time.Millisecond
			r, err := efo.NewReader(e.client, o)
			if err != nil {
				errs <- err
				return
			}
			_, err = r.Run(ctx, (&collector{}).deliver)
			errs <- err
		})
	}
	first := <-errs
	cancel()
	wg.Wait()
	if !errors.Is(first, efo.ErrInUse) {
		t.Fatalf("first error %v, want ErrInUse", first)
	}
	if e.stub.Stats().Takeovers == 0 {
		t.Fatal("no takeover happened")
	}
}

func TestFatalErrors(t *testing.T) {
	var (
		nf *types.ResourceNotFoundException
		ia *types.InvalidArgumentException
		ad *types.AccessDeniedException
	)
	for _, tt := range []struct {
		name  string
		fault fanout.Fault
		is    func(error) bool
	}{
		{"not found from the call", fanout.Fault{CallError: "ResourceNotFoundException"}, func(err error) bool { return errors.As(err, &nf) }},
		{"not found in the stream", fanout.Fault{AfterEvents: 1, StreamError: "ResourceNotFoundException"}, func(err error) bool { return errors.As(err, &nf) }},
		{"invalid argument", fanout.Fault{CallError: "InvalidArgumentException"}, func(err error) bool { return errors.As(err, &ia) }},
		{"access denied", fanout.Fault{CallError: "AccessDeniedException"}, func(err error) bool { return errors.As(err, &ad) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newStub(t, fanout.StubOptions{})
			e.put(0, 2)
			e.stub.Fail(shard0, tt.fault)
			_, err := run(t, e.client, e.fast(efo.TrimHorizon()), &collector{})
			if !tt.is(err) || !strings.Contains(err.Error(), "shard "+shard0) || !strings.Contains(err.Error(), "consumer tester") {
				t.Fatalf("error %v", err)
			}
			if n := len(e.stub.Calls()); n != 1 {
				t.Fatalf("%d calls; a fatal error is not retried", n)
			}
		})
	}
}

func TestGivesUpAfterMaxFailures(t *testing.T) {
	e := newStub(t, fanout.StubOptions{})
	for range 20 {
		e.stub.Fail(shard0, fanout.Fault{Status: 503})
	}
	o := e.fast(efo.TrimHorizon())
	o.MaxFailures = 3
	_, err := run(t, e.client, o, &collector{})
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != 503 || !strings.Contains(err.Error(), "failed 4 times in a row") {
		t.Fatalf("error %v", err)
	}
	if n := len(e.stub.Calls()); n != 4 {
		t.Fatalf("%d calls, want 4", n)
	}
}

// Progress resets the count: failures between successful events never add
// up to MaxFailures.
func TestFailuresBetweenProgressDoNotAddUp(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 1})
	want := e.put(0, 6)
	e.stub.CloseShard(shard0, children...)
	for range 5 {
		e.stub.Fail(shard0, fanout.Fault{Status: 503}, fanout.Fault{AfterEvents: 1, Drop: true})
	}
	o := e.fast(efo.TrimHorizon())
	o.MaxFailures = 2
	var c collector
	if _, err := run(t, e.client, o, &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.got(), want) {
		t.Fatalf("records %v", c.got())
	}
}

var errStop = errors.New("stop here")

func TestDeliverErrorStops(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 1})
	want := e.put(0, 5)
	var c collector
	n := 0
	c.hook = func(b efo.Batch) error {
		if n++; n == 3 {
			return errStop
		}
		return nil
	}
	_, err := run(t, e.client, e.fast(efo.TrimHorizon()), &c)
	if !errors.Is(err, errStop) {
		t.Fatalf("error %v", err)
	}
	if !slices.Equal(c.got(), want[:2]) || len(e.stub.Calls()) != 1 {
		t.Fatalf("records %v, %d calls", c.got(), len(e.stub.Calls()))
	}
}

func TestContextEnds(t *testing.T) {
	e := newStub(t, fanout.StubOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	var c collector
	c.hook = func(efo.Batch) error { cancel(); return nil }
	r, err := efo.NewReader(e.client, e.fast(efo.TrimHorizon()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, c.deliver); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
}

// A caller that takes its time slows the reading and loses nothing, even
// when a subscription's deadline passes while it holds a batch: what was
// written meanwhile comes in the next subscription.
func TestSlowCallerBackPressure(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 2})
	want := e.put(0, 4)
	o := e.fast(efo.TrimHorizon())
	o.SubscriptionTimeout = 100 * time.Millisecond
	var c collector
	var once sync.Once
	c.hook = func(efo.Batch) error {
		once.Do(func() {
			time.Sleep(150 * time.Millisecond)
			want = append(want, e.put(4, 3)...)
			e.stub.CloseShard(shard0, children...)
		})
		return nil
	}
	r, err := efo.NewReader(e.client, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(t.Context(), c.deliver); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.got(), want) {
		t.Fatalf("records %v\nwant %v", c.got(), want)
	}
	if r.Stats().Resubscriptions == 0 {
		t.Fatal("no new subscription after the deadline: the test tests nothing")
	}
}
