package efo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

// Behind a slow output every subscription delivers one event and is then
// paused (ErrNoRoom); room comes back quickly, and the service refuses the
// next subscription once with ResourceInUseException, as it does within a
// few seconds of the last. Each subscription makes progress, so the run of
// refusals starts again after each: the reader must not give up as if
// another tail held the consumer.
func TestPausedSubscriptionsThatProgressAreNotInUse(t *testing.T) {
	e := newStub(t, fanout.StubOptions{MaxEventRecords: 1, InUseWindow: 150 * time.Millisecond})
	e.put(0, 400)
	// The real service refuses a new subscription within 5 s of the last
	// successful one (even closed): here, every resubscription after a
	// pause is refused once.
	for range 200 {
		e.stub.Fail(shard0, fanout.Fault{}, fanout.Fault{CallError: "ResourceInUseException"})
	}
	var mu sync.Mutex
	sub, accepted := -1, 0
	c := &collector{hook: func(b efo.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if len(b.Records) == 0 {
			return nil
		}
		if b.Subscription != sub {
			sub, accepted = b.Subscription, 0
		}
		if accepted >= 1 {
			return efo.ErrNoRoom
		}
		accepted++
		return nil
	}}
	o := e.fast(efo.TrimHorizon())
	o.InUseTimeout = 600 * time.Millisecond
	o.MaxFailures = 1 << 30
	o.AwaitRoom = func(ctx context.Context) error { time.Sleep(10 * time.Millisecond); return nil }
	r, err := efo.NewReader(e.client, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	_, err = r.Run(ctx, c.deliver)
	st := r.Stats()
	var iue *efo.InUseError
	if errors.As(err, &iue) || !errors.Is(err, context.DeadlineExceeded) && err != nil {
		t.Fatalf("gave up with InUseError after %d records delivered over %d subscriptions: %v", len(c.got()), st.Subscriptions, err)
	}
}
