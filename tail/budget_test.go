package tail

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
	"github.com/kinesis-shards/kinesis-shards/tail/internal/getrecords"
)

// The page budget bounds the memory of the pages readers hold (reader.go).
// Its tests live here with the benchmarks that showed the need.

func granted(w <-chan error) bool {
	select {
	case <-w:
		return true
	case <-time.After(20 * time.Millisecond):
		return false
	}
}

func acquireAsync(b *pageBudget, ctx context.Context, n int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.acquire(ctx, n) }()
	return ch
}

func TestPageBudget(t *testing.T) {
	ctx := context.Background()
	const mib = 1 << 20
	b := newPageBudget(10 * mib)
	if err := b.acquire(ctx, 6*mib); err != nil {
		t.Fatal(err)
	}
	big := acquireAsync(b, ctx, 6*mib) // does not fit: waits
	if granted(big) {
		t.Fatal("6+6 MiB granted with a 10 MiB budget")
	}
	time.Sleep(5 * time.Millisecond)
	later := acquireAsync(b, ctx, 3*mib) // would fit, but waits its turn
	if granted(later) {
		t.Fatal("a later waiter overtook the first")
	}
	// Small pages never wait.
	if err := b.acquire(ctx, smallPage); err != nil {
		t.Fatal(err)
	}
	b.release(smallPage)
	b.release(6 * mib)
	if !granted(big) || !granted(later) {
		t.Fatal("waiters not granted after release")
	}
	b.release(6 * mib)
	b.release(3 * mib)
	// A page bigger than the whole budget goes when nothing is held.
	if err := b.acquire(ctx, 20*mib); err != nil {
		t.Fatal(err)
	}
	b.release(20 * mib)
	if b.used != 0 || len(b.waiters) != 0 {
		t.Fatalf("used %d, %d waiters", b.used, len(b.waiters))
	}

	// A cancelled waiter leaves, and lets the next one through.
	if err := b.acquire(ctx, 8*mib); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := acquireAsync(b, cctx, 9*mib)
	time.Sleep(5 * time.Millisecond)
	next := acquireAsync(b, ctx, 2*mib)
	if granted(next) {
		t.Fatal("overtook a waiter")
	}
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("cancelled acquire succeeded")
	}
	if !granted(next) {
		t.Fatal("the next waiter was not let through after a cancel")
	}
	b.release(8 * mib)
	b.release(2 * mib)
	if b.used != 0 || len(b.waiters) != 0 {
		t.Fatalf("used %d, %d waiters", b.used, len(b.waiters))
	}
}

// Under load the bytes held stay within the budget, and every acquire is
// granted in the end.
func TestPageBudgetConcurrent(t *testing.T) {
	const limit = 1 << 20
	b := newPageBudget(limit)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				n := int64(smallPage + 1 + (g*7919+i*104729)%(300<<10))
				if err := b.acquire(context.Background(), n); err != nil {
					t.Error(err)
					return
				}
				cur := inUse.Add(n)
				for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
				}
				time.Sleep(time.Microsecond)
				inUse.Add(-n)
				b.release(n)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("peak %d over the budget", p)
	}
	if b.used != 0 || len(b.waiters) != 0 {
		t.Fatalf("used %d, %d waiters", b.used, len(b.waiters))
	}
}

// The decoder grows a reader's reservation to the size of the response
// before it reads the body, without waiting (a wait there would be under
// the call's deadline, and a page already fetched would be lost to it):
// the budget runs over, and the next reservation waits until the page is
// given back.
func TestPageTicketGrows(t *testing.T) {
	s := startStubT(t, 1024, 1000) // a 1 MiB page
	body := s.PageBody()
	c := wirestub.BodyClient(200, body)
	b := newPageBudget(2 << 20)
	other := &pageTicket{budget: b}
	if err := other.hold(context.Background(), 3<<19); err != nil { // 1.5 MiB held elsewhere
		t.Fatal(err)
	}
	ticket := &pageTicket{budget: b}
	if err := ticket.hold(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// A deadline far shorter than the wait for room would be.
	ctx, cancel := context.WithTimeout(getrecords.WithReserve(context.Background(), ticket.grow), 5*time.Second)
	defer cancel()
	out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}, awscall.Once, getrecords.Option)
	if err != nil {
		t.Fatalf("GetRecords with the budget full: %v", err)
	}
	if len(out.Records) != 1000 {
		t.Fatalf("%d records, want 1000", len(out.Records))
	}
	want := int64(len(body)) / 4 * 3
	if ticket.held != want || b.used != 3<<19+want {
		t.Fatalf("held %d, used %d; want %d, %d", ticket.held, b.used, want, 3<<19+want)
	}
	// Over the limit: the next reservation waits until the page is given
	// back.
	next := &pageTicket{budget: b}
	got := make(chan error, 1)
	go func() { got <- next.hold(context.Background(), 1<<19) }()
	select {
	case err := <-got:
		t.Fatalf("reserved past the limit (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	ticket.drop()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	next.drop()
	other.drop()
	if b.used != 0 {
		t.Fatalf("used %d", b.used)
	}
}

func startStubT(t *testing.T, size, perPage int) *wirestub.Server {
	s, err := wirestub.Start(wirestub.Options{RecordSize: size, RecordsPerPage: perPage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
