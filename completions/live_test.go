package completions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
)

// fakeAPI serves ListShards from fake and ListStreams from a sorted
// list of names, in pages, the way the service does (NextToken) or the way
// kinesalite does (names only, HasMoreStreams and ExclusiveStartStreamName).
type fakeAPI struct {
	*fake.Fake
	*fake.StreamPages
}

// ListStreams is the scripted pages', not the fake's own listing.
func (a *fakeAPI) ListStreams(ctx context.Context, in *kinesis.ListStreamsInput, o ...func(*kinesis.Options)) (*kinesis.ListStreamsOutput, error) {
	return a.StreamPages.ListStreams(ctx, in, o...)
}

// pagesAPI lists names in pages of two; before runs ahead of every
// ListStreams call (page counts from 1), and an error it returns is the
// answer instead of the page.
func pagesAPI(names []string, kinesalite bool, before func(ctx context.Context, page int) error) *fakeAPI {
	p := &fake.StreamPages{Names: names, PageSize: 2, Kinesalite: kinesalite}
	if before != nil {
		p.Before = func(ctx context.Context, n int) (*kinesis.ListStreamsOutput, error) { return nil, before(ctx, n) }
	}
	return &fakeAPI{StreamPages: p}
}

func liveFor(api API) *Live {
	return &Live{Client: func(context.Context, string) (API, error) { return api, nil }}
}

func complete(fn cobra.CompletionFunc, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return fn(&cobra.Command{Use: "test"}, args, toComplete)
}

const wantLive = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder

var fiveStreams = []string{"audit", "clicks", "orders", "orders-dlq", "payments"}

func TestStreams(t *testing.T) {
	tests := []struct {
		name       string
		kinesalite bool
		prefix     string
		want       []cobra.Completion
	}{
		{"all", false, "", []cobra.Completion{
			"audit\tactive, provisioned", "clicks\tactive, on-demand", "orders\tactive, provisioned",
			"orders-dlq\tactive, on-demand", "payments\tactive, provisioned"}},
		{"prefix across pages", false, "or", []cobra.Completion{"orders\tactive, provisioned", "orders-dlq\tactive, on-demand"}},
		{"exact name", false, "orders-dlq", []cobra.Completion{"orders-dlq\tactive, on-demand"}},
		{"no match", false, "zzz", nil},
		{"arn", false, "arn:aws:kinesis:us-east-1:123456789012:stream/o", []cobra.Completion{
			"arn:aws:kinesis:us-east-1:123456789012:stream/orders\tactive, provisioned",
			"arn:aws:kinesis:us-east-1:123456789012:stream/orders-dlq\tactive, on-demand"}},
		{"kinesalite paging, names only", true, "", fiveStreams},
		{"kinesalite prefix", true, "pay", []cobra.Completion{"payments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := pagesAPI(fiveStreams, tt.kinesalite, nil)
			got, dir := complete(liveFor(api).Streams(), nil, tt.prefix)
			if !slices.Equal(got, tt.want) || dir != wantLive {
				t.Errorf("got %q, %v; want %q, %v", got, dir, tt.want, wantLive)
			}
			// Every page was read: 5 names in pages of 2.
			if len(api.Inputs) != 3 {
				t.Errorf("%d ListStreams calls, want 3: %+v", len(api.Inputs), api.Inputs)
			}
			// Later pages send only the NextToken (or, kinesalite, the last name).
			for i, in := range api.Inputs[1:] {
				if tt.kinesalite {
					if in.NextToken != nil || aws.ToString(in.ExclusiveStartStreamName) != fiveStreams[2*i+1] {
						t.Errorf("call %d: %+v", i+2, in)
					}
				} else if in.ExclusiveStartStreamName != nil || in.NextToken == nil {
					t.Errorf("call %d: %+v", i+2, in)
				}
			}
		})
	}
}

func TestStreamsFailQuietly(t *testing.T) {
	t.Setenv("BASH_COMP_DEBUG_FILE", "")
	boom := errors.New("AccessDeniedException: not authorized")
	tests := []struct {
		name   string
		live   *Live
		prefix string
	}{
		{"client cannot be built", &Live{Client: func(context.Context, string) (API, error) {
			return nil, errors.New("no AWS region is set")
		}}, ""},
		{"first page fails", liveFor(pagesAPI(fiveStreams, false, func(context.Context, int) error { return boom })), ""},
		// The listing stops after "audit", "clicks": "orders" may be on a
		// later page, so nothing is offered rather than a partial list.
		{"later page fails, matches may be missing", liveFor(pagesAPI(fiveStreams, false, func(_ context.Context, page int) error {
			if page > 1 {
				return boom
			}
			return nil
		})), "o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr := captureStd(t, func() {
				got, dir := complete(tt.live.Streams(), nil, tt.prefix)
				if len(got) != 0 || dir != wantLive {
					t.Errorf("got %q, %v; want no candidates, %v", got, dir, wantLive)
				}
			})
			if stdout != "" || stderr != "" {
				t.Errorf("printed stdout %q, stderr %q; want nothing", stdout, stderr)
			}
		})
	}
}

func TestStreamsDebugLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "comp.log")
	t.Setenv("BASH_COMP_DEBUG_FILE", log)
	api := pagesAPI(fiveStreams, false, func(context.Context, int) error {
		return errors.New("AccessDeniedException: not authorized")
	})
	if got, _ := complete(liveFor(api).Streams(), nil, ""); len(got) != 0 {
		t.Fatalf("got %q", got)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[Debug] completion of streams: AccessDeniedException: not authorized\n"; string(b) != want {
		t.Errorf("debug log %q, want %q", b, want)
	}
}

// A listing cut by the deadline is kept when it holds every match.
func TestStreamsDeadlinePartial(t *testing.T) {
	stall := func(ctx context.Context, page int) error {
		if page > 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	names := []string{"audit", "billing", "clicks", "orders"}
	tests := []struct {
		prefix string
		want   []cobra.Completion
	}{
		// Page 1 is "audit", "billing": everything starting with "a" is in.
		{"a", []cobra.Completion{"audit\tactive, provisioned"}},
		// "billing" may have a neighbour "billing-2" on the next page.
		{"b", nil},
		{"", nil},
		{"c", nil},
	}
	for _, tt := range tests {
		t.Run("prefix "+tt.prefix, func(t *testing.T) {
			live := liveFor(pagesAPI(names, false, stall))
			live.Timeout = 400 * time.Millisecond
			start := time.Now()
			got, _ := complete(live.Streams(), nil, tt.prefix)
			// Bounded by the timeout, not by the stalled pages: a second of
			// slack for a loaded machine still tells the two apart.
			if el := time.Since(start); el > live.Timeout+time.Second {
				t.Errorf("took %s, want about the timeout %s", el, live.Timeout)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A lookup that ignores its context still ends at the timeout.
func TestLookupHardStop(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	live := &Live{Timeout: 300 * time.Millisecond, Client: func(context.Context, string) (API, error) {
		<-release // a credential process that hangs
		return nil, errors.New("too late")
	}}
	for _, fn := range []cobra.CompletionFunc{
		live.Streams(),
		live.Shards(func(*cobra.Command, []string) ShardQuery { return ShardQuery{Stream: "orders"} }),
	} {
		start := time.Now()
		got, dir := complete(fn, []string{"orders"}, "")
		el := time.Since(start)
		if len(got) != 0 || dir != wantLive {
			t.Errorf("got %q, %v", got, dir)
		}
		if el < live.Timeout || el > live.Timeout+200*time.Millisecond {
			t.Errorf("took %s, want the timeout %s", el, live.Timeout)
		}
	}
}

// shardStream builds "orders": four shards of 25%; 0 split into 4 and 5
// (12.5% each); 2 and 3 merged into 6 (50%); then 0 trimmed.
func shardStream(t *testing.T) *fakeAPI {
	t.Helper()
	f := fake.New()
	f.AddStream("orders", 4)
	f.SplitHalf("orders", "shardId-000000000000")
	f.Merge("orders", "shardId-000000000002", "shardId-000000000003")
	f.Trim("orders", "shardId-000000000000")
	return &fakeAPI{Fake: f, StreamPages: &fake.StreamPages{}}
}

func TestShards(t *testing.T) {
	open := []cobra.Completion{
		"shardId-000000000004\topen 12.50%",
		"shardId-000000000005\topen 12.50%",
		"shardId-000000000001\topen 25.00%",
		"shardId-000000000006\topen 50.00%",
	}
	closed := []cobra.Completion{
		"shardId-000000000002\tclosed 25.00%",
		"shardId-000000000003\tclosed 25.00%",
	}
	tests := []struct {
		name   string
		q      ShardQuery
		prefix string
		want   []cobra.Completion
	}{
		{"open by range, then closed by id; trimmed left out", ShardQuery{Stream: "orders"}, "", append(slices.Clone(open), closed...)},
		{"open only", ShardQuery{Stream: "orders", OpenOnly: true}, "", open},
		{"full-id prefix", ShardQuery{Stream: "orders"}, "shardId-00000000000", append(slices.Clone(open), closed...)},
		{"full-id prefix narrows", ShardQuery{Stream: "orders"}, "shardId-000000000002", []cobra.Completion{"shardId-000000000002\tclosed 25.00%"}},
		{"digits match the short number", ShardQuery{Stream: "orders"}, "5", []cobra.Completion{"5\topen 12.50%"}},
		{"exclude in any form", ShardQuery{Stream: "orders", OpenOnly: true, Exclude: []string{"4", "shardId-000000000006"}},
			"", []cobra.Completion{"shardId-000000000005\topen 12.50%", "shardId-000000000001\topen 25.00%"}},
		{"the ARN is sent as StreamARN", ShardQuery{Stream: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", OpenOnly: true}, "", open},
		{"no stream yet", ShardQuery{}, "", nil},
		{"unknown stream", ShardQuery{Stream: "nope"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := shardStream(t)
			var listed []kinesis.ListShardsInput
			api.Hook = func(op string, in any) error {
				if op == "ListShards" {
					listed = append(listed, *in.(*kinesis.ListShardsInput))
				}
				return nil
			}
			var asked []string
			live := &Live{Client: func(_ context.Context, stream string) (API, error) {
				asked = append(asked, stream)
				return api, nil
			}}
			got, dir := complete(live.Shards(func(*cobra.Command, []string) ShardQuery { return tt.q }), nil, tt.prefix)
			if !slices.Equal(got, tt.want) || dir != wantLive {
				t.Errorf("got %q, %v\nwant %q, %v", got, dir, tt.want, wantLive)
			}
			if tt.q.Stream == "" {
				if len(asked) != 0 || len(listed) != 0 {
					t.Errorf("no stream: client built for %q, %d ListShards calls", asked, len(listed))
				}
				return
			}
			// The client is built for the stream (an ARN's region counts).
			if !slices.Equal(asked, []string{tt.q.Stream}) {
				t.Errorf("client built for %q, want [%q]", asked, tt.q.Stream)
			}
			if len(listed) == 0 {
				t.Fatal("no ListShards call")
			}
			first := listed[0]
			if strings.HasPrefix(tt.q.Stream, "arn:") {
				if aws.ToString(first.StreamARN) != tt.q.Stream || first.StreamName != nil {
					t.Errorf("ListShards sent name %v, ARN %v; want the ARN alone", aws.ToString(first.StreamName), aws.ToString(first.StreamARN))
				}
			} else if aws.ToString(first.StreamName) != tt.q.Stream || first.StreamARN != nil {
				t.Errorf("ListShards sent name %v, ARN %v; want the name alone", aws.ToString(first.StreamName), aws.ToString(first.StreamARN))
			}
		})
	}
}

func TestEnum(t *testing.T) {
	values := []Value{{"tree", "the lineage tree"}, {"table", ""}, {"json", "one JSON document"}}
	got, dir := complete(Enum(values...), nil, "t")
	want := []cobra.Completion{"tree\tthe lineage tree", "table"}
	if !slices.Equal(got, want) || dir != wantLive {
		t.Errorf("got %q, %v; want %q", got, dir, want)
	}

	byCmd := EnumByCommand(map[string][]Value{
		"":     {{"table", ""}, {"json", ""}},
		"tail": {{"raw", ""}, {"json", ""}},
	})
	for _, tt := range []struct {
		cmd  string
		want []cobra.Completion
	}{
		{"tail", []cobra.Completion{"raw", "json"}},
		{"streams", []cobra.Completion{"table", "json"}},
	} {
		got, _ := byCmd(&cobra.Command{Use: tt.cmd + " STREAM"}, nil, "")
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.cmd, got, tt.want)
		}
	}
	none := EnumByCommand(map[string][]Value{"tail": {{"raw", ""}}})
	if got, dir := none(&cobra.Command{Use: "tree"}, nil, ""); len(got) != 0 || dir != wantLive {
		t.Errorf("no entry and no fallback: got %q, %v", got, dir)
	}
}

func TestFiles(t *testing.T) {
	if got, dir := complete(Files(), nil, ""); got != nil || dir != cobra.ShellCompDirectiveDefault {
		t.Errorf("Files(): %q, %v", got, dir)
	}
	if got, dir := complete(Files("json"), nil, ""); !slices.Equal(got, []string{"json"}) || dir != cobra.ShellCompDirectiveFilterFileExt {
		t.Errorf("Files(json): %q, %v", got, dir)
	}
}

func TestParseUse(t *testing.T) {
	tests := []struct {
		use  string
		want []string
	}{
		{"streams", nil},
		{"tree STREAM", []string{"STREAM"}},
		{"split STREAM SHARD", []string{"STREAM", "SHARD"}},
		{"merge STREAM SHARD SHARD", []string{"STREAM", "SHARD", "SHARD"}},
		{"dashboard [STREAM]", []string{"STREAM"}},
		{"create STREAM --shards N | --on-demand", []string{"STREAM"}},
		{"scale STREAM --to N", []string{"STREAM"}},
		{"tail STREAM [flags]", []string{"STREAM", "flags"}},
		{"help [command]", []string{"command"}},
		{"get STREAM SHARD...", []string{"STREAM", "SHARD"}},
	}
	for _, tt := range tests {
		if got := ParseUse(tt.use); !slices.Equal(got, tt.want) {
			t.Errorf("ParseUse(%q) = %q, want %q", tt.use, got, tt.want)
		}
	}
}

func TestPositional(t *testing.T) {
	api := shardStream(t)
	api.StreamPages = &fake.StreamPages{Names: []string{"orders", "payments"}, PageSize: 100}
	fn := liveFor(api).Positional([]string{ParamStream, ParamShard, ParamShard}, true)
	tests := []struct {
		args   []string
		prefix string
		want   []cobra.Completion
		dir    cobra.ShellCompDirective
	}{
		{nil, "p", []cobra.Completion{"payments\tactive, on-demand"}, wantLive},
		{[]string{"orders"}, "shardId-0000000000", []cobra.Completion{
			"shardId-000000000004\topen 12.50%", "shardId-000000000005\topen 12.50%",
			"shardId-000000000001\topen 25.00%", "shardId-000000000006\topen 50.00%"}, wantLive},
		// The shard already given is not offered again.
		{[]string{"orders", "1"}, "", []cobra.Completion{
			"shardId-000000000004\topen 12.50%", "shardId-000000000005\topen 12.50%", "shardId-000000000006\topen 50.00%"}, wantLive},
		{[]string{"orders", "1", "6"}, "", nil, cobra.ShellCompDirectiveNoFileComp},
	}
	for _, tt := range tests {
		got, dir := complete(fn, tt.args, tt.prefix)
		if !slices.Equal(got, tt.want) || dir != tt.dir {
			t.Errorf("args %q %q: got %q, %v\nwant %q, %v", tt.args, tt.prefix, got, dir, tt.want, tt.dir)
		}
	}
	if got := StreamArg([]string{ParamStream, ParamShard}, []string{"orders", "7"}); got != "orders" {
		t.Errorf("StreamArg = %q", got)
	}
	if got := StreamArg([]string{ParamStream}, nil); got != "" {
		t.Errorf("StreamArg with no args = %q", got)
	}
}

// captureStd runs fn with os.Stdout and os.Stderr redirected to files and
// returns what was written to them.
func captureStd(t *testing.T, fn func()) (stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	func() {
		defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
		fn()
	}()
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return string(o), string(e)
}
