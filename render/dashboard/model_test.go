package dashboard

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

func TestDashboardNavigation(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	m := d.m

	// The first open shard by range is selected; the tree draws every
	// shard, the merge child under its second parent with a back reference.
	if m.selected != "shardId-000000000000" {
		t.Fatalf("selected %q, want shard 0", m.selected)
	}
	d.mustContain("orders", "ACTIVE", "3 open / 6 shards", "split into 3 + 4", "merge of 4 + 2", "╌▷ 5")
	for _, id := range []string{"0", "1", "2", "3", "4", "5"} {
		if !strings.Contains(d.screen(), "● "+id) && !strings.Contains(d.screen(), "○ "+id) {
			t.Fatalf("tree lacks shard %s:\n%s", id, d.screen())
		}
	}

	// The tree cursor moves over shard lines in drawing order and the table
	// follows.
	var order []string
	for range 6 {
		order = append(order, lineage.ShortID(m.selected))
		d.keys("down")
	}
	// The merge child 5 comes under its second parent 2.
	if got := strings.Join(order, " "); got != "0 1 3 4 2 5" {
		t.Fatalf("tree order %q", got)
	}
	if m.selected != "shardId-000000000005" || m.table.selected() != m.selected {
		t.Fatalf("selected %q, table %q", m.selected, m.table.selected())
	}
	d.keys("down") // stays on the last
	if m.selected != "shardId-000000000005" {
		t.Fatalf("moved past the end: %q", m.selected)
	}
	d.keys("k", "k")
	if m.selected != "shardId-000000000004" {
		t.Fatalf("k k: selected %q", m.selected)
	}
	d.keys("g")
	if m.selected != "shardId-000000000000" {
		t.Fatalf("g: selected %q", m.selected)
	}
	// Keys read together come as one message; each still counts.
	d.keys("jjj")
	if m.selected != "shardId-000000000004" {
		t.Fatalf("jjj: selected %q", m.selected)
	}
	d.keys("g")

	// tab: the table (open shards by range first, then closed) moves the
	// same selection.
	d.keys("tab")
	if m.focus != paneTable {
		t.Fatalf("focus %d after tab", m.focus)
	}
	d.keys("j")
	if m.selected != "shardId-000000000003" || m.tree.selected() != m.selected {
		t.Fatalf("table j: selected %q, tree %q", m.selected, m.tree.selected())
	}
	d.keys("tab", "tab")
	if m.focus != paneTree {
		t.Fatalf("focus %d after three tabs", m.focus)
	}
	d.keys("shift+tab")
	if m.focus != paneRecords {
		t.Fatalf("focus %d after shift+tab", m.focus)
	}

	// The selected line is marked in both panes.
	for _, l := range strings.Split(d.screen(), "\n") {
		if strings.HasPrefix(l, "▸") {
			if !strings.Contains(l, "3") {
				t.Fatalf("marked line %q", l)
			}
		}
	}
	if n := strings.Count(d.screen(), "▸"); n != 2 {
		t.Fatalf("%d marks, want 2 (tree and table):\n%s", n, d.screen())
	}

	// A refresh keeps the selection; a split elsewhere shows up.
	f.SplitHalf("orders", "shardId-000000000000")
	d.keys("r")
	d.until("the new listing", func() bool { return m.stream.graph.Len() == 8 })
	if m.selected != "shardId-000000000003" {
		t.Fatalf("selection lost on refresh: %q", m.selected)
	}
	d.mustContain("4 open / 8 shards", "split into 6 + 7")
}

func TestDashboardPicker(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, ""), 80, 24)
	d.until("the stream list", func() bool { return d.m.picker.loaded })
	d.mustContain("Pick a stream", "audit-log", "clicks", "orders", "3 streams")

	// The filter narrows the list as it is typed.
	d.keys("/", "o", "r")
	d.mustContain("/or", "orders", "1 of 3 streams match \"or\"")
	d.mustNotContain("clicks")
	d.keys("enter")
	if d.m.filter.typing || d.m.filter.value != "or" {
		t.Fatalf("filter after enter: filtering %v, %q", d.m.filter.typing, d.m.filter.value)
	}
	d.keys("enter")
	d.loaded()
	if d.m.screen != screenStream || d.m.stream.ref.Name != "orders" {
		t.Fatalf("screen %d, stream %q", d.m.screen, d.m.stream.ref.Name)
	}
	d.mustContain("orders", "3 open / 6 shards")

	// esc goes back to the list.
	d.keys("esc")
	d.until("the stream list", func() bool { return d.m.screen == screenPicker && d.m.picker.loaded })
	d.mustContain("audit-log", "clicks", "orders")

	// j/k move, enter opens another stream.
	d.keys("k")
	if got := d.m.picker.current(); got != "clicks" {
		t.Fatalf("picker on %q after j", got)
	}
	d.keys("enter")
	d.loaded()
	d.mustContain("clicks", "2 open / 2 shards")
}

func TestDashboardPickerListError(t *testing.T) {
	f := newFake(t)
	f.listErr = &types.AccessDeniedException{Message: aws.String("not allowed to list streams")}
	d := newDriver(t, testOptions(f, ""), 80, 24)
	d.until("the error", func() bool { return d.m.status.kind == statusError })
	if got := d.statusText(); !strings.Contains(got, "cannot list streams") || !strings.Contains(got, "not allowed to list streams") {
		t.Fatalf("status %q", got)
	}
}

func TestDashboardSplitMiddle(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	// Select shard 5 (the merge child, half the key space).
	d.keys("tab", "j", "j")
	if d.m.selected != "shardId-000000000005" {
		t.Fatalf("selected %q", d.m.selected)
	}
	d.keys("s")
	d.mustContain("Split shard 5 (50% of the key space)", "▸ at the middle", "balanced")
	d.keys("enter")
	if d.m.action.dialog == nil || d.m.action.dialog.stage != stagePreview {
		t.Fatalf("no preview:\n%s", d.screen())
	}
	sh := d.m.stream.graph.Shard("shardId-000000000005")
	k := sh.Range.Midpoint()
	d.mustContain("Stream orders: split shardId-000000000005 at 50% of its range", "Before (3 open shards):",
		"-  shardId-000000000005", "After (4 open shards):", "+  (new)", "25%",
		"1. SplitShard ShardToSplit=shardId-000000000005 NewStartingHashKey="+k.String(), "Send 1 call to stream orders? [y/N]")
	if f.Calls("SplitShard") != 0 {
		t.Fatal("SplitShard sent before confirmation")
	}
	d.keys("y")
	d.until("the split", func() bool { return d.m.action.dialog == nil })
	d.settle()
	if f.Calls("SplitShard") != 1 {
		t.Fatalf("%d SplitShard calls", f.Calls("SplitShard"))
	}
	open := f.OpenShards("orders")
	if strings.Join(open, ",") != "shardId-000000000000,shardId-000000000003,shardId-000000000006,shardId-000000000007" {
		t.Fatalf("open shards %v", open)
	}
	if got := d.statusText(); got != "split 5 into 6 and 7; the stream is ACTIVE" {
		t.Fatalf("status %q", got)
	}
	if d.m.selected != "shardId-000000000006" {
		t.Fatalf("selected %q after the split", d.m.selected)
	}
	d.mustContain("4 open / 8 shards", "split into 6 + 7")
}

func TestDashboardSplitPercent(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 80, 24)
	d.loaded()
	d.keys("s", "j", "enter")
	d.mustContain("Percent: ")
	// A bad percentage is refused in the dialog, which stays open.
	d.keys("1", "2", "0", "enter")
	if d.m.action.dialog == nil || d.m.action.dialog.stage != stagePercent || !strings.Contains(d.m.action.dialog.inErr, "out of range") {
		t.Fatalf("after 120: %+v", d.m.action.dialog)
	}
	d.mustContain("percentage \"120\" is out of range")
	d.keys("ctrl+u", "2", "5", "enter")
	if d.m.action.dialog == nil || d.m.action.dialog.stage != stagePreview {
		t.Fatalf("no preview:\n%s", d.screen())
	}
	want := d.m.stream.graph.Shard("shardId-000000000000").Range.KeyAtPercent(mustPercent(t, "25"))
	if got := *d.m.action.dialog.plan.Steps[0].Args.NewStartingHashKey; got != want {
		t.Fatalf("split key %s, want %s", got, want)
	}
	d.mustContain("at 25% of its range")
	d.keys("n")
	if d.m.action.dialog != nil || f.Calls("SplitShard") != 0 {
		t.Fatalf("n did not cancel: dialog %v, %d calls", d.m.action.dialog, f.Calls("SplitShard"))
	}
	if got := d.statusText(); got != "cancelled: nothing was changed" {
		t.Fatalf("status %q", got)
	}
}

func mustPercent(t *testing.T, s string) *big.Rat {
	t.Helper()
	p, err := lineage.ParsePercent(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDashboardCancel(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	for _, keys := range [][]string{
		{"s", "esc"},               // at the choice
		{"s", "j", "enter", "esc"}, // at the percentage
		{"s", "enter", "esc"},      // at the preview
		{"m", "enter", "n"},        // merge preview
		{"m", "q"},                 // q cancels a dialog, it does not quit
	} {
		d.keys(keys...)
		if d.m.action.dialog != nil || d.quit {
			t.Fatalf("%v: dialog %v, quit %v", keys, d.m.action.dialog, d.quit)
		}
		if got := d.statusText(); got != "cancelled: nothing was changed" {
			t.Fatalf("%v: status %q", keys, got)
		}
	}
	// While sampling (the sample is slow): esc cancels it, and its late
	// answer is ignored.
	f.Hook = func(op string, _ any) error {
		if op == "GetShardIterator" {
			time.Sleep(400 * time.Millisecond)
		}
		return nil
	}
	d.keys("s", "j", "j", "enter")
	if d.m.action.dialog == nil || d.m.action.dialog.stage != stageBusy {
		t.Fatalf("not sampling: %+v, status %q", d.m.action.dialog, d.statusText())
	}
	d.mustContain("sampling the recent traffic of shard 0")
	d.keys("esc")
	if d.m.action.dialog != nil || d.statusText() != "cancelled: nothing was changed" {
		t.Fatalf("esc while sampling: dialog %v, status %q", d.m.action.dialog, d.statusText())
	}
	time.Sleep(500 * time.Millisecond)
	d.settle()
	if d.m.action.dialog != nil || d.statusText() != "cancelled: nothing was changed" {
		t.Fatalf("after the late sample: dialog %v, status %q", d.m.action.dialog, d.statusText())
	}
	if n := f.Calls("SplitShard") + f.Calls("MergeShards"); n != 0 {
		t.Fatalf("%d reshard calls", n)
	}
}

func TestDashboardMerge(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	// Shard 3 has both neighbours: 0 below and 5 above.
	d.keys("tab", "j")
	d.keys("m")
	d.mustContain("Merge shard 3", "with the lower neighbour 0 (33.33% of the key space)", "with the upper neighbour 5 (50% of the key space)")
	d.keys("j", "enter")
	d.mustContain("Stream orders: merge shardId-000000000003 with shardId-000000000005", "-  shardId-000000000003",
		"-  shardId-000000000005", "+  (new)", "66.67%",
		"1. MergeShards ShardToMerge=shardId-000000000003 AdjacentShardToMerge=shardId-000000000005", "Send 1 call to stream orders? [y/N]")
	d.keys("y")
	d.until("the merge", func() bool { return d.m.action.dialog == nil })
	d.settle()
	if got := strings.Join(f.OpenShards("orders"), ","); got != "shardId-000000000000,shardId-000000000006" {
		t.Fatalf("open %s", got)
	}
	if got := d.statusText(); got != "merged 3 and 5 into 6; the stream is ACTIVE" {
		t.Fatalf("status %q", got)
	}
	d.mustContain("2 open / 7 shards", "merge of 3 + 5")

	// The lowest shard has only an upper neighbour.
	d.keys("g", "m")
	d.mustContain("with the upper neighbour 6")
	d.mustNotContain("lower neighbour")
}

func TestDashboardBalancedSplit(t *testing.T) {
	f := newFake(t)
	putKeys(f, "orders", 400)
	o := testOptions(f, "orders")
	o.Sample = reshard.SampleOptions{Now: fixedNow}
	d := newDriver(t, o, 120, 40)
	d.loaded()
	d.keys("tab", "j", "j") // shard 5
	d.keys("s", "j", "j", "enter")
	d.until("the preview", func() bool { return d.m.action.dialog != nil && d.m.action.dialog.stage == stagePreview })
	p := d.m.action.dialog.plan
	if p.Sample == nil || !strings.Contains(p.Description, "median hash of") {
		t.Fatalf("plan %q without the sample", p.Description)
	}
	d.mustContain("TRAFFIC", "at the median hash of", "Traffic: 199 records sampled from shardId-000000000005 over the last 5m0s.")
	// The children's traffic shares are the two halves of the sample.
	for _, s := range p.Steps[0].Opens {
		if s.Traffic == nil || *s.Traffic < 0.45 || *s.Traffic > 0.55 {
			t.Fatalf("child %s traffic %v", s.Range, s.Traffic)
		}
	}
	d.keys("y")
	d.until("the split", func() bool { return d.m.action.dialog == nil })
	if f.Calls("SplitShard") != 1 {
		t.Fatalf("%d SplitShard calls", f.Calls("SplitShard"))
	}
}

func TestDashboardRefusals(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	// Shard 1 is closed: the planner's sentence, nothing sent.
	d.keys("j", "s")
	if d.m.action.dialog != nil {
		t.Fatal("dialog for a closed shard")
	}
	if got := d.statusText(); !strings.Contains(got, "error: shard shardId-000000000001 of stream orders is closed") {
		t.Fatalf("status %q", got)
	}
	d.keys("m")
	if got := d.statusText(); got != "error: shard 1 is closed: only open shards can be merged" {
		t.Fatalf("status %q", got)
	}
	// A stream that is not ACTIVE.
	f.SetStatus("orders", types.StreamStatusUpdating)
	d.keys("r", "g")
	d.settle()
	d.keys("s")
	if got := d.statusText(); !strings.Contains(got, "stream orders is UPDATING, not ACTIVE") {
		t.Fatalf("status %q", got)
	}
	d.mustContain("UPDATING")
}

// The split preview checks the account's shard quota like the commands; it
// is read when the stream opens and after each action, not on refreshes.
func TestDashboardShardQuota(t *testing.T) {
	f := newFake(t)
	f.ShardLimit = 7 // 6 open: orders 3, audit-log 1, clicks 2
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	d.keys("tab", "j", "j", "s", "enter")
	d.mustContain("Note: The account has 6 of its 7-shard quota in this region open; this opens up to 1 more shard.")
	d.keys("y")
	d.until("the split", func() bool { return d.m.action.dialog == nil })
	d.settle()
	if f.Calls("SplitShard") != 1 || f.Calls("DescribeLimits") != 2 {
		t.Fatalf("SplitShard %d, DescribeLimits %d", f.Calls("SplitShard"), f.Calls("DescribeLimits"))
	}
	d.send(refreshTickMsg{})
	d.settle()
	if n := f.Calls("DescribeLimits"); n != 2 {
		t.Fatalf("a timed refresh read the quota (%d calls)", n)
	}
	d.keys("s")
	if d.m.action.dialog != nil {
		t.Fatal("split dialog with the quota full")
	}
	want := "error: this split of stream orders opens up to 1 more shard, but the account has 7 of its 7-shard quota in this region open (0 free)"
	if got := d.statusText(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "(read again at the next refresh)") {
		t.Fatalf("status %q", got)
	}
	if f.Calls("SplitShard") != 1 {
		t.Fatal("SplitShard sent over the quota")
	}
	// The quota is raised meanwhile: the next listing reads it, and the
	// split goes ahead.
	f.ShardLimit = 8
	d.send(refreshTickMsg{})
	d.settle()
	if n := f.Calls("DescribeLimits"); n != 3 {
		t.Fatalf("the refresh after a refusal did not read the quota (%d calls)", n)
	}
	d.keys("s", "enter")
	d.mustContain("Note: The account has 7 of its 8-shard quota in this region open; this opens up to 1 more shard.")
	d.keys("n")
	// r reads it too.
	d.keys("r")
	d.settle()
	if n := f.Calls("DescribeLimits"); n != 4 {
		t.Fatalf("r did not read the quota (%d calls)", n)
	}
	// Read-only: no action, so no quota read.
	g := newFake(t)
	o := testOptions(g, "orders")
	o.ReadOnly = true
	newDriver(t, o, 120, 40).loaded()
	if n := g.Calls("DescribeLimits"); n != 0 {
		t.Fatalf("read-only dashboard called DescribeLimits %d times", n)
	}
}

func TestDashboardReadOnly(t *testing.T) {
	f := newFake(t)
	o := testOptions(f, "orders")
	o.ReadOnly = true
	d := newDriver(t, o, 120, 40)
	d.loaded()
	d.mustContain("read-only", "q quit")
	bar := ansi.Strip(d.m.helpBar())
	if strings.Contains(bar, "split") || strings.Contains(bar, "merge") {
		t.Fatalf("help bar offers actions: %q", bar)
	}
	d.keys("?")
	d.mustNotContain("split the selected shard", "merge the selected")
	d.keys("x", "s", "m")
	if d.m.action.dialog != nil {
		t.Fatal("a dialog in read-only mode")
	}
	if got := d.statusText(); !strings.Contains(got, "read-only") {
		t.Fatalf("status %q", got)
	}
}

func TestDashboardServiceErrors(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()

	// The service refuses the split: the step's sentence and the service's
	// reason on the status line, the dialog gone.
	f.Hook = func(op string, _ any) error {
		if op == "SplitShard" {
			return &types.LimitExceededException{Message: aws.String("Rate exceeded for stream orders")}
		}
		return nil
	}
	d.keys("s", "enter", "y")
	d.until("the failure", func() bool { return d.m.action.dialog == nil })
	got := d.statusText()
	if !strings.HasPrefix(got, "error: step 1 of 1 (SplitShard shardId-000000000000 at hash key") ||
		!strings.Contains(got, "failed: ") || !strings.Contains(got, "Rate exceeded for stream orders") {
		t.Fatalf("status %q", got)
	}
	if len(f.OpenShards("orders")) != 3 {
		t.Fatal("the layout changed")
	}

	// A failed refresh keeps the last listing and says why; the next good
	// one clears the message.
	f.Hook = func(op string, _ any) error {
		if op == "ListShards" {
			return errors.New("connection reset by peer")
		}
		return nil
	}
	d.keys("r")
	d.until("the refresh error", func() bool { return strings.Contains(d.statusText(), "connection reset") })
	if got := d.statusText(); !strings.HasPrefix(got, "error: cannot list stream orders: ") {
		t.Fatalf("status %q", got)
	}
	d.mustContain("3 open / 6 shards")
	f.Hook = nil
	d.keys("r")
	d.until("a clean status", func() bool { return d.m.status.text == "" })

	// DescribeError words errors as cmd does.
	o := testOptions(f, "orders")
	o.DescribeError = func(err error) string { return "worded: " + err.Error() }
	d2 := newDriver(t, o, 120, 40)
	d2.loaded()
	f.Hook = func(op string, _ any) error {
		if op == "DescribeStreamSummary" {
			return errors.New("boom")
		}
		return nil
	}
	d2.keys("r")
	d2.until("the error", func() bool { return d2.m.status.kind == statusError })
	if got := d2.statusText(); got != "error: cannot list stream orders: worded: boom" {
		t.Fatalf("status %q", got)
	}
}

func TestDashboardResize(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 60}, {100, 28}, {99, 30}, {40, 10}, {30, 5}} {
		w, h := size[0], size[1]
		d.send(tea.WindowSizeMsg{Width: w, Height: h})
		v := d.m.View()
		lines := strings.Split(v, "\n")
		if w >= 40 && h >= 10 && len(lines) != h {
			t.Fatalf("%dx%d: %d lines", w, h, len(lines))
		}
		for i, l := range lines {
			if n := ansi.StringWidth(l); n > w {
				t.Fatalf("%dx%d: line %d is %d cells: %q", w, h, i, n, l)
			}
		}
		if w < 40 || h < 10 {
			if !strings.Contains(v, "too small") {
				t.Fatalf("%dx%d: %q", w, h, v)
			}
			continue
		}
		s := ansi.Strip(v)
		wide := w >= 100 && h >= 28
		if wide != strings.Contains(s, "│") {
			t.Fatalf("%dx%d: side-by-side %v:\n%s", w, h, !wide, s)
		}
		if !wide && !strings.Contains(s, "[Lineage]") {
			t.Fatalf("%dx%d: no tab bar:\n%s", w, h, s)
		}
		if !strings.Contains(lines[h-1], "q quit") || !strings.Contains(lines[h-1], "? help") {
			t.Fatalf("%dx%d: help bar %q", w, h, lines[h-1])
		}
	}
	// Small windows show one pane at a time; tab shows the next.
	d.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	d.keys("tab")
	d.mustContain("[Shards]", "REC/S")
	d.mustNotContain("split into")
	// The tree scrolls to keep the cursor in view in a short window.
	f.SplitHalf("orders", "shardId-000000000000")
	f.SplitHalf("orders", "shardId-000000000006")
	f.SplitHalf("orders", "shardId-000000000008")
	d.keys("r")
	d.until("the listing", func() bool { return d.m.stream.graph.Len() == 12 })
	d.send(tea.WindowSizeMsg{Width: 80, Height: 12})
	d.keys("tab", "tab", "G")
	if !strings.Contains(d.screen(), "▸") {
		t.Fatalf("the selected line is scrolled out:\n%s", d.screen())
	}
}

func TestDashboardFiguresAndRecords(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	// No figures yet: dashes.
	d.mustContain("no live figures")
	d.keys("tab", "j") // select 3, so rows 0 and 5 carry no mark
	// Two polls of shard 0 within the window: 30 records, 3000 bytes over
	// 10 s; shard 5 is 1.5 s behind.
	start := clock
	now := start
	d.m.opts.Now = func() time.Time { return now }
	d.send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000000", Records: 10, Bytes: 1000}})
	now = start.Add(5 * time.Second)
	d.send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000000", Records: 20, Bytes: 2000}})
	d.send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000005", Records: 0, Bytes: 0, MillisBehind: 1500}})
	now = start.Add(9 * time.Second)
	d.send(recordsMsg{recs: []tail.Record{record("shardId-000000000000", "customer-42", `{"total":12}`, 1)}})
	d.send(figureTickMsg{})
	row := lineOf(t, d.screen(), "  0      open")
	// 30 records and 3000 bytes over the 9 s since the first poll.
	if !strings.Contains(row, "3.3") || !strings.Contains(row, "333 B/s") || !strings.HasSuffix(strings.TrimSpace(row), "0s") {
		t.Fatalf("row of shard 0: %q", row)
	}
	if row := lineOf(t, d.screen(), "  5      open"); !strings.HasSuffix(strings.TrimSpace(row), "   0    0 B/s      1s") {
		t.Fatalf("row of shard 5: %q", row)
	}
	d.mustContain("10:00:06.000  0    customer-42  {\"total\":12}", "1 seen")
	// Past the window the first poll no longer counts.
	now = start.Add(12 * time.Second)
	d.send(figureTickMsg{})
	if row := lineOf(t, d.screen(), "  0      open"); !strings.Contains(row, "2.0") {
		t.Fatalf("row of shard 0 after the window: %q", row)
	}
	// The filter applies to records and shards.
	d.keys("/", "c", "u", "s", "t", "enter")
	d.mustContain("customer-42", "no shard matches the filter")
	d.keys("esc")
	d.mustContain("  0      open")
}

func lineOf(t *testing.T, screen, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, prefix); i >= 0 {
			return l[i:]
		}
	}
	t.Fatalf("no line with %q:\n%s", prefix, screen)
	return ""
}

func TestDashboardCheckpoint(t *testing.T) {
	f := newFake(t)
	s := f.Stream("orders")
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.checkpoint")
	store, err := tail.OpenFile(path, tail.StreamIdentity{Name: "orders", ARN: s.ARN, Created: s.Created}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = store.Save(t.Context(), map[string]tail.Position{
		"shardId-000000000001": {ShardEnd: true},
		"shardId-000000000003": {SequenceNumber: "49590338271490256608559692538361571095921575989136588898"},
	})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(f, "orders")
	o.Checkpoint = path
	d := newDriver(t, o, 120, 40)
	d.loaded()
	d.until("the checkpoint", func() bool { return d.m.stream.checkpt != nil })
	d.keys("tab", "j", "j") // select 5
	d.mustContain("CHECKPOINT")
	if row := lineOf(t, d.screen(), "  3      open"); !strings.HasSuffix(strings.TrimSpace(row), "…5989136588898") {
		t.Fatalf("row of shard 3: %q", row)
	}
	if row := lineOf(t, d.screen(), "  1      closed"); !strings.HasSuffix(strings.TrimSpace(row), "SHARD_END") {
		t.Fatalf("row of shard 1: %q", row)
	}

	// A checkpoint of another stream is not shown, and the status says so.
	o.Stream.Name = "clicks"
	d2 := newDriver(t, o, 120, 40)
	d2.loaded()
	d2.until("the warning", func() bool { return d2.m.status.kind == statusWarn })
	if got := d2.statusText(); !strings.Contains(got, "is for arn:aws:kinesis:us-east-1:123456789012:stream/orders, not for this stream") {
		t.Fatalf("status %q", got)
	}
	d2.mustNotContain("SHARD_END")

	// A missing file is a warning, not a failure.
	o.Stream.Name, o.Checkpoint = "orders", filepath.Join(dir, "missing")
	d3 := newDriver(t, o, 120, 40)
	d3.loaded()
	d3.until("the warning", func() bool { return d3.m.status.kind == statusWarn })
	if got := d3.statusText(); !strings.Contains(got, "cannot read checkpoint file") {
		t.Fatalf("status %q", got)
	}
	_ = os.Remove(path)
}

func TestDashboardQuit(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 80, 24)
	d.loaded()
	_, cmd := d.m.Update(keyMsg("q"))
	if cmd == nil {
		t.Fatal("q gave no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
	if d.m.ctx.Err() == nil {
		t.Fatal("q left the calls' context running")
	}
}

func TestDashboardHelp(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	d.keys("?")
	d.mustContain("Keys", "split the selected shard", "pause/resume the sampling reader", "any key closes the help")
	d.keys("x")
	d.mustNotContain("any key closes the help")
}

func TestDashboardProgress(t *testing.T) {
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	// After the split the stream stays UPDATING for a few polls.
	updatingAfterReshard(f, 30*time.Millisecond)
	d.keys("s", "enter")
	d.send(keyMsg("y"))
	d.until("the wait", func() bool {
		return d.m.action.dialog != nil && strings.Contains(strings.Join(d.m.action.dialog.progress, "\n"), "waiting for ACTIVE: UPDATING")
	})
	d.mustContain("Split shard 0", "step 1 of 1: SplitShard shardId-000000000000 at hash key", "waiting for stream orders to be ACTIVE (UPDATING")
	// q while the change runs only warns.
	d.send(keyMsg("q"))
	if d.quit || d.m.ctx.Err() != nil {
		t.Fatal("the first q quit during a reshard")
	}
	if got := d.statusText(); !strings.Contains(got, "press q again to quit") {
		t.Fatalf("status %q", got)
	}
	d.until("the end", func() bool { return d.m.action.dialog == nil })
	if got := d.statusText(); got != "split 0 into 6 and 7; the stream is ACTIVE" {
		t.Fatalf("status %q", got)
	}
	d.mustContain("4 open / 8 shards")
}

func TestDashboardProgressLines(t *testing.T) {
	d := newDialog(newTheme(), newKeyMap(), reshard.ActionSplit, "orders", "shardId-000000000000", "Split", nil)
	m := &Model{action: actionState{dialog: d, seq: 1}, th: newTheme()}
	d.stage = stageRunning
	for _, ev := range []reshard.Event{
		{Kind: reshard.EventSend, Step: 1, Total: 1, Desc: "SplitShard x"},
		{Kind: reshard.EventWait, Step: 1, Total: 1, Status: types.StreamStatusUpdating, Elapsed: 100 * time.Millisecond},
		{Kind: reshard.EventWait, Step: 1, Total: 1, Status: types.StreamStatusUpdating, Elapsed: 300 * time.Millisecond},
		{Kind: reshard.EventWait, Step: 1, Total: 1, Status: types.StreamStatusActive, Elapsed: 700 * time.Millisecond},
		{Kind: reshard.EventDone, Step: 1, Total: 1, Elapsed: 800 * time.Millisecond, Done: &reshard.DoneStep{Opened: []string{"shardId-000000000003", "shardId-000000000004"}}},
	} {
		m.Update(execEventMsg{seq: 1, ev: ev})
	}
	want := "step 1 of 1: SplitShard x\nwaiting for ACTIVE: ACTIVE after 0.7s\nstep 1 of 1 done in 0.8s: opened 3, 4"
	if got := strings.Join(d.progress, "\n"); got != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", got, want)
	}
}

func TestDashboardColour(t *testing.T) {
	f := newFake(t)
	// NO_COLOR (a theme without colour): not one escape sequence, and the
	// selection still shows (▸).
	plain := newDriver(t, testOptions(f, "orders"), 120, 40)
	plain.loaded()
	first := plain.m.View()
	for _, k := range []string{"s", "enter", "n", "?", "x", "/", "z"} {
		plain.keys(k)
		if v := plain.m.View(); strings.Contains(v, "\x1b[") {
			t.Fatalf("escape sequences without colour after %s:\n%q", k, v)
		}
	}
	if !strings.Contains(first, "▸") {
		t.Fatal("no selection mark without colour")
	}
	// With colour the theme's styles are used.
	o := testOptions(f, "orders")
	o.Theme = render.NewTheme(true)
	col := newDriver(t, o, 120, 40)
	col.loaded()
	v := col.m.View()
	if !strings.Contains(v, "\x1b[") || ansi.Strip(v) == v {
		t.Fatal("no colour with a colour theme")
	}
	// The selection bar is padded to the pane's width in reverse video.
	trim := func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		return strings.Join(lines, "\n")
	}
	if trim(ansi.Strip(v)) != first {
		t.Fatalf("the coloured screen differs from the plain one in more than colour:\n%s\n---\n%s", ansi.Strip(v), first)
	}
}

// --kcl-table: the lease overlay is drawn in the tree at every listing and
// the blocked children are named on the status line; a failing read is a
// warning, not an exit.
func TestDashboardLeaseOverlay(t *testing.T) {
	f := newFake(t)
	o := testOptions(f, "orders")
	calls := 0
	fail := false
	o.LeaseOverlay = true
	f.leases = func(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error) {
		calls++
		if fail {
			return nil, errors.New("lease table gone")
		}
		return map[string]*render.LeaseMark{
			"shardId-000000000004": {Lease: true, Owner: "w-dead", Checkpoint: "TRIM_HORIZON", Blocking: []string{"shardId-000000000005"}},
			"shardId-000000000005": {Lease: true, Checkpoint: "TRIM_HORIZON", Blocked: true, BlockedBy: []string{"shardId-000000000004"}, Reason: "waits for parent 4 (at TRIM_HORIZON, owner w-dead, not SHARD_END)"},
		}, nil
	}
	d := newDriver(t, o, 160, 40)
	d.loaded()
	d.until("the lease overlay", func() bool { return calls > 0 && strings.Contains(d.screen(), "BLOCKED") })
	d.mustContain("⛔ BLOCKED by 4", "⚠ BLOCKS 5")
	if s := d.statusText(); !strings.Contains(s, "lease table: 1 blocked: 5 waits for parent 4 (at TRIM_HORIZON, owner w-dead, not SHARD_END)") {
		t.Fatalf("status = %q", s)
	}
	fail = true
	d.keys("r")
	d.until("the warning", func() bool { return strings.Contains(d.statusText(), "lease table: lease table gone") })
}

// A split or merge whose answer is lost (the call took effect, then the
// connection dropped) is looked for in the listing once the stream is
// ACTIVE again, as the commands look: done, with a warning, not an error.
func TestDashboardLostAnswer(t *testing.T) {
	lost := errors.New("read tcp 127.0.0.1:4567: connection reset by peer")
	for _, tc := range []struct {
		name   string
		keys   []string
		status string
		open   string
	}{
		{name: "split", keys: []string{"s", "enter"},
			status: "split 0 into 6 and 7; the stream is ACTIVE (SplitShard took effect although no answer came: read tcp 127.0.0.1:4567: connection reset by peer)",
			open:   "shardId-000000000006,shardId-000000000007,shardId-000000000003,shardId-000000000005"},
		{name: "merge", keys: []string{"tab", "j", "m", "j", "enter"},
			status: "merged 3 and 5 into 6; the stream is ACTIVE (MergeShards took effect although no answer came: read tcp 127.0.0.1:4567: connection reset by peer)",
			open:   "shardId-000000000000,shardId-000000000006"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			d := newDriver(t, testOptions(f, "orders"), 120, 40)
			d.loaded()
			f.lost = lost
			// The stream is UPDATING for a while after the call, so the
			// check waits for ACTIVE before it lists.
			updatingAfterReshard(f, 20*time.Millisecond)
			d.keys(tc.keys...)
			d.send(keyMsg("y"))
			d.until("the check", func() bool {
				return d.m.action.dialog != nil && strings.Contains(strings.Join(d.m.action.dialog.progress, "\n"), "no answer came")
			})
			d.mustContain("step 1 of 1: no answer came (read tcp 127.0.0.1:4567: connection reset by peer)",
				"waiting for stream orders to be ACTIVE to see whether step 1 took effect")
			d.until("the end", func() bool { return d.m.action.dialog == nil })
			d.settle()
			if got := d.statusText(); got != tc.status || d.m.status.kind != statusWarn {
				t.Fatalf("status %q (kind %d)", got, d.m.status.kind)
			}
			if got := strings.Join(f.OpenShards("orders"), ","); got != tc.open {
				t.Fatalf("open %s", got)
			}
			if n := f.Calls("SplitShard") + f.Calls("MergeShards"); n != 1 {
				t.Fatalf("%d reshard calls", n)
			}
			if d.m.selected != "shardId-000000000006" {
				t.Fatalf("selected %q", d.m.selected)
			}
		})
	}
	// The answer is lost and the call did not take effect: the error, as
	// before, and nothing changed.
	f := newFake(t)
	d := newDriver(t, testOptions(f, "orders"), 120, 40)
	d.loaded()
	f.Hook = func(op string, _ any) error {
		if op == "SplitShard" {
			return lost
		}
		return nil
	}
	d.keys("s", "enter", "y")
	d.until("the failure", func() bool { return d.m.action.dialog == nil })
	want := "error: step 1 of 1 (SplitShard shardId-000000000000 at hash key 56713727820156410577229101238628035242) failed: read tcp 127.0.0.1:4567: connection reset by peer"
	if got := d.statusText(); got != want {
		t.Fatalf("status %q", got)
	}
	if len(f.OpenShards("orders")) != 3 {
		t.Fatal("the layout changed")
	}
}

// updatingAfterReshard makes stream orders answer UPDATING to the first 19
// DescribeStreamSummary calls after a SplitShard or MergeShards, each
// taking pause, then ACTIVE.
func updatingAfterReshard(f *fakeBackend, pause time.Duration) {
	var mu sync.Mutex
	polls := 0
	f.Hook = func(op string, _ any) error {
		if op != "DescribeStreamSummary" || f.Calls("SplitShard")+f.Calls("MergeShards") == 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		polls++
		if polls < 20 {
			f.SetStatus("orders", types.StreamStatusUpdating)
			time.Sleep(pause)
		} else {
			f.SetStatus("orders", types.StreamStatusActive)
		}
		return nil
	}
}
