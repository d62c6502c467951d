package dashboard

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// clock is the fixed time of every test screen.
var clock = time.Date(2026, 11, 30, 10, 0, 5, 0, time.UTC)

func fixedNow() time.Time { return clock }

// fakeBackend is a Backend over the in-memory Kinesis: the calls the
// commands make, on internal/fake, with a stream list and a
// lease overlay of the test's own.
type fakeBackend struct {
	*fake.Fake
	mu      sync.Mutex
	names   []string
	listErr error
	leases  func(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error)
	// lagSource is the consumer's positions the LAG column reads (nil: an
	// error), measured on the fake as cmd measures them on the service;
	// lagMeasure records the measure flag of every Lag call.
	lagSource  consumer.Source
	lagMeasure []bool
	// lost, when set, is what SplitShard and MergeShards return after
	// taking effect: the answer to the call is lost.
	lost error
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) ListStreams(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	return slices.Clone(f.names), nil
}

func (f *fakeBackend) Describe(ctx context.Context, ref kstream.Ref) (*kstream.Summary, error) {
	return kstream.Describe(ctx, f.Fake, ref)
}

func (f *fakeBackend) ListShards(ctx context.Context, ref kstream.Ref) (*lineage.Graph, error) {
	return lineage.Load(ctx, f.Fake, lineage.ListOptions{StreamName: ref.Name, StreamARN: ref.ARN})
}

func (f *fakeBackend) Quota(ctx context.Context) (*reshard.Quota, error) {
	return reshard.LoadQuota(ctx, f.Fake)
}

func (f *fakeBackend) Sample(ctx context.Context, ref kstream.Ref, shards []*lineage.Shard, o reshard.SampleOptions) (*reshard.Sample, error) {
	return reshard.SampleTraffic(ctx, f.Fake, ref, shards, o)
}

func (f *fakeBackend) Reshard(ctx context.Context, ref kstream.Ref, p *reshard.Plan, o ReshardOptions) (*reshard.Result, error) {
	var api reshard.API = f.Fake
	if f.lost != nil {
		api = answerLost{f.Fake, f.lost}
	}
	x := &reshard.Executor{API: api, Stream: ref, Wait: o.Wait, OnEvent: o.OnEvent}
	return x.Run(ctx, p)
}

func (f *fakeBackend) Read(ctx context.Context, ref kstream.Ref, o ReadOptions) error {
	opts := tail.Options{StreamName: ref.Name, StreamARN: ref.ARN, Start: tail.StartLatest, PollInterval: o.PollInterval, OnPoll: o.OnPoll}
	deliver := func(batch []tail.Record) error {
		o.OnRecords(batch)
		return nil
	}
	_, err := tail.New(f.Fake, tail.NewMemoryStore(nil), opts, deliver).Run(ctx)
	return err
}

func (f *fakeBackend) ReadCheckpoint(path string) (tail.StreamIdentity, map[string]tail.Position, error) {
	return tail.ReadCheckpoint(path)
}

func (f *fakeBackend) Leases(ctx context.Context, g *lineage.Graph, sum *kstream.Summary) (map[string]*render.LeaseMark, error) {
	return f.leases(ctx, g, sum)
}

func (f *fakeBackend) Lag(ctx context.Context, ref kstream.Ref, g *lineage.Graph, sum *kstream.Summary, measure bool) (*consumer.Report, error) {
	f.mu.Lock()
	f.lagMeasure = append(f.lagMeasure, measure)
	src := f.lagSource
	f.mu.Unlock()
	if src == nil {
		return nil, errors.New("no positions")
	}
	return consumer.Lag(ctx, f.Fake, ref, g, sum, src, consumer.Options{Measure: measure})
}

// memCheckpoint is a tail checkpoint held in memory, as a consumer.Source.
type memCheckpoint map[string]tail.Position

func (m memCheckpoint) Ref() consumer.SourceRef {
	return consumer.SourceRef{Kind: consumer.SourceCheckpoint, Name: "orders.checkpoint"}
}

func (m memCheckpoint) Read(_ context.Context, g *lineage.Graph, _ *kstream.Summary) ([]consumer.ShardLag, string, error) {
	return consumer.FromCheckpoint(g, m), "", nil
}

// answerLost makes the reshard calls and then returns err, as a client
// does whose connection drops after the call was sent.
type answerLost struct {
	*fake.Fake
	err error
}

func (a answerLost) SplitShard(ctx context.Context, in *kinesis.SplitShardInput, o ...func(*kinesis.Options)) (*kinesis.SplitShardOutput, error) {
	if _, err := a.Fake.SplitShard(ctx, in, o...); err != nil {
		return nil, err
	}
	return nil, a.err
}

func (a answerLost) MergeShards(ctx context.Context, in *kinesis.MergeShardsInput, o ...func(*kinesis.Options)) (*kinesis.MergeShardsOutput, error) {
	if _, err := a.Fake.MergeShards(ctx, in, o...); err != nil {
		return nil, err
	}
	return nil, a.err
}

func (f *fakeBackend) addStream(name string, n int) {
	f.AddStream(name, n)
	f.mu.Lock()
	f.names = append(f.names, name)
	slices.Sort(f.names)
	f.mu.Unlock()
}

// newFake returns a fake with stream "orders": shards 0, 1, 2 (thirds);
// 1 split into 3 and 4; 4 merged with 2 into 5. Open: 0, 3, 5.
func newFake(t *testing.T) *fakeBackend {
	t.Helper()
	f := &fakeBackend{Fake: fake.New()}
	f.Now = fixedNow
	f.addStream("orders", 3)
	f.addStream("audit-log", 1)
	f.addStream("clicks", 2)
	f.SplitHalf("orders", "shardId-000000000001")
	f.Merge("orders", "shardId-000000000004", "shardId-000000000002")
	return f
}

func testOptions(b Backend, stream string) Options {
	o := Options{
		Backend:         b,
		Theme:           render.NewTheme(false),
		Now:             fixedNow,
		Location:        time.UTC,
		NoReader:        true,
		RefreshInterval: time.Hour,
		FigureInterval:  time.Hour,
		Wait:            kstream.WaitOptions{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Timeout: 10 * time.Second},
	}
	if stream != "" {
		o.Stream = kstream.Ref{Name: stream}
	}
	return o
}

// driver runs a model's commands the way bubbletea does, concurrently, and
// feeds their messages back to Update from the test goroutine.
type driver struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
	quit bool
}

func newDriver(t *testing.T, o Options, w, h int) *driver {
	t.Helper()
	d := &driver{t: t, m: New(o), msgs: make(chan tea.Msg, 1024)}
	t.Cleanup(func() { d.m.quit() })
	d.m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	d.start(d.m.Init())
	return d
}

func (d *driver) start(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() { d.msgs <- c() }()
}

// send is one message through Update, its command started.
func (d *driver) send(msg tea.Msg) {
	_, cmd := d.m.Update(msg)
	d.start(cmd)
}

// handle processes one message (a batch starts each command).
func (d *driver) handle(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			d.start(c)
		}
	case tea.QuitMsg:
		d.quit = true
	default:
		d.send(msg)
	}
}

// settle processes messages until none but spinner frames has come for
// 80 ms (what is left are timers, listeners with nothing to say, and work
// in progress that until waits for).
func (d *driver) settle() {
	d.t.Helper()
	idle := time.NewTimer(80 * time.Millisecond)
	defer idle.Stop()
	for {
		select {
		case msg := <-d.msgs:
			d.handle(msg)
			if _, spin := msg.(spinner.TickMsg); !spin {
				idle.Reset(80 * time.Millisecond)
			}
		case <-idle.C:
			return
		}
	}
}

// until processes messages until cond holds; it fails the test after 10 s.
func (d *driver) until(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case msg := <-d.msgs:
			d.handle(msg)
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			d.t.Fatalf("timed out waiting for %s; screen:\n%s", what, d.m.View())
		}
	}
}

// keys types keys: names such as "down", "tab", "enter", "esc", "ctrl+u",
// or text (each rune a key).
func (d *driver) keys(keys ...string) {
	d.t.Helper()
	for _, k := range keys {
		d.send(keyMsg(k))
		d.settle()
	}
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+u":
		return tea.KeyMsg{Type: tea.KeyCtrlU}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// screen is the view without colour codes.
func (d *driver) screen() string { return ansi.Strip(d.m.View()) }

func (d *driver) statusText() string { return ansi.Strip(d.m.statusLine()) }

// mustContain fails unless the screen holds every string.
func (d *driver) mustContain(want ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range want {
		if !strings.Contains(s, w) {
			d.t.Fatalf("screen lacks %q:\n%s", w, s)
		}
	}
}

func (d *driver) mustNotContain(bad ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range bad {
		if strings.Contains(s, w) {
			d.t.Fatalf("screen holds %q:\n%s", w, s)
		}
	}
}

// loaded waits for the first listing.
func (d *driver) loaded() {
	d.t.Helper()
	d.until("the listing", func() bool { return d.m.stream.graph != nil && !d.m.stream.loading })
	d.settle()
}

// putKeys writes n records with keys k0..k(n-1) to the stream.
func putKeys(f *fakeBackend, stream string, n int) {
	for i := range n {
		f.Put(stream, "k"+itoa(i), []byte(`{"n":`+itoa(i)+`}`))
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

// record builds a delivered record for the record pane.
func record(shard, key, data string, sec int) tail.Record {
	return tail.Record{ShardID: shard, SequenceNumber: "4959" + itoa(sec), PartitionKey: key, Data: []byte(data),
		ArrivalTime: clock.Add(time.Duration(sec) * time.Second)}
}

func newTheme() render.Theme { return render.NewTheme(false) }
