package cmd

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/render/dashboard"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// pagedStreams adds ListStreams to the in-memory Kinesis: the fake's
// streams, one per page, by NextToken.
type pagedStreams struct {
	*fake.Fake
	names []string
}

func (p *pagedStreams) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, _ ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	i := 0
	if in.NextToken != nil {
		i, _ = strconv.Atoi(*in.NextToken)
	}
	out := &kinesis.ListStreamsOutput{HasMoreStreams: aws.Bool(i+1 < len(p.names))}
	if i < len(p.names) {
		out.StreamSummaries = []types.StreamSummary{{StreamName: aws.String(p.names[i])}}
	}
	if i+1 < len(p.names) {
		out.NextToken = aws.String(strconv.Itoa(i + 1))
	}
	return out, nil
}

// newBackendFake: stream "orders" of 2 shards, shard 1 split into 2 and 3
// (open: 0, 2, 3), and stream "clicks".
func newBackendFake() *pagedStreams {
	fk := fake.New()
	fk.AddStream("orders", 2)
	fk.AddStream("clicks", 1)
	fk.SplitHalf("orders", "shardId-000000000001")
	return &pagedStreams{Fake: fk, names: []string{"orders", "clicks"}}
}

// The backend makes the calls the commands make, on whatever client it is
// given: here the in-memory Kinesis, so no emulator is needed.
func TestDashboardBackend(t *testing.T) {
	api := newBackendFake()
	b := &dashboardBackend{api: api}
	ctx := t.Context()
	ref := kstream.Ref{Name: "orders"}

	names, err := b.ListStreams(ctx)
	if err != nil || !slices.Equal(names, []string{"clicks", "orders"}) {
		t.Fatalf("ListStreams: %v, %v", names, err)
	}
	sum, err := b.Describe(ctx, ref)
	if err != nil || sum.ARN != api.Stream("orders").ARN || sum.Status != types.StreamStatusActive {
		t.Fatalf("Describe: %+v, %v", sum, err)
	}
	g, err := b.ListShards(ctx, ref)
	if err != nil || g.Len() != 4 || len(g.Open()) != 3 {
		t.Fatalf("ListShards: %v", err)
	}
	api.ShardLimit = 10
	q, err := b.Quota(ctx)
	if err != nil || q.ShardLimit != 10 || q.OpenShards != 4 {
		t.Fatalf("Quota: %+v, %v", q, err)
	}

	// Sample: the recent records of one shard.
	for i := range 50 {
		api.Put("orders", "k"+strconv.Itoa(i), []byte("x"))
	}
	s, err := b.Sample(ctx, ref, g.Open()[:1], reshard.SampleOptions{})
	if err != nil || s.Records != len(api.ShardRecords("orders", g.Open()[0].ID)) || s.Records == 0 {
		t.Fatalf("Sample: %+v, %v", s, err)
	}

	// Lag: a tail checkpoint's positions, measured as `lag` measures them.
	shard0 := g.Open()[0].ID
	recs := api.ShardRecords("orders", shard0)
	cp := filepath.Join(t.TempDir(), "orders.checkpoint")
	store, err := tail.OpenFile(cp, tail.StreamIdentity{Name: "orders", ARN: sum.ARN, Created: sum.Created}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, map[string]tail.Position{shard0: {SequenceNumber: recs[0].Seq}, "shardId-000000000001": {ShardEnd: true}}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	b.lag = lagSource(cp, "", "", nil)
	// A second later, the first unread record of every shard is a
	// second old: that is how far behind the tip each read is.
	later := recs[len(recs)-1].Arrival.Add(time.Second)
	api.Now = func() time.Time { return later }
	for _, measure := range []bool{true, false} {
		r, err := b.Lag(ctx, ref, g, sum, measure)
		if err != nil {
			t.Fatalf("Lag: %v", err)
		}
		got := map[string]string{}
		for _, sl := range r.Shards {
			got[sl.ShardID] = string(sl.State)
			if sl.MillisBehindLatest != nil {
				got[sl.ShardID] += " " + strconv.FormatInt(*sl.MillisBehindLatest, 10)
			}
		}
		// The fake answers the age of the first record left unread.
		age := func(shard string, i int) string {
			return strconv.FormatInt(later.Sub(api.ShardRecords("orders", shard)[i].Arrival).Milliseconds(), 10)
		}
		want := map[string]string{shard0: "reading " + age(shard0, 1), "shardId-000000000001": "finished",
			"shardId-000000000002": "not-started " + age("shardId-000000000002", 0), "shardId-000000000003": "not-started " + age("shardId-000000000003", 0)}
		if !measure {
			want = map[string]string{shard0: "reading", "shardId-000000000001": "finished", "shardId-000000000002": "not-started", "shardId-000000000003": "not-started"}
		}
		if len(recs) < 3 || !maps.Equal(got, want) {
			t.Fatalf("Lag (measure %v) with %d records on %s: %v, want %v", measure, len(recs), shard0, got, want)
		}
	}

	// Reshard: the executor's run, its events passed on.
	in := reshard.Input{Stream: reshard.Stream{Name: "orders", Status: sum.Status, Mode: sum.Mode}, Graph: g}
	p, err := reshard.NewPlan(in, reshard.SplitGoal{Shard: "shardId-000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []reshard.EventKind
	res, err := b.Reshard(ctx, ref, p, dashboard.ReshardOptions{
		Wait:    kstream.WaitOptions{MinDelay: time.Millisecond, MaxDelay: time.Millisecond},
		OnEvent: func(e reshard.Event) { kinds = append(kinds, e.Kind) }})
	if err != nil || len(res.Done) != 1 || !slices.Equal(res.Done[0].Opened, []string{"shardId-000000000004", "shardId-000000000005"}) {
		t.Fatalf("Reshard: %+v, %v", res, err)
	}
	if kinds[0] != reshard.EventSend || kinds[len(kinds)-1] != reshard.EventDone {
		t.Fatalf("events %v", kinds)
	}
	if got := api.OpenShards("orders"); !slices.Equal(got, []string{"shardId-000000000004", "shardId-000000000005", "shardId-000000000002", "shardId-000000000003"}) {
		t.Fatalf("open %v", got)
	}
}

// Read is a tail from the tip of every open shard: it polls the open
// shards only, delivers what is written after it started, and ends when
// its context does.
func TestDashboardBackendRead(t *testing.T) {
	api := newBackendFake()
	api.Put("orders", "before", []byte("old"))
	b := &dashboardBackend{api: api}
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	polled := map[string]bool{}
	var keys []string
	done := make(chan error, 1)
	go func() {
		done <- b.Read(ctx, kstream.Ref{Name: "orders"}, dashboard.ReadOptions{
			PollInterval: 200 * time.Millisecond,
			OnPoll: func(s tail.PollStats) {
				mu.Lock()
				polled[s.ShardID] = true
				mu.Unlock()
			},
			OnRecords: func(batch []tail.Record) {
				mu.Lock()
				for _, r := range batch {
					keys = append(keys, r.PartitionKey)
				}
				mu.Unlock()
			},
		})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("poll of every open shard", func() bool { return len(polled) == 3 })
	for i := range 6 {
		api.Put("orders", "new"+strconv.Itoa(i), []byte("x"))
	}
	waitFor("records", func() bool { return len(keys) == 6 })
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatalf("Read: %v", err)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "new0,new1,new2,new3,new4,new5" {
		t.Fatalf("records %v", keys)
	}
	for shard := range api.GetRecordsTimes() {
		if !slices.Contains(api.OpenShards("orders"), shard) {
			t.Fatalf("the reader read %s, which is closed", shard)
		}
	}
}

// The dashboard runs on the backend with no emulator: the picker lists
// the streams and a stream opens with its tree.
func TestDashboardOnBackend(t *testing.T) {
	api := newBackendFake()
	m := dashboard.New(dashboard.Options{
		Backend:         &dashboardBackend{api: api},
		Theme:           render.NewTheme(false),
		NoReader:        true,
		RefreshInterval: time.Hour,
		FigureInterval:  time.Hour,
		Context:         t.Context(),
	})
	d := &fmDash{t: t, m: m, msgs: make(chan tea.Msg, 256)}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	d.start(m.Init())
	d.until(10*time.Second, func(v string) bool { return strings.Contains(v, "2 streams") })
	// clicks is first; j moves to orders.
	for _, k := range []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune{'j'}}, {Type: tea.KeyEnter}} {
		_, cmd := m.Update(k)
		d.start(cmd)
	}
	v := d.until(10*time.Second, func(v string) bool { return strings.Contains(v, "3 open / 4 shards") })
	if !strings.Contains(v, "split into 2 + 3") {
		t.Fatalf("screen:\n%s", v)
	}
}
