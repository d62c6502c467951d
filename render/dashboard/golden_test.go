package dashboard

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/golden"
	"github.com/muesli/termenv"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Whole screens at 80x24 and 120x40, through a real bubbletea program
// (teatest), on the fixed clock and the fake stream of newFake, without
// colour. Refresh the files with: go test ./render/dashboard -run Screens -update
func TestDashboardScreens(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	type scenario struct {
		name   string
		stream string
		// steps run once the first screen is drawn; wait is text the last
		// screen must show before the program quits.
		steps func(tm *teatest.TestModel)
		wait  string
	}
	feed := func(tm *teatest.TestModel) {
		// What a sampling reader would have reported.
		tm.Send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000000", Records: 42, Bytes: 5210}})
		tm.Send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000003", Records: 7, Bytes: 880}})
		tm.Send(pollMsg{stats: tail.PollStats{ShardID: "shardId-000000000005", Records: 131, Bytes: 48200, MillisBehind: 2300}})
		var recs []tail.Record
		for i := range 30 {
			shard := []string{"shardId-000000000000", "shardId-000000000003", "shardId-000000000005"}[i%3]
			recs = append(recs, record(shard, fmt.Sprintf("customer-%d", 40+i%7), fmt.Sprintf(`{"order":%d,"total":%d.%02d}`, 1000+i, 10+i*3, i), i/3))
		}
		tm.Send(recordsMsg{recs: recs})
		tm.Send(figureTickMsg{})
	}
	scenarios := []scenario{
		{name: "stream", stream: "orders", steps: feed, wait: "shard shardId-000000000000 open"},
		{name: "shards", stream: "orders", steps: func(tm *teatest.TestModel) {
			feed(tm)
			tm.Send(keyMsg("tab"))
			tm.Send(keyMsg("j"))
			tm.Send(keyMsg("j"))
		}, wait: "shard shardId-000000000005 open"},
		{name: "split-preview", stream: "orders", steps: func(tm *teatest.TestModel) {
			for _, k := range []string{"tab", "j", "j", "s", "enter"} {
				tm.Send(keyMsg(k))
			}
		}, wait: "[y/N]"},
		{name: "merge-choice", stream: "orders", steps: func(tm *teatest.TestModel) {
			for _, k := range []string{"tab", "j", "m"} {
				tm.Send(keyMsg(k))
			}
		}, wait: "upper neighbour"},
		{name: "picker", steps: func(tm *teatest.TestModel) {}, wait: "3 streams"},
		{name: "help", stream: "orders", steps: func(tm *teatest.TestModel) { tm.Send(keyMsg("?")) }, wait: "any key closes"},
	}
	for _, sc := range scenarios {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s_%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				f := newFake(t)
				m := New(testOptions(f, sc.stream))
				t.Cleanup(func() { m.quit() })
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
				first := "3 open / 6 shards"
				if sc.stream == "" {
					first = "audit-log"
				}
				waitScreen(t, tm, first)
				// Messages reach Update in the order they are sent, and the
				// quit comes after them.
				sc.steps(tm)
				if err := tm.Quit(); err != nil {
					t.Fatal(err)
				}
				final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
				screen := final.View()
				if !strings.Contains(screen, sc.wait) {
					t.Fatalf("the screen lacks %q:\n%s", sc.wait, screen)
				}
				golden.RequireEqual(t, []byte(screen+"\n"))
			})
		}
	}
}

// waitScreen waits until the program has drawn text.
func waitScreen(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

// keyMsg is also a tea.Msg for TestModel.Send.
var _ tea.Msg = keyMsg("q")
