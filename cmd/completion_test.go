package cmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// The directive of every live lookup and enum flag.
const liveDirective = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder

// compResult is what one `__complete` run printed.
type compResult struct {
	cands     []string
	directive cobra.ShellCompDirective
	stderr    string
	elapsed   time.Duration
}

// parseComplete reads `__complete` output: one candidate a line, then
// ":<directive>" as the last line.
func parseComplete(t *testing.T, stdout string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasSuffix(stdout, "\n") || !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete stdout does not end in a directive line:\n%s", stdout)
	}
	return lines[:len(lines)-1], cobra.ShellCompDirective(d)
}

// The commands of the SPEC that the tests complete against. Each one that
// is still a hidden placeholder in the tree is replaced by a stand-in with
// the SPEC's Use line and flags, so the tests hold whether or not the real
// command has landed; once it has, the real one is tested.
func standIns() []*cobra.Command {
	notBuilt := func(*cobra.Command, []string) error { return fmt.Errorf("stand-in") }
	mk := func(use string, flags ...string) *cobra.Command {
		c := &cobra.Command{Use: use, RunE: notBuilt}
		for _, fl := range flags {
			c.Flags().String(fl, "", "")
		}
		return c
	}
	return []*cobra.Command{
		mk("tree STREAM"),
		mk("tail STREAM", "shard", "checkpoint", "format"),
		mk("split STREAM SHARD"),
		mk("merge STREAM SHARD SHARD"),
		mk("scale STREAM --to N", "method"),
	}
}

// completionTree is the real command tree with stand-ins (see standIns).
// registerCompletions runs again for them: it leaves what it has already
// registered alone.
func completionTree(f *Factory) *cobra.Command {
	root := NewRootCmd(f)
	for _, s := range standIns() {
		if c, _, err := root.Find([]string{s.Name()}); err == nil && c != root {
			if !c.Hidden {
				continue
			}
			root.RemoveCommand(c)
		}
		root.AddCommand(s)
	}
	registerCompletions(root, f)
	return root
}

// completeIn runs `kinesis-shards __complete args...` in-process against
// endpoint ("" = the package's emulator), with the client runCLI builds.
func completeIn(t *testing.T, endpoint string, args ...string) compResult {
	t.Helper()
	e := emulator.Require(t)
	if endpoint == "" {
		endpoint = e.Endpoint
	}
	ios, _, out, errOut := TestIO()
	f := NewFactory(ios)
	f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
		o := e.ClientOptions()
		if region == "" {
			region = o.Region
		}
		cfg := aws.Config{Region: region, Credentials: o.Credentials, HTTPClient: o.HTTPClient, Retryer: awscall.KinesisRetryer}
		return newKinesisClient(cfg, clientConfig{EndpointURL: endpoint}), nil
	}
	root := completionTree(f)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("__complete %q: %v", args, err)
	}
	r := compResult{elapsed: time.Since(start), stderr: errOut.String()}
	r.cands, r.directive = parseComplete(t, out.String())
	return r
}

// quiet checks that cobra's own directive note is all there is on stderr
// (the shell scripts discard stderr, but nothing else belongs there).
func quiet(t *testing.T, r compResult) {
	t.Helper()
	if !strings.HasPrefix(r.stderr, "Completion ended with directive: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want only cobra's directive note", r.stderr)
	}
}

// splitStream creates a stream of two shards and splits shard 1 in half:
// shard 0 (50%) and shards 2 and 3 (25% each) are open, shard 1 closed.
func splitStream(t *testing.T) string {
	t.Helper()
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 2)
	g, err := lineage.Load(t.Context(), c, lineage.ListOptions{StreamName: name})
	if err != nil {
		t.Fatal(err)
	}
	parent := g.Shard("shardId-000000000001")
	if parent == nil {
		t.Fatalf("no shardId-000000000001 in %v", g.Shards())
	}
	if _, err := c.SplitShard(t.Context(), &kinesis.SplitShardInput{
		StreamName:         aws.String(name),
		ShardToSplit:       aws.String(parent.ID),
		NewStartingHashKey: aws.String(parent.Range.Midpoint().String()),
	}); err != nil {
		t.Fatal(err)
	}
	e.WaitActive(t, c, name)
	return name
}

// streamDesc is the description a listed stream gets: none from backends
// that send only StreamNames (kinesis-mock, kinesalite), else its status
// and mode, as from the service.
func streamDesc(t *testing.T, c *kinesis.Client) string {
	t.Helper()
	out, err := c.ListStreams(t.Context(), &kinesis.ListStreamsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.StreamSummaries) == 0 {
		return ""
	}
	return "\tactive, provisioned"
}

func TestCompleteStreamNames(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	base := emulator.StreamName(t)
	e.CreateStream(t, c, base+"-a", 1)
	e.CreateStream(t, c, base+"-b", 1)
	desc := streamDesc(t, c)

	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"both", []string{"put", base}, []string{base + "-a" + desc, base + "-b" + desc}},
		{"one", []string{"put", base + "-b"}, []string{base + "-b" + desc}},
		{"after global flags", []string{"--region", emulator.Region, "tail", "--from-tip", base + "-a"}, []string{base + "-a" + desc}},
		{"none", []string{"put", base + "-c"}, nil},
		{"no second STREAM", []string{"put", base + "-a", base}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := completeIn(t, "", tt.args...)
			if !slices.Equal(r.cands, tt.want) {
				t.Errorf("candidates %q, want %q", r.cands, tt.want)
			}
			wantDir := liveDirective
			if tt.name == "no second STREAM" {
				wantDir = cobra.ShellCompDirectiveNoFileComp
			}
			if r.directive != wantDir {
				t.Errorf("directive %v, want %v", r.directive, wantDir)
			}
			quiet(t, r)
		})
	}
}

func TestCompleteShardIDs(t *testing.T) {
	name := splitStream(t)
	const (
		s0 = "shardId-000000000000\topen 50.00%"
		s2 = "shardId-000000000002\topen 25.00%"
		s3 = "shardId-000000000003\topen 25.00%"
		s1 = "shardId-000000000001\tclosed 50.00%"
	)
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		// split and merge act on open shards: no closed one is offered.
		{"split SHARD: open shards by range", []string{"split", name, ""}, []string{s0, s2, s3}},
		{"merge second SHARD: not the first again", []string{"merge", name, "0", ""}, []string{s2, s3}},
		{"tail --shard: open, then closed", []string{"tail", name, "--shard", ""}, []string{s0, s2, s3, s1}},
		{"tail --shard=: prefix", []string{"tail", name, "--shard=shardId-000000000001"}, []string{"shardId-000000000001\tclosed 50.00%"}},
		{"digits: the short number", []string{"tail", name, "--shard", "3"}, []string{"3\topen 25.00%"}},
		{"by ARN", []string{"split", "arn:aws:kinesis:us-east-1:" + emulator.Require(t).AccessKeyID() + ":stream/" + name, "shardId-00000000000"}, []string{s0, s2, s3}},
		{"unknown stream", []string{"split", name + "-missing", ""}, nil},
		{"--shard before STREAM", []string{"tail", "--shard", ""}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if e := emulator.Require(t); strings.HasPrefix(tt.args[1], "arn:") && !e.Caps.ARNOnly {
				t.Skipf("%s has no calls by StreamARN", e.Backend)
			}
			r := completeIn(t, "", tt.args...)
			if !slices.Equal(r.cands, tt.want) || r.directive != liveDirective {
				t.Errorf("got %q, %v\nwant %q, %v", r.cands, r.directive, tt.want, liveDirective)
			}
			quiet(t, r)
		})
	}
}

func TestCompleteFlagValues(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
		dir  cobra.ShellCompDirective
	}{
		{[]string{"streams", "-o", ""}, []string{"table\ta table", "json\tone JSON document"}, liveDirective},
		{[]string{"create", "x", "--output", "j"}, []string{"json\tone JSON document"}, liveDirective},
		{[]string{"tree", "x", "-o", ""}, []string{"tree\tthe lineage tree", "table\ta table of shards", "json\tone JSON document", "dot\tGraphviz", "mermaid\ta Mermaid flowchart"}, liveDirective},
		{[]string{"tail", "x", "--format", ""}, []string{"text\treadable lines (the default on a terminal)", "json\tJSON lines", "raw\tthe payload and a newline"}, liveDirective},
		{[]string{"tail", "x", "-o", "r"}, []string{"raw\tthe payload and a newline"}, liveDirective},
		{[]string{"put", "x", "-o", ""}, []string{"text\ta summary", "json\tone JSON document"}, liveDirective},
		{[]string{"split", "x", "-o", ""}, []string{"table\tthe preview as tables", "json\tthe plan as JSON"}, liveDirective},
		// --checkpoint leaves it to the shell's file-name completion.
		{[]string{"tail", "x", "--checkpoint", ""}, nil, cobra.ShellCompDirectiveDefault},
		// Any other value is not a file name: no candidates, no files.
		{[]string{"tail", "x", "--lease-table", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"tree", "x", "--kcl-table", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"scale", "x", "--to", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"tail", "x", "--from-timestamp", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"hot", "x", "-o", ""}, []string{"table\ta table", "json\tone JSON document"}, liveDirective},
		{[]string{"hot", "x", "--window", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"hot", "x", "--until", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"hot", "x", "--top", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"lag", "x", "-o", "j"}, []string{"json\tone JSON document"}, liveDirective},
		{[]string{"lag", "x", "--checkpoint", ""}, nil, cobra.ShellCompDirectiveDefault},
		{[]string{"lag", "x", "--lease-table", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"lag", "x", "--kcl-table", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"dashboard", "x", "--lease-table", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"completion", ""}, []string{
			"bash\tPrint the bash completion script", "fish\tPrint the fish completion script",
			"powershell\tPrint the powershell completion script", "zsh\tPrint the zsh completion script"}, cobra.ShellCompDirectiveNoFileComp},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, out, errOut := TestIO()
			f := NewFactory(ios)
			f.KinesisClient = func(context.Context, string) (*kinesis.Client, error) {
				t.Error("a flag value completion built a client")
				return nil, fmt.Errorf("no client")
			}
			root := completionTree(f)
			root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			cands, dir := parseComplete(t, out.String())
			if !slices.Equal(cands, tt.want) || dir != tt.dir {
				t.Errorf("got %q, %v\nwant %q, %v", cands, dir, tt.want, tt.dir)
			}
			quiet(t, compResult{stderr: errOut.String()})
		})
	}
}

// scale registers its own --method completion (a command's own function
// wins over the table); either way the values offered are the table's.
func TestCompleteScaleMethod(t *testing.T) {
	ios, _, out, _ := TestIO()
	root := completionTree(NewFactory(ios))
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "scale", "x", "--method", ""})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	cands, dir := parseComplete(t, out.String())
	var names, want []string
	for _, c := range cands {
		name, _, _ := strings.Cut(c, "\t")
		names = append(names, name)
	}
	for _, v := range enumFlagValues["method"]["scale"] {
		want = append(want, v.Name)
	}
	if !slices.Equal(names, want) || dir&cobra.ShellCompDirectiveNoFileComp == 0 {
		t.Errorf("scale --method: %q, %v; want %q without file names", names, dir, want)
	}
}

// blackHole is a listener that accepts connections and never answers.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// A dead endpoint gives no candidates, no error, within two seconds.
func TestCompleteDeadEndpoint(t *testing.T) {
	endpoints := map[string]string{
		"refused":    "http://127.0.0.1:1",
		"black hole": blackHole(t),
	}
	for what, ep := range endpoints {
		for _, args := range [][]string{
			{"put", ""},
			{"tail", "orders", "--shard", ""},
			{"split", "orders", ""},
		} {
			t.Run(what+" "+strings.Join(args, " "), func(t *testing.T) {
				r := completeIn(t, ep, args...)
				if len(r.cands) != 0 || r.directive != liveDirective {
					t.Errorf("got %q, %v; want none, %v", r.cands, r.directive, liveDirective)
				}
				if r.elapsed > 2*time.Second {
					t.Errorf("took %s, want under 2s", r.elapsed)
				}
				quiet(t, r)
			})
		}
	}
}

// The real binary: the client follows the global flags typed on the
// command line and the environment, and a failure is quick and silent.
func TestCompleteBinary(t *testing.T) {
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	want := []string{name + streamDesc(t, c)}
	binary(t) // built before the clock starts

	envWith := func(drop string, add ...string) []string {
		var env []string
		for _, kv := range e.Env() {
			if drop == "" || !strings.HasPrefix(kv, drop+"=") {
				env = append(env, kv)
			}
		}
		return append(env, add...)
	}
	dead := "http://127.0.0.1:1"
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"environment", envWith(""), []string{"put", name}, want},
		{"--endpoint-url typed wins over the environment", envWith("AWS_ENDPOINT_URL_KINESIS", "AWS_ENDPOINT_URL_KINESIS="+dead),
			[]string{"--endpoint-url", e.Endpoint, "put", name}, want},
		{"dead --endpoint-url typed", envWith(""), []string{"--endpoint-url", dead, "put", name}, nil},
		{"no region: no client", envWith("AWS_REGION"), []string{"put", name}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := runBinary(t, tt.env, "", append([]string{cobra.ShellCompRequestCmd}, tt.args...)...)
			el := time.Since(start)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			cands, dir := parseComplete(t, res.stdout)
			if !slices.Equal(cands, tt.want) || dir != liveDirective {
				t.Errorf("got %q, %v; want %q, %v", cands, dir, tt.want, liveDirective)
			}
			quiet(t, compResult{stderr: res.stderr})
			if el > 2*time.Second {
				t.Errorf("took %s, want under 2s", el)
			}
		})
	}
}

// bashComplete sources the generated bash script in a real bash, sets
// COMP_WORDS and COMP_CWORD for line (the word being completed is the last
// one, "" after a trailing space) and calls __start_kinesis-shards, the
// function bash calls on TAB. It returns COMPREPLY. withBashCompletion
// loads the bash-completion package (its _init_completion); without it,
// _get_comp_words_by_ref is stubbed the way the script's fallback expects.
func bashComplete(t *testing.T, script string, withBashCompletion bool, line string) []string {
	t.Helper()
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	var prelude string
	if withBashCompletion {
		prelude = "source /usr/share/bash-completion/bash_completion\n" +
			`declare -F _init_completion >/dev/null || { echo "no _init_completion" >&2; exit 3; }` + "\n"
	} else {
		prelude = `_get_comp_words_by_ref() {
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  words=("${COMP_WORDS[@]}")
  cword=$COMP_CWORD
}
`
	}
	prog := prelude + fmt.Sprintf(`source %s
complete -p kinesis-shards >/dev/null || exit 4
COMP_WORDS=(%s)
COMP_CWORD=%d
COMP_LINE=%s
COMP_POINT=${#COMP_LINE}
COMP_TYPE=9
COLUMNS=100
__start_kinesis-shards
printf '%%s\n' "${COMPREPLY[@]}"
`, shellQuote(script), strings.Join(quoted, " "), len(words)-1, shellQuote(line))

	bin := binary(t)
	env := append(emulator.Require(t).Env(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", "-c", prog)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("bash: %v\n%s", err, stderr)
	}
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestBashCompletionScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	e := emulator.Require(t)
	c := e.Client(t)
	base := emulator.StreamName(t)
	e.CreateStream(t, c, base+"-a", 2)
	e.CreateStream(t, c, base+"-b", 1)
	desc := streamDesc(t, c)

	res := runBinary(t, nil, "", "completion", "bash")
	if res.code != 0 {
		t.Fatalf("completion bash: exit %d: %s", res.code, res.stderr)
	}
	script := filepath.Join(t.TempDir(), "kinesis-shards.bash")
	if err := os.WriteFile(script, []byte(res.stdout), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []struct {
		name   string
		withBC bool
	}{{"stubbed", false}, {"bash-completion", true}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.withBC {
				if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil {
					t.Skip("the bash-completion package is not installed")
				}
			}
			// One match: bash gets the bare name, ready to insert.
			if got := bashComplete(t, script, mode.withBC, "kinesis-shards tail "+base+"-b"); !slices.Equal(got, []string{base + "-b"}) {
				t.Errorf("tail %s-b<TAB>: COMPREPLY %q, want [%s-b]", base, got, base)
			}
			// Two: the list bash prints.
			want := []string{base + "-a", base + "-b"}
			if desc != "" {
				want = []string{base + "-a  (active, provisioned)", base + "-b  (active, provisioned)"}
			}
			if got := bashComplete(t, script, mode.withBC, "kinesis-shards put "+base); !slices.Equal(got, want) {
				t.Errorf("put %s<TAB>: COMPREPLY %q, want %q", base, got, want)
			}
			// Shard ids, with their descriptions in the list.
			want = []string{"shardId-000000000000  (open 50.00%)", "shardId-000000000001  (open 50.00%)"}
			if got := bashComplete(t, script, mode.withBC, "kinesis-shards tail "+base+"-a --shard "); !slices.Equal(got, want) {
				t.Errorf("tail %s-a --shard <TAB>: COMPREPLY %q, want %q", base, got, want)
			}
			// Subcommands come from the same script.
			if got := bashComplete(t, script, mode.withBC, "kinesis-shards stre"); !slices.Equal(got, []string{"streams"}) {
				t.Errorf("stre<TAB>: COMPREPLY %q, want [streams]", got)
			}
		})
	}
}

// Each shell's script is printed on stdout, and each shell's help says how
// to install it.
func TestCompletionScripts(t *testing.T) {
	for _, tt := range []struct {
		shell, first, install string
	}{
		{"bash", "# bash completion V2 for kinesis-shards", "source <(kinesis-shards completion bash)"},
		{"zsh", "#compdef kinesis-shards", "kinesis-shards completion zsh > ~/.zfunc/_kinesis-shards"},
		{"fish", "# fish completion for kinesis-shards", "kinesis-shards completion fish > ~/.config/fish/completions/kinesis-shards.fish"},
		{"powershell", "# powershell completion for kinesis-shards", "kinesis-shards completion powershell | Out-String | Invoke-Expression"},
	} {
		t.Run(tt.shell, func(t *testing.T) {
			ios, _, out, errOut := TestIO()
			if code := run(t.Context(), NewFactory(ios), []string{"completion", tt.shell}); code != 0 || errOut.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, tt.first) {
				t.Errorf("first line %q, want %q", first, tt.first)
			}
			// Descriptions are on: the scripts ask __complete, not __completeNoDesc.
			if strings.Contains(out.String(), cobra.ShellCompNoDescRequestCmd) {
				t.Errorf("the %s script asks for completions without descriptions", tt.shell)
			}

			ios, _, out, _ = TestIO()
			if code := run(t.Context(), NewFactory(ios), []string{"completion", tt.shell, "--help"}); code != 0 {
				t.Fatalf("--help: exit %d", code)
			}
			if !strings.Contains(out.String(), tt.install) {
				t.Errorf("help lacks %q:\n%s", tt.install, out)
			}
		})
	}
}
