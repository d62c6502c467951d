package tail

import (
	"context"
	"sync"
)

// Memory of the pages in flight. A reader holds a page from its GetRecords
// call until the page is delivered: the response body, the decoded records
// and the converted batch, about 2.6 times the payload (a full page of 1 KiB
// records is 10 MiB of payload). Without a bound, a tail starting on a
// backlogged stream fetched a full page on every shard at once (50 shards:
// 2 GiB resident), and readers waiting to deliver to a slow stdout each held
// one. So readers reserve, before each call, as many bytes as their
// previous page held (firstPageWeight for the first call) from a budget of
// pageBudgetBytes shared by the tail; small pages (an idle shard's) never
// wait. Waiting delays a call, it never brings two calls closer: the pacer
// counts from the call itself.
//
// A subscribed reader (--efo) gets its events pushed: it reserves an
// event's payload when the event arrives, and when there is no room it
// closes the subscription instead of holding the event (efo.ErrNoRoom),
// waits for room like a polling reader, and subscribes again from just
// before that event. So a stalled stdout stops the subscriptions' intake,
// and the memory held stays within the one budget, whatever the shard
// count and the kind of reader.
//
// Waits happen only before a call, never under its deadline: a page that
// turns out bigger than its reservation is taken in full once its
// response arrives (the budget may run over by the pages on the wire),
// and the next calls wait until it is delivered. So a slow consumer slows
// the reading down and never makes a call fail or a fetched page go to
// waste.
const (
	pageBudgetBytes = 32 << 20
	firstPageWeight = 2 << 20
	smallPage       = 256 << 10 // reserved, but never waits
)

// Calls in flight. Readers of idle shards all poll once per PollInterval,
// and those started together stay in step: with thousands of shards that
// was thousands of calls at the same moment, each on its own HTTP
// connection with its goroutines and buffers (10,000 shards: 746 MiB
// resident). maxCallsInFlight bounds them; at ~20 ms a call that is still
// over 10,000 calls a second. A call slot is taken after the page budget
// (a reader waiting for room holds none) and given back when the call
// returns.
const maxCallsInFlight = 256

type callSlots chan struct{}

func (c callSlots) acquire(ctx context.Context) error {
	select {
	case c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c callSlots) release() { <-c }

// pageTicket is a reader's reservation. The decoder, once it has a
// response's Content-Length and before it reads the body, grows the
// reservation to the page's size (the first page of a backlogged shard is
// much bigger than firstPageWeight), without waiting.
type pageTicket struct {
	budget *pageBudget
	held   int64
}

func (t *pageTicket) hold(ctx context.Context, n int64) error {
	if err := t.budget.acquire(ctx, n); err != nil {
		return err
	}
	t.held = n
	return nil
}

// tryHold reserves n bytes if there is room now, without waiting; a
// reservation held already (see hold) is kept and grown to n.
func (t *pageTicket) tryHold(n int64) bool {
	if t.held > 0 {
		t.grow(n)
		return true
	}
	if !t.budget.tryAcquire(n) {
		return false
	}
	t.held = n
	return true
}

func (t *pageTicket) drop() {
	t.budget.release(t.held)
	t.held = 0
}

// grow makes the reservation at least n bytes, at once: the page is on
// its way, and waiting here would be under the call's deadline.
func (t *pageTicket) grow(n int64) {
	if n <= t.held || n <= smallPage {
		return
	}
	t.budget.take(n - t.held)
	t.held = n
}

// pageBudget is a weighted semaphore with first-come-first-served waiters.
type pageBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiters []*pageWaiter
}

type pageWaiter struct {
	n     int64
	ready chan struct{}
}

func newPageBudget(limit int64) *pageBudget { return &pageBudget{limit: limit} }

// fits: a request is granted when it fits, or when nothing is held (so a
// page bigger than the whole budget still goes, alone).
func (b *pageBudget) fits(n int64) bool { return b.used+n <= b.limit || b.used == 0 }

// acquire reserves n bytes, waiting for room unless n is small.
func (b *pageBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if n <= smallPage || (len(b.waiters) == 0 && b.fits(n)) {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &pageWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= n
		default:
			for i, x := range b.waiters {
				if x == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
		}
		b.grant()
		return ctx.Err()
	}
}

// tryAcquire reserves n bytes when they fit now and nobody waits; unlike
// acquire, a small n is no exception (see eventWeight).
func (b *pageBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) == 0 && b.fits(n) {
		b.used += n
		return true
	}
	return false
}

// take reserves n bytes without waiting, even past the limit.
func (b *pageBudget) take(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

func (b *pageBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant lets waiters through in order while they fit.
func (b *pageBudget) grant() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n) {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}
