package dashboard

import (
	"slices"
	"testing"
	"time"
)

// The sampling reader is a tail from the tip of every open shard: it keeps
// tail's pacing, feeds the figures and the record pane, and p stops every
// GetRecords call until it is pressed again.
func TestDashboardSamplingReader(t *testing.T) {
	f := newFake(t)
	o := testOptions(f, "orders")
	o.NoReader = false
	o.PollInterval = 300 * time.Millisecond
	d := newDriver(t, o, 120, 40)
	d.loaded()
	if !d.m.reader.reading {
		t.Fatal("no reader after the first listing")
	}
	// Every open shard is polled; closed shards never are.
	d.until("a poll of every open shard", func() bool { return len(d.m.reader.figs.shards) == 3 })
	for id := range d.m.reader.figs.shards {
		if !slices.Contains(f.OpenShards("orders"), id) {
			t.Fatalf("the reader polled %s, which is closed", id)
		}
	}
	// Records written now reach the pane (the reader started at the tip,
	// so the older ones do not).
	putKeys(f, "orders", 12)
	d.until("the records", func() bool { return d.m.records.seen == 12 })
	d.send(figureTickMsg{})
	d.mustContain("12 seen", "k0")

	// Pacing: never two GetRecords on a shard closer than 200 ms (five a
	// second), and a caught-up shard about once per poll interval.
	time.Sleep(time.Second)
	d.settle()
	for shard, times := range f.GetRecordsTimes() {
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < 190*time.Millisecond {
				t.Fatalf("shard %s: GetRecords %s apart", shard, gap)
			}
		}
		if span := times[len(times)-1].Sub(times[0]); len(times) > int(span/(250*time.Millisecond))+2 {
			t.Fatalf("shard %s: %d GetRecords in %s with a 300ms poll interval", shard, len(times), span)
		}
	}

	// p: no calls at all while paused.
	d.keys("p")
	if d.m.reader.reading || !d.m.reader.paused {
		t.Fatalf("after p: reading %v, paused %v", d.m.reader.reading, d.m.reader.paused)
	}
	d.mustContain("paused (p resumes)", "p resume")
	time.Sleep(400 * time.Millisecond) // a call in flight ends
	before := f.Calls("GetRecords")
	time.Sleep(time.Second)
	d.settle()
	if n := f.Calls("GetRecords") - before; n != 0 {
		t.Fatalf("%d GetRecords calls while paused", n)
	}
	// p again: a new reader from the tip.
	d.keys("p")
	if !d.m.reader.reading || d.m.reader.paused {
		t.Fatalf("after p p: reading %v, paused %v", d.m.reader.reading, d.m.reader.paused)
	}
	d.until("polls again", func() bool { return f.Calls("GetRecords") > before })
	putKeys(f, "orders", 3)
	d.until("the new records", func() bool { return d.m.records.seen == 15 })
}

// --paused: no GetRecords call until p, then a reader from the tip.
func TestDashboardStartsPaused(t *testing.T) {
	f := newFake(t)
	o := testOptions(f, "orders")
	o.NoReader = false
	o.Paused = true
	o.PollInterval = 300 * time.Millisecond
	d := newDriver(t, o, 120, 40)
	d.loaded()
	if d.m.reader.reading || !d.m.reader.paused {
		t.Fatalf("reading %v, paused %v", d.m.reader.reading, d.m.reader.paused)
	}
	d.mustContain("paused (p resumes)")
	time.Sleep(700 * time.Millisecond)
	d.settle()
	if n := f.Calls("GetRecords") + f.Calls("GetShardIterator"); n != 0 {
		t.Fatalf("%d reads while started paused", n)
	}
	d.keys("p")
	if !d.m.reader.reading || d.m.reader.paused {
		t.Fatalf("after p: reading %v, paused %v", d.m.reader.reading, d.m.reader.paused)
	}
	d.until("a poll of every open shard", func() bool { return len(d.m.reader.figs.shards) == 3 })
	putKeys(f, "orders", 4)
	d.until("the records", func() bool { return d.m.records.seen == 4 })
}
