package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/charmbracelet/x/ansi"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// treeFake is the in-memory service with what `tree` tests need on top:
// an AT_TIMESTAMP answer and a stream that ignores partition keys.
type treeFake struct {
	*fake.Fake
	// atIDs answers a ListShards with a ShardFilter; nil ignores the filter
	// (kinesalite).
	atIDs []string
	// auto makes the stream on-demand with RecordDistributionStrategy AUTO.
	auto    bool
	filters []*types.ShardFilter
}

func (f *treeFake) ListShards(ctx context.Context, in *kinesis.ListShardsInput, opt ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	if in.ShardFilter != nil {
		f.filters = append(f.filters, in.ShardFilter)
	}
	if in.ShardFilter == nil || f.atIDs == nil {
		in2 := *in
		in2.ShardFilter = nil
		return f.Fake.ListShards(ctx, &in2, opt...)
	}
	// The filtered answer in one page.
	all, err := lineage.ListShards(ctx, f.Fake, lineage.ListOptions{StreamName: aws.ToString(in.StreamName)})
	if err != nil {
		return nil, err
	}
	filtered := &kinesis.ListShardsOutput{Shards: []types.Shard{}}
	for _, s := range all {
		if slices.Contains(f.atIDs, *s.ShardId) {
			filtered.Shards = append(filtered.Shards, s)
		}
	}
	return filtered, nil
}

func (f *treeFake) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opt ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	out, err := f.Fake.DescribeStreamSummary(ctx, in, opt...)
	if err == nil && f.auto {
		out.StreamDescriptionSummary.StreamModeDetails = &types.StreamModeDetails{StreamMode: types.StreamModeOnDemand}
		out.StreamDescriptionSummary.RecordDistributionStrategy = types.RecordDistributionStrategyAuto
	}
	return out, err
}

// newTreeFake holds stream "s" taken through split, merge, split:
// 0 → 1 + 2, 1 + 2 → 3, 3 → 4 + 5, all at exact halves.
func newTreeFake() *treeFake {
	fk := fake.New()
	fk.PageSize = 2 // every listing pages
	fk.AddStream("s", 1)
	a, b := fk.SplitHalf("s", treeSID(0))
	c := fk.Merge("s", a, b)
	fk.SplitHalf("s", c)
	return &treeFake{Fake: fk}
}

// fakeCreated is when fake creates its streams.
var treeFakeCreated = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func runTreeTest(t *testing.T, api treeAPI, ios func(*IOStreams), opts TreeOptions) (stdout, stderr string, err error) {
	t.Helper()
	io, _, out, errOut := TestIO()
	if ios != nil {
		ios(io)
	}
	f := NewFactory(io)
	if opts.Output == "" {
		opts.Output = "tree"
	}
	err = runTree(context.Background(), f, api, kstream.Ref{Name: "s"}, &opts)
	return out.String(), errOut.String(), err
}

// TestTreeUsageErrors: bad input is refused before any call, with exit 2,
// one line on stderr and nothing on stdout.
func TestTreeUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tree"}, "error: kinesis-shards tree takes STREAM (got 0 argument(s)); see --help\n"},
		{[]string{"tree", "s", "-o", "yaml"}, "error: unknown output format \"yaml\": use one of tree, table, json, dot, mermaid\n"},
		{[]string{"tree", "s", "--at", "yesterday"}, "error: --at: \"yesterday\" is not a timestamp: use RFC 3339 (2026-11-30T10:00:00Z), Unix seconds, or a duration ago (15m, 2h)\n"},
		{[]string{"tree", "s", "--at", ""}, "error: --at: empty timestamp: use RFC 3339 (2026-11-30T10:00:00Z), Unix seconds, or a duration ago (15m)\n"},
		{[]string{"tree", "s", "--at", "2999-01-01T00:00:00Z"}, "error: --at: timestamp 2999-01-01T00:00:00Z is in the future\n"},
		{[]string{"tree", "s", "--open", "--at", "1h"}, "error: --open and --at do not go together: --at shows the shards open at that time, --open those open now\n"},
		{[]string{"tree", "s", "--key", ""}, "error: --key: a partition key must have 1 to 256 characters, not 0\n"},
		{[]string{"tree", "s", "--key", strings.Repeat("k", 257)}, "error: --key: a partition key must have 1 to 256 characters, not 257\n"},
		{[]string{"tree", "not a stream"}, "error: invalid stream: \"not a stream\" is not a stream name (1 to 128 characters of a-z, A-Z, 0-9, _ . -) or a stream ARN\n"},
		{[]string{"tree", "s", "--wdie"}, "error: unknown flag: --wdie\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			ios, _, out, errOut := TestIO()
			f := NewFactory(ios)
			f.KinesisClient = func(context.Context, string) (*kinesis.Client, error) {
				t.Fatal("a client was built for a usage error")
				return nil, nil
			}
			code := run(context.Background(), f, c.args)
			if code != exitUsage || out.Len() != 0 || errOut.String() != c.want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out.String(), errOut.String(), c.want)
			}
		})
	}
}

func TestTreeUnknownStreamWording(t *testing.T) {
	_, _, err := runTreeTest(t, &treeFake{Fake: fake.New()}, nil, TreeOptions{})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want ResourceNotFoundException", err)
	}
	msg, code := describeError(context.Background(), err, errContext{stream: "s", region: "us-east-1", endpoint: "http://127.0.0.1:4568"})
	if msg != `stream "s" was not found in region us-east-1 (endpoint http://127.0.0.1:4568)` || code != exitFailure {
		t.Fatalf("%q, exit %d", msg, code)
	}
}

// TestTreeTerminal: on a terminal the tree has short ids and colour, and
// is cut to the terminal's width; JSON never has colour.
func TestTreeTerminal(t *testing.T) {
	fk := newTreeFake()
	term := func(io *IOStreams) { io.StdoutTTY, io.Width = true, 200 }
	out, _, err := runTreeTest(t, fk, term, TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `SHARD      STATE   SHARE
○ 0        closed   100%  split into 1 + 2
├─○ 1      closed    50%
│ └─╌▷ 3                  merge of 1 + 2, drawn under 2
└─○ 2      closed    50%
  └─○ 3    closed   100%  merge of 1 + 2; split into 4 + 5
    ├─● 4  open      50%
    └─● 5  open      50%
`
	if !strings.Contains(out, "\x1b[") || ansi.Strip(out) != want {
		t.Fatalf("terminal tree (escapes stripped):\n%s\nwant (coloured):\n%s", ansi.Strip(out), want)
	}

	noColor := func(io *IOStreams) { term(io); io.ColorDisabled = true; io.Width = 30 }
	out, _, _ = runTreeTest(t, fk, noColor, TreeOptions{})
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.Contains(l, "\x1b") || ansi.StringWidth(l) > 30 {
			t.Fatalf("--no-color tree at width 30 has line %q", l)
		}
	}
	if !strings.Contains(out, "○ 0        closed   100%  spl…\n") {
		t.Fatalf("lines are not cut to the width:\n%s", out)
	}
	// --wide lines are never cut.
	out, _, _ = runTreeTest(t, fk, noColor, TreeOptions{Wide: true})
	if strings.Contains(out, "…") || !strings.Contains(out, "0..340282366920938463463374607431768211455") {
		t.Fatalf("--wide on a narrow terminal:\n%s", out)
	}
	for _, o := range []string{"json", "dot", "mermaid"} {
		out, _, _ = runTreeTest(t, fk, term, TreeOptions{Output: o})
		if strings.Contains(out, "\x1b") || strings.Contains(out, `"shardId-000000000000"`) == (o == "mermaid") {
			t.Fatalf("-o %s on a terminal:\n%s", o, out)
		}
	}
	out, _, _ = runTreeTest(t, fk, term, TreeOptions{Output: "table"})
	if !strings.Contains(out, "\x1b[") || !strings.HasPrefix(ansi.Strip(out), "SHARD  STATE   PARENTS  CHILDREN  SHARE  DEPTH\n0      closed  -        1,2       100%   0\n") {
		t.Fatalf("terminal table:\n%s", ansi.Strip(out))
	}
}

// TestTreeAt covers the three answers to an AT_TIMESTAMP listing: the
// filter applied, ignored (every shard), and nothing open.
func TestTreeAt(t *testing.T) {
	at := treeFakeCreated.Add(time.Hour)
	type doc struct {
		Filter, At string
		Shards     []struct{ ShardID, State string }
	}
	read := func(t *testing.T, out string) (d doc, ids []string) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		for _, s := range d.Shards {
			ids = append(ids, s.ShardID+" "+s.State)
		}
		return d, ids
	}

	t.Run("applied", func(t *testing.T) {
		fk := newTreeFake()
		fk.atIDs = []string{treeSID(1), treeSID(2)}
		out, errOut, err := runTreeTest(t, fk, nil, TreeOptions{Output: "json", At: &at})
		if err != nil || errOut != "" {
			t.Fatalf("err %v, stderr %q", err, errOut)
		}
		d, ids := read(t, out)
		// Closed, not trimmed: states come from the whole listing.
		if d.Filter != "at" || d.At != "2026-11-30T11:00:00Z" || !slices.Equal(ids, []string{treeSID(1) + " closed", treeSID(2) + " closed"}) {
			t.Fatalf("filter %q at %q shards %v", d.Filter, d.At, ids)
		}
		if len(fk.filters) != 1 || fk.filters[0].Type != types.ShardFilterTypeAtTimestamp || !fk.filters[0].Timestamp.Equal(at) {
			t.Fatalf("filters sent: %+v", fk.filters)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		fk := newTreeFake() // answers every shard, like kinesalite
		out, errOut, err := runTreeTest(t, fk, nil, TreeOptions{Output: "json", At: &at})
		if err != nil {
			t.Fatal(err)
		}
		d, ids := read(t, out)
		wantErr := "warning: cannot tell which shards were open at 2026-11-30T11:00:00Z: the service's answer (6 shards) is not one set of shards covering the key space (a backend that ignores the AT_TIMESTAMP filter, or a time within a reshard); showing every shard\n"
		if errOut != wantErr || d.Filter != "" || len(ids) != 6 {
			t.Fatalf("stderr %q, filter %q, shards %v", errOut, d.Filter, ids)
		}
	})
	t.Run("none open", func(t *testing.T) {
		fk := newTreeFake()
		fk.atIDs = []string{}
		out, errOut, err := runTreeTest(t, fk, nil, TreeOptions{Output: "json", At: &at})
		if err != nil {
			t.Fatal(err)
		}
		d, ids := read(t, out)
		if errOut != "note: the service lists no shard of stream s as open at 2026-11-30T11:00:00Z\n" || d.Filter != "at" || len(ids) != 0 {
			t.Fatalf("stderr %q, filter %q, shards %v", errOut, d.Filter, ids)
		}
	})
	t.Run("before creation", func(t *testing.T) {
		fk := newTreeFake()
		fk.atIDs = []string{treeSID(0)}
		early := treeFakeCreated.Add(-time.Minute)
		out, errOut, err := runTreeTest(t, fk, nil, TreeOptions{At: &early})
		if err != nil {
			t.Fatal(err)
		}
		if errOut != "note: stream s was created at 2026-11-30T10:00:00Z, after 2026-11-30T09:59:00Z: no shard was open then\n" || out != "SHARD  STATE  SHARE\n" || len(fk.filters) != 0 {
			t.Fatalf("stderr %q, stdout %q, filters %d", errOut, out, len(fk.filters))
		}
	})
}

func TestTreeKey(t *testing.T) {
	key := "customer-4" // MD5 starts 0x74: the lower half, so 0, 1, 3, 4
	out, errOut, err := runTreeTest(t, newTreeFake(), nil, TreeOptions{Key: &key})
	if err != nil || errOut != "" {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	var marked []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "◆") {
			marked = append(marked, regexp.MustCompile(`shardId-\d{12}`).FindString(l))
		}
	}
	if !strings.Contains(out, "KEY") || !slices.Equal(marked, []string{treeSID(0), treeSID(1), treeSID(3), treeSID(4)}) {
		t.Fatalf("key marks on %v:\n%s", marked, out)
	}

	// An on-demand stream with AUTO distribution ignores keys: no path.
	fk := newTreeFake()
	fk.auto = true
	out, errOut, err = runTreeTest(t, fk, nil, TreeOptions{Output: "json", Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Mode, Key, KeyHash, KeyNote string
		Shards                      []map[string]any
	}
	json.Unmarshal([]byte(out), &d)
	if errOut != "note: --key marks no path: the stream places records without regard to their partition keys (RecordDistributionStrategy AUTO)\n" ||
		d.Mode != "ON_DEMAND" || d.Key != key || d.KeyHash != "154260703947577790970174722159507174742" || !strings.Contains(d.KeyNote, "AUTO") {
		t.Fatalf("stderr %q, doc %+v", errOut, d)
	}
	for _, s := range d.Shards {
		if _, ok := s["keyPath"]; ok {
			t.Fatalf("shard %v has a keyPath on a stream that ignores keys", s["shardId"])
		}
	}
	out, _, _ = runTreeTest(t, fk, nil, TreeOptions{Key: &key})
	if strings.Contains(out, "◆") || strings.Contains(out, "KEY") {
		t.Fatalf("tree marks a key on a stream that ignores keys:\n%s", out)
	}
}
