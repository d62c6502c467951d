package cmd

// The commands of the documentation: every kinesis-shards command shown in
// README.md or docs/guide/*.md is run through the real command tree with a
// runF in place of run (as the flag table does), so it must parse and
// validate exactly as written, with no client and no network. A flag that does not exist, a value a flag refuses or a missing
// --yes fails the test, naming the file, the line and the command.
//
// Which lines are commands:
//   - in a block marked sh, bash, shell or console, every line that invokes
//     kinesis-shards, unless the block also has "$ " prompts: then, as in a
//     block without a language, only the lines after a "$ " prompt are
//     commands and the others are their output;
//   - a command is what follows the prompt up to a "#" comment, with its
//     "\" continuation lines; pipelines, &&, ; and redirections are split
//     off, env-var prefixes (NAME=value) are set for the run, and $(...)
//     and <(...) are single words whose own kinesis-shards commands are
//     checked too;
//   - stdin is a terminal unless something is piped or redirected into the
//     command, stdout unless it is piped or redirected, stderr always: as
//     when a reader types the line into a terminal.
//
// Blocks marked json, text or anything else are never read for commands.
// Outside the blocks, an inline code span that starts with "kinesis-shards "
// is a command too (`kinesis-shards hot orders --window 1m`).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"
)

// docCommand is one kinesis-shards invocation found in the documentation.
type docCommand struct {
	file      string // relative to the repository's root
	line      int    // the line the command starts on, from 1
	text      string // the whole command line as written (continuations joined)
	args      []string
	env       [][2]string // NAME=value prefixes
	stdinTTY  bool
	stdoutTTY bool
}

func (d docCommand) String() string {
	return fmt.Sprintf("%s:%d: %s", d.file, d.line, d.text)
}

// docsFiles are the documents whose commands must run: the README and
// every guide.
func docsFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("..", "docs", "guide", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) == 0 {
		t.Fatal("no guide under ../docs/guide")
	}
	return append([]string{filepath.Join("..", "README.md")}, guides...)
}

func TestDocsCommands(t *testing.T) {
	var all []docCommand
	for _, path := range docsFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cmds, errs := docCommandsIn(strings.TrimPrefix(filepath.ToSlash(path), "../"), string(b))
		for _, e := range errs {
			t.Error(e)
		}
		all = append(all, cmds...)
	}
	// The commands the documents have always shown are found, so that the
	// extraction cannot silently find nothing.
	shown := map[string]bool{}
	for _, d := range all {
		if len(d.args) > 0 {
			shown[d.args[0]] = true
		}
	}
	for _, name := range []string{"streams", "tree", "tail", "put", "create", "consumers", "split", "merge", "scale", "hot", "lag", "dashboard", "completion"} {
		if !shown[name] {
			t.Errorf("no command line of the documentation runs kinesis-shards %s", name)
		}
	}
	// A command of the real tree that the flag tests' tree lacks cannot be
	// checked: say where to add it.
	ios, _, _, _ := TestIO()
	full := NewRootCmd(NewFactory(ios))
	var got any
	tested := flagRoot(NewFactory(ios), &got)
	for _, c := range full.Commands() {
		if c.Name() != "completion" && c.Name() != "help" && shown[c.Name()] {
			if !slices.ContainsFunc(tested.Commands(), func(t *cobra.Command) bool { return t.Name() == c.Name() }) {
				t.Errorf("the documentation runs kinesis-shards %s, which flagRoot (cmd/flags_test.go) lacks: add it there with a runF", c.Name())
			}
		}
	}
	for _, d := range all {
		name := strings.ReplaceAll(d.file, "/", "_")
		t.Run(fmt.Sprintf("%s:%d", name, d.line), func(t *testing.T) {
			for _, kv := range d.env {
				t.Setenv(kv[0], kv[1])
			}
			code, stdout, stderr, problem := runDocCommand(d)
			if code != exitOK || problem != "" {
				t.Errorf("%s\n  argv %q (stdin a terminal: %v, stdout a terminal: %v)\n  exit %d%s\n  stderr: %s\n  stdout: %.200s",
					d, d.args, d.stdinTTY, d.stdoutTTY, code, problem, strings.TrimSpace(stderr), stdout)
			}
		})
	}
	t.Logf("checked %d commands of the documentation", len(all))
}

// runDocCommand runs the command through the tree of the flag tests (every
// run replaced by a runF), with the completion command added as the real
// tree has it. problem says what went wrong beyond the exit code: a client
// was built, or the command was never reached.
func runDocCommand(d docCommand) (code int, stdout, stderr, problem string) {
	ios, _, out, errOut := TestIO()
	ios.StdinTTY, ios.StdoutTTY, ios.StderrTTY = d.stdinTTY, d.stdoutTTY, true
	if d.stdoutTTY {
		ios.Width = 120
	}
	f := NewFactory(ios)
	f.KinesisClient = func(context.Context, string) (*kinesis.Client, error) {
		problem = "; it built a Kinesis client"
		return nil, fmt.Errorf("no client in the documentation test")
	}
	f.DynamoClient = func(context.Context, string) (*dynamodb.Client, error) {
		problem = "; it built a DynamoDB client"
		return nil, fmt.Errorf("no client in the documentation test")
	}
	var got any
	root := flagRoot(f, &got)
	registerCompletions(root, f)
	code = execute(context.Background(), f, root, d.args)
	if code == exitOK && got == nil && !docRunsWithoutRunF(root, d.args) {
		problem += "; it exited 0 without reaching the command"
	}
	return code, out.String(), errOut.String(), problem
}

// docRunsWithoutRunF says whether args legitimately end before a runF:
// --help, --version and the completion scripts.
func docRunsWithoutRunF(root *cobra.Command, args []string) bool {
	if slices.Contains(args, "--help") || slices.Contains(args, "-h") || slices.Contains(args, "--version") {
		return true
	}
	c, _, err := root.Find(args)
	return err == nil && (c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion"))
}

var (
	docFenceRE  = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
	docEnvRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	docInlineRE = regexp.MustCompile("`(kinesis-shards [^`]+)`")
	docShellLng = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}
)

// docCommandsIn finds the kinesis-shards commands of a Markdown document;
// errs are lines it could not read as a shell would.
func docCommandsIn(file, text string) (cmds []docCommand, errs []error) {
	add := func(line string, first int) {
		found, err := docInvocations(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %v", file, first, line, err))
			return
		}
		for _, d := range found {
			d.file, d.line, d.text = file, first, line
			cmds = append(cmds, d)
		}
	}
	lines := strings.Split(text, "\n")
	para, paraStart := "", 0 // the prose paragraph being read, for inline spans
	inline := func() {
		for _, m := range docInlineRE.FindAllStringSubmatchIndex(para, -1) {
			// A span may wrap, and a table cell escapes its pipes.
			line := strings.ReplaceAll(strings.Join(strings.Fields(para[m[2]:m[3]]), " "), `\|`, "|")
			add(line, paraStart+strings.Count(para[:m[0]], "\n"))
		}
		para = ""
	}
	for i := 0; i < len(lines); i++ {
		m := docFenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.TrimSpace(lines[i]) == "" {
				inline()
			} else {
				if para == "" {
					paraStart = i + 1
				}
				para += lines[i] + "\n"
			}
			continue
		}
		inline()
		fence, lang := m[1], strings.ToLower(m[2])
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), fence) {
			end++
		}
		i = end
		block := lines[start:end]
		prompted := slices.ContainsFunc(block, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "$ ") })
		if lang != "" && !docShellLng[lang] {
			continue
		}
		if lang == "" && !prompted {
			continue // output, or a picture
		}
		for j := 0; j < len(block); j++ {
			line := strings.TrimSpace(block[j])
			if prompted {
				if !strings.HasPrefix(line, "$ ") {
					continue
				}
			}
			line = strings.TrimPrefix(line, "$ ")
			first := start + j + 1
			// "\" at the end of a line continues the command.
			for strings.HasSuffix(line, "\\") && j+1 < len(block) {
				j++
				line = strings.TrimSpace(strings.TrimSuffix(line, "\\")) + " " + strings.TrimSpace(block[j])
			}
			if strings.Contains(line, "kinesis-shards") {
				add(line, first)
			}
		}
	}
	inline()
	return cmds, errs
}

// docInvocations reads one shell command line and returns its kinesis-shards
// invocations, with those inside $(...) and <(...).
func docInvocations(line string) ([]docCommand, error) {
	toks, subs, err := shellTokens(line)
	if err != nil {
		return nil, err
	}
	var out []docCommand
	for _, s := range subs {
		inner, err := docInvocations(s)
		if err != nil {
			return nil, err
		}
		for _, d := range inner {
			d.stdoutTTY = false // captured by the shell
			out = append(out, d)
		}
	}
	// Split into simple commands at the control operators.
	var seg []shellToken
	pipedIn := false
	flush := func(pipedOut bool) {
		defer func() { seg = nil }()
		d := docCommand{stdinTTY: !pipedIn, stdoutTTY: !pipedOut}
		var words []string
		for k := 0; k < len(seg); k++ {
			tk := seg[k]
			if tk.redirect != "" {
				switch {
				case tk.redirect == "<":
					d.stdinTTY = false
				case tk.fd == "" || tk.fd == "1" || tk.fd == "&":
					d.stdoutTTY = false
				}
				continue
			}
			words = append(words, tk.word)
		}
		for len(words) > 0 && docEnvRE.MatchString(words[0]) {
			name, value, _ := strings.Cut(words[0], "=")
			d.env = append(d.env, [2]string{name, value})
			words = words[1:]
		}
		if len(words) == 0 || filepath.Base(words[0]) != "kinesis-shards" {
			return
		}
		d.args = words[1:]
		out = append(out, d)
	}
	for _, tk := range toks {
		switch tk.op {
		case "":
			seg = append(seg, tk)
		case "|":
			flush(true)
			pipedIn = true
		default: // && || ; &
			flush(false)
			pipedIn = false
		}
	}
	flush(false)
	return out, nil
}

// shellToken is a word, a control operator (op) or a redirection (with its
// target already read).
type shellToken struct {
	word     string
	op       string // | || && ; &
	redirect string // < > >>
	fd       string // the redirected descriptor, as written before it ("2", "&"), if any
}

// shellTokens splits a command line as a POSIX shell would, enough for the
// documentation: quotes, backslashes, comments, control operators and
// redirections. $(...) and <(...) stay in their word, and their text is
// returned in subs.
func shellTokens(line string) (toks []shellToken, subs []string, err error) {
	r := []rune(line)
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			toks = append(toks, shellToken{word: word.String()})
		}
		word.Reset()
		inWord = false
	}
	// paren reads from r[i] == '(' to its matching ')', quotes respected,
	// and returns the inner text and the index of the ')'.
	paren := func(i int) (string, int, error) {
		depth, q := 0, rune(0)
		for k := i; k < len(r); k++ {
			c := r[k]
			switch {
			case q != 0:
				if c == q {
					q = 0
				} else if c == '\\' && q == '"' {
					k++
				}
			case c == '\'' || c == '"':
				q = c
			case c == '\\':
				k++
			case c == '(':
				depth++
			case c == ')':
				depth--
				if depth == 0 {
					return string(r[i+1 : k]), k, nil
				}
			}
		}
		return "", 0, fmt.Errorf("unbalanced ( at column %d", i+1)
	}
	// target reads the word after a redirection operator.
	target := func(i int) int {
		for i < len(r) && (r[i] == ' ' || r[i] == '\t') {
			i++
		}
		return i
	}
	pendingRedirect := -1 // index in toks of a redirection waiting for its target
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			end()
			i = len(r)
		case c == '\'':
			k := slices.Index(r[i+1:], '\'')
			if k < 0 {
				return nil, nil, fmt.Errorf("unterminated ' at column %d", i+1)
			}
			word.WriteString(string(r[i+1 : i+1+k]))
			inWord = true
			i += k + 1
		case c == '"':
			inWord = true
			k := i + 1
			for ; k < len(r) && r[k] != '"'; k++ {
				switch {
				case r[k] == '\\' && k+1 < len(r) && strings.ContainsRune("\"\\$`", r[k+1]):
					k++
					word.WriteRune(r[k])
				case r[k] == '$' && k+1 < len(r) && r[k+1] == '(':
					inner, e, err := paren(k + 1)
					if err != nil {
						return nil, nil, err
					}
					subs = append(subs, inner)
					word.WriteString(string(r[k : e+1]))
					k = e
				default:
					word.WriteRune(r[k])
				}
			}
			if k >= len(r) {
				return nil, nil, fmt.Errorf("unterminated \" at column %d", i+1)
			}
			i = k
		case c == '\\':
			if i+1 < len(r) {
				i++
				word.WriteRune(r[i])
				inWord = true
			}
		case (c == '$' || c == '<') && i+1 < len(r) && r[i+1] == '(':
			inner, e, err := paren(i + 1)
			if err != nil {
				return nil, nil, err
			}
			subs = append(subs, inner)
			word.WriteString(string(r[i : e+1]))
			inWord = true
			i = e
		case c == '|' || c == '&' || c == ';':
			op := string(c)
			if i+1 < len(r) && (c == '|' || c == '&') && r[i+1] == c {
				op += string(c)
				i++
			}
			if c == '&' && i+1 < len(r) && r[i+1] == '>' { // &> file
				end()
				word.WriteRune('&')
				inWord = true
				continue
			}
			end()
			toks = append(toks, shellToken{op: op})
		case c == '<' || c == '>':
			fd := ""
			if inWord && (word.String() == "1" || word.String() == "2" || word.String() == "&") {
				fd = word.String()
				word.Reset()
				inWord = false
			}
			end()
			op := string(c)
			if c == '>' && i+1 < len(r) && r[i+1] == '>' {
				op = ">>"
				i++
			}
			if i+1 < len(r) && r[i+1] == '&' { // 2>&1: the target is a descriptor
				i++
				for i+1 < len(r) && (r[i+1] >= '0' && r[i+1] <= '9' || r[i+1] == '-') {
					i++
				}
				toks = append(toks, shellToken{redirect: op, fd: fd})
				continue
			}
			toks = append(toks, shellToken{redirect: op, fd: fd})
			pendingRedirect = len(toks) - 1
			i = target(i+1) - 1
			continue
		default:
			word.WriteRune(c)
			inWord = true
		}
		// The word after a redirection is its target, not an argument.
		if pendingRedirect >= 0 && len(toks) > pendingRedirect+1 {
			toks = slices.Delete(toks, pendingRedirect+1, pendingRedirect+2)
			pendingRedirect = -1
		}
	}
	end()
	if pendingRedirect >= 0 && len(toks) > pendingRedirect+1 {
		toks = slices.Delete(toks, pendingRedirect+1, pendingRedirect+2)
	} else if pendingRedirect >= 0 {
		return nil, nil, fmt.Errorf("a redirection without a target")
	}
	return toks, subs, nil
}

// The splitter reads the shapes the documentation uses.
func TestDocsShellTokens(t *testing.T) {
	cases := []struct {
		line string
		want []string // the kinesis-shards argv of each invocation, joined by " ", with [in,out] TTY marks
	}{
		{`kinesis-shards tree orders`, []string{"tree orders [tty,tty]"}},
		{`$(echo) kinesis-shards streams # a comment`, nil},
		{`seq 1 1000 | kinesis-shards put orders`, []string{"put orders [pipe,tty]"}},
		{`tail -f app.log | kinesis-shards put logs --key "$(hostname)"`, []string{"put logs --key $(hostname) [pipe,tty]"}},
		{`kinesis-shards tail orders --filter '.payload.level == "error"' --from-timestamp 15m`,
			[]string{`tail orders --filter .payload.level == "error" --from-timestamp 15m [tty,tty]`}},
		{`kinesis-shards tail orders -o json --idle-exit 5s --no-checkpoint | kinesis-shards put orders-copy --format json`,
			[]string{"tail orders -o json --idle-exit 5s --no-checkpoint [tty,pipe]", "put orders-copy --format json [pipe,tty]"}},
		{`kinesis-shards tail orders --lease-table orders-tail --create-lease-table > part-$(hostname).jsonl`,
			[]string{"tail orders --lease-table orders-tail --create-lease-table [tty,pipe]"}},
		{`AWS_REGION=eu-west-1 kinesis-shards streams 2>/dev/null && kinesis-shards hot orders < /dev/null`,
			[]string{"streams [tty,tty]", "hot orders [pipe,tty]"}},
		{`source <(kinesis-shards completion bash)`, []string{"completion bash [tty,pipe]"}},
		{`kinesis-shards tree orders -o dot | dot -Tsvg > lineage.svg   # Graphviz`, []string{"tree orders -o dot [tty,pipe]"}},
		{`kinesis-shards put orders --key a\ b`, []string{"put orders --key a b [tty,tty]"}},
	}
	mark := func(b bool, no string) string {
		if b {
			return "tty"
		}
		return no
	}
	for _, tc := range cases {
		got, err := docInvocations(tc.line)
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		var s []string
		for _, d := range got {
			s = append(s, fmt.Sprintf("%s [%s,%s]", strings.Join(d.args, " "), mark(d.stdinTTY, "pipe"), mark(d.stdoutTTY, "pipe")))
		}
		if !slices.Equal(s, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.line, s, tc.want)
		}
	}
	if _, err := docInvocations(`kinesis-shards tail orders --filter '.x`); err == nil {
		t.Error("an unterminated quote was read")
	}
	md := "see `kinesis-shards hot\norders --window 1m` and `kinesis-shards-x`\n```sh\nkinesis-shards streams \\\n  -o json   # all\nnot-it\n```\n```\n$ kinesis-shards tree orders\nkinesis-shards dashboard · orders\n```\n```json\n{\"kinesis-shards\":1}\n```\n"
	cmds, errs := docCommandsIn("x.md", md)
	if len(errs) != 0 || len(cmds) != 3 || cmds[0].line != 1 || strings.Join(cmds[0].args, " ") != "hot orders --window 1m" ||
		cmds[1].line != 4 || strings.Join(cmds[1].args, " ") != "streams -o json" || cmds[2].line != 9 || strings.Join(cmds[2].args, " ") != "tree orders" {
		t.Errorf("docCommandsIn: %+v %v", cmds, errs)
	}
}
