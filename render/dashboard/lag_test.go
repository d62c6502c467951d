package dashboard

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// lagCells is the LAG cell (the last column) of each shard's row.
func lagCells(t *testing.T, d *driver) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, row := range []struct{ id, prefix string }{
		{"0", "0      open"}, {"3", "3      open"}, {"5", "5      open"},
		{"1", "1      closed"}, {"2", "2      closed"}, {"4", "4      closed"},
	} {
		f := strings.Fields(lineOf(t, d.screen(), row.prefix))
		out[row.id] = f[len(f)-1]
	}
	return out
}

// The LAG column: a consumer's standing on each shard, read with the
// listing through Backend.Lag and measured on the (in-memory) service; a
// refresh reads it again; a failure is a warning that keeps the table.
func TestDashboardLag(t *testing.T) {
	f := newFake(t)
	// Three records on shard 0, one on shard 3.
	var seqs = map[string][]string{}
	for i := 0; len(seqs["shardId-000000000000"]) < 3 || len(seqs["shardId-000000000003"]) < 1; i++ {
		shard, seq := f.Put("orders", "k"+itoa(i), []byte("x"))
		seqs[shard] = append(seqs[shard], seq)
	}
	// Read a second after the writes: the first record left unread on
	// shard 0 is a second old.
	f.Now = func() time.Time { return fixedNow().Add(time.Second) }
	// 0 at its first record (two more after it), 3 at its last, 1 done;
	// 5 waits for 2 and 4, which are not finished.
	f.lagSource = memCheckpoint{
		"shardId-000000000000": {SequenceNumber: seqs["shardId-000000000000"][0]},
		"shardId-000000000003": {SequenceNumber: seqs["shardId-000000000003"][len(seqs["shardId-000000000003"])-1]},
		"shardId-000000000001": {ShardEnd: true},
	}
	o := testOptions(f, "orders")
	o.Lag = true
	d := newDriver(t, o, 120, 40)
	d.loaded()
	d.until("the lag", func() bool { return d.m.stream.lag != nil })
	d.mustContain("LAG")
	// The fake answers MillisBehindLatest as the service does: the age of
	// the first record left unread, 0 at the tip.
	want := map[string]string{"0": "1s", "3": "0s", "5": "blocked", "1": "done", "2": "0s", "4": "0s"}
	if got := lagCells(t, d); !maps.Equal(got, want) {
		t.Fatalf("LAG %v, want %v", got, want)
	}
	if !f.lagMeasure[0] {
		t.Error("the first read did not measure")
	}

	// Two more records on shard 3: the refresh shows it behind.
	for i, n := 1000, 0; n < 2; i++ {
		if shard, _ := f.Put("orders", "k"+itoa(i), []byte("x")); shard == "shardId-000000000003" {
			n++
		}
	}
	f.Now = func() time.Time { return fixedNow().Add(2 * time.Second) } // they are a second old
	d.keys("r")
	d.until("the new lag", func() bool { return lagCells(t, d)["3"] == "1s" })

	// A failed read keeps the figures and says so.
	f.mu.Lock()
	f.lagSource = nil
	f.mu.Unlock()
	d.keys("r")
	d.until("the warning", func() bool { return strings.Contains(d.statusText(), "lag: no positions") })
	if got := lagCells(t, d)["3"]; got != "1s" {
		t.Errorf("after a failed read shard 3 shows %q", got)
	}
}

// Paused, the dashboard promises no GetRecords call: the LAG column then
// has the states without figures.
func TestDashboardLagPaused(t *testing.T) {
	f := newFake(t)
	putKeys(f, "orders", 6)
	f.lagSource = memCheckpoint{"shardId-000000000001": {ShardEnd: true}}
	o := testOptions(f, "orders")
	o.Lag, o.NoReader, o.Paused = true, false, true
	o.PollInterval = 300 * time.Millisecond
	d := newDriver(t, o, 120, 40)
	d.loaded()
	d.until("the lag", func() bool { return d.m.stream.lag != nil })
	time.Sleep(400 * time.Millisecond)
	d.settle()
	if n := f.Calls("GetRecords") + f.Calls("GetShardIterator"); n != 0 {
		t.Fatalf("%d reads while paused", n)
	}
	if len(f.lagMeasure) == 0 || f.lagMeasure[0] {
		t.Fatalf("measure flags %v", f.lagMeasure)
	}
	want := map[string]string{"0": "-", "3": "-", "5": "blocked", "1": "done", "2": "-", "4": "-"}
	if got := lagCells(t, d); !maps.Equal(got, want) {
		t.Fatalf("LAG %v, want %v", got, want)
	}
	// No column without a source.
	o.Lag = false
	d2 := newDriver(t, o, 120, 40)
	d2.loaded()
	d2.mustNotContain("LAG")
}
