package cmd

// Security, with the real binary and known fake
// credentials:
//
//   - error messages and --debug never show the access key id, the secret
//     key, the session token or the request's signature, even when the
//     endpoint quotes the request's headers back (as AWS's
//     IncompleteSignatureException does);
//   - checkpoint files are 0600 and the directories made for them 0700,
//     whatever the umask;
//   - plain http to a host that is not loopback prints a warning on stderr
//     and nothing else changes;
//   - the product's own packages never start a process (no os/exec), and
//     the dependencies that can are the known ones.
//
// cmd/foundation_integration_test.go (TestDebugLogNamesCallsNotSecrets,
// TestCredentialsMessage) covers a successful --debug run and missing
// credentials.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/faults"
)

// Fake credentials in AWS's own formats, so that patterns that look for
// real ones would find them.
const (
	secAccessKey    = "AKIAIOSFODNN7EXAMPLE"
	secSecretKey    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	secSessionToken = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKENabcdef0123456789+/ZZ=="
)

// secEnv is the emulator's environment with the fake credentials and the
// endpoint.
func secEnv(t *testing.T, e *emulator.Emulator, endpoint string) []string {
	return append(e.Env(), "AWS_ENDPOINT_URL_KINESIS="+endpoint, "AWS_ACCESS_KEY_ID="+secAccessKey,
		"AWS_SECRET_ACCESS_KEY="+secSecretKey, "AWS_SESSION_TOKEN="+secSessionToken, "XDG_STATE_HOME="+t.TempDir())
}

// secCommands are every command that calls the service, with the input it
// needs.
var secCommands = []struct {
	args  []string
	stdin string
}{
	{args: []string{"streams"}},
	{args: []string{"tree", "orders"}},
	{args: []string{"tail", "orders", "--no-checkpoint"}},
	{args: []string{"put", "orders"}, stdin: "x\n"},
	{args: []string{"create", "orders", "--shards", "1"}},
	{args: []string{"split", "orders", "0", "--yes"}},
	{args: []string{"merge", "orders", "0", "1", "--yes"}},
	{args: []string{"scale", "orders", "--to", "2", "--yes"}},
}

// secrets are the values no output may hold; signatures are added as an
// echoing endpoint sees them.
type secrets struct {
	mu   sync.Mutex
	vals []string
}

func (s *secrets) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v != "" && !slices.Contains(s.vals, v) {
		s.vals = append(s.vals, v)
	}
}

func (s *secrets) check(t *testing.T, what, out string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.vals {
		if strings.Contains(out, v) {
			t.Errorf("%s shows a secret (%.12s…):\n%s", what, v, out)
		}
	}
	if strings.Contains(out, "AWS4-HMAC-SHA256 Credential=AKIA") {
		t.Errorf("%s shows an Authorization header:\n%s", what, out)
	}
}

var sigRE = regexp.MustCompile(`Signature=([0-9a-f]+)`)

// TestErrorsNeverShowCredentials runs every command against an endpoint
// that answers each call with AWS's IncompleteSignatureException, quoting
// the request's Authorization and X-Amz-Security-Token headers as AWS
// does, with and without --debug.
func TestErrorsNeverShowCredentials(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	sec := &secrets{vals: []string{secAccessKey, secSecretKey, secSessionToken}}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if m := sigRE.FindStringSubmatch(auth); m != nil {
			sec.add(m[1])
		}
		msg := fmt.Sprintf("Authorization header requires 'Signature' parameter. Authorization=%s X-Amz-Security-Token: %s", auth, r.Header.Get("X-Amz-Security-Token"))
		b, _ := json.Marshal(map[string]string{"__type": "IncompleteSignatureException", "message": msg})
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(b)
	}))
	t.Cleanup(echo.Close)
	for _, c := range secCommands {
		for _, debug := range []bool{false, true} {
			args := slices.Clone(c.args)
			if debug {
				args = append(args, "--debug")
			}
			res := runBinary(t, secEnv(t, e, echo.URL), c.stdin, args...)
			what := strings.Join(args, " ")
			sec.check(t, what, res.stdout+res.stderr)
			last := rsLastLine(res.stderr)
			if res.code != 1 || !strings.HasPrefix(last, "error: IncompleteSignatureException: ") || !strings.Contains(last, "Credential=[redacted]") {
				t.Errorf("%s: exit %d, last line %q", what, res.code, last)
			}
			if !debug && strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("%s: stderr is not one line:\n%s", what, res.stderr)
			}
			if debug && !strings.Contains(res.stderr, "debug: Kinesis ") {
				t.Errorf("%s: no debug lines:\n%s", what, res.stderr)
			}
		}
	}
	if len(sec.vals) < 4 {
		t.Fatalf("the endpoint saw no signature: the test tested nothing")
	}
}

// TestAccessErrorsWording: an access denial, a 403 from the service and a
// 403 page from a proxy in front of it each end in one line that says what
// happened, without a credential.
func TestAccessErrorsWording(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	sec := &secrets{vals: []string{secAccessKey, secSecretKey, secSessionToken}}
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := sigRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			sec.add(m[1])
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "<html><body><h1>403 Forbidden</h1>Request blocked by the corporate proxy.</body></html>")
	}))
	t.Cleanup(html.Close)
	cases := []struct {
		name     string
		rule     *faults.Rule
		endpoint string
		want     string
	}{
		{"AccessDenied", &faults.Rule{Kind: faults.Custom, Code: "AccessDeniedException",
			Message: "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: kinesis:DescribeStreamSummary on resource: arn:aws:kinesis:us-east-1:123456789012:stream/orders"},
			"", "error: access denied in region us-east-1: User: arn:aws:iam::123456789012:user/ci is not authorized to perform: kinesis:DescribeStreamSummary"},
		{"403 UnrecognizedClient", &faults.Rule{Kind: faults.Custom, Code: "UnrecognizedClientException", Status: http.StatusForbidden,
			Message: "The security token included in the request is invalid."},
			"", "error: UnrecognizedClientException: The security token included in the request is invalid."},
		{"403 ExpiredToken", &faults.Rule{Kind: faults.Custom, Code: "ExpiredTokenException", Status: http.StatusBadRequest,
			Message: "The security token included in the request is expired"},
			"", "error: ExpiredTokenException: The security token included in the request is expired"},
		{"403 page from a proxy", nil, html.URL, "error: " + html.URL + " answered HTTP 403 Forbidden, which is not an answer of the Kinesis API"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.endpoint
			if tc.rule != nil {
				inj := faults.New(1, *tc.rule)
				endpoint = inj.Proxy(t, e.Endpoint).URL
			}
			for _, args := range [][]string{{"tree", "orders"}, {"put", "orders"}, {"split", "orders", "0", "--yes"}, {"tree", "orders", "--debug"}} {
				res := runBinary(t, secEnv(t, e, endpoint), "x\n", args...)
				what := tc.name + ": " + strings.Join(args, " ")
				sec.check(t, what, res.stdout+res.stderr)
				last := rsLastLine(res.stderr)
				if res.code != 1 || res.stdout != "" || !strings.HasPrefix(last, tc.want) {
					t.Errorf("%s: exit %d, stdout %q, last line %q; want %q", what, res.code, res.stdout, last, tc.want)
				}
				if !slices.Contains(args, "--debug") && strings.Count(res.stderr, "\n") != 1 {
					t.Errorf("%s: stderr is not one line:\n%s", what, res.stderr)
				}
			}
		})
	}
}

// TestCheckpointFilesArePrivate: a real tail run, under umask 000, makes
// its checkpoint directories 0700 and the checkpoint and lock files 0600,
// by default under XDG_STATE_HOME and with --checkpoint in a new directory.
func TestCheckpointFilesArePrivate(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("POSIX modes and umask")
	}
	e := emulator.Require(t)
	c := e.Client(t)
	stream := emulator.StreamName(t)
	e.CreateStream(t, c, stream, 1)
	e.Put(t, c, stream, []emulator.Rec{{PartitionKey: "a", Data: []byte("1")}})
	state := filepath.Join(t.TempDir(), "state") // made by the tool
	explicit := filepath.Join(t.TempDir(), "new", "dir", "cp.json")
	bin := binary(t)
	for _, extra := range [][]string{nil, {"--checkpoint", explicit}} {
		args := append([]string{"tail", stream, "--idle-exit", "500ms"}, extra...)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
		}
		cmd := exec.Command("sh", "-c", "umask 000 && exec "+shellQuote(bin)+" "+strings.Join(quoted, " "))
		cmd.Env = append(e.Env(), "XDG_STATE_HOME="+state)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	account, region := e.AccessKeyID(), emulator.Region
	if !e.Caps.AccountPerKey {
		account = "" // whatever the backend's ARNs say
	}
	var files []string
	check := func(root string) {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			st, _ := d.Info()
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700 | fs.ModeDir
			} else {
				files = append(files, p)
			}
			if st.Mode() != want {
				t.Errorf("%s is %v, want %v", p, st.Mode(), want)
			}
			return nil
		})
	}
	check(state)
	check(filepath.Dir(filepath.Dir(explicit)))
	wantDefault := filepath.Join(state, "kinesis-shards", "checkpoints", account, region, stream+".json")
	for _, want := range []string{wantDefault, wantDefault + ".lock", explicit, explicit + ".lock"} {
		if account == "" && strings.HasPrefix(want, state) {
			continue
		}
		if !slices.Contains(files, want) {
			t.Errorf("%s was not made; files: %v", want, files)
		}
	}
	if len(files) != 4 {
		t.Errorf("files made: %v", files)
	}
}

// TestPlainHTTPEndpointWarning: plain http to a host that is not loopback
// prints one warning line on stderr; the command still runs and stdout
// holds only its document. https, and http to loopback, print none.
func TestPlainHTTPEndpointWarning(t *testing.T) {
	t.Parallel()
	e := emulator.Require(t)
	port := strings.TrimPrefix(e.Endpoint, "http://127.0.0.1:")
	// 0.0.0.0 is not a loopback address, yet a connection to it reaches
	// this machine (Linux, macOS): the emulator answers.
	ep := "http://0.0.0.0:" + port
	res := runBinary(t, nil, "", "streams", "-o", "json", "--endpoint-url", ep)
	want := "warning: --endpoint-url " + ep + " is plain http to a host that is not loopback: requests (signed, not encrypted) cross the network in the clear\n"
	if res.code != 0 || !strings.HasPrefix(res.stderr, want) || strings.Count(res.stderr, "\n") != 1 || !json.Valid([]byte(res.stdout)) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", res.code, res.stdout, res.stderr)
	}
	res = runBinary(t, nil, "", "streams", "-o", "json", "--endpoint-url", e.Endpoint)
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("loopback: exit %d, stderr %q", res.code, res.stderr)
	}
	for _, tc := range []struct {
		url  string
		warn bool
	}{
		{"http://127.0.0.1:4568", false}, {"http://localhost:4568", false}, {"http://LOCALHOST:1", false}, {"http://[::1]:4568", false},
		{"http://127.8.9.10:4568", false}, {"https://kinesis.us-east-1.amazonaws.com", false}, {"https://10.0.0.5", false},
		{"http://kinesis.us-east-1.amazonaws.com", true}, {"http://10.0.0.5:4568", true}, {"http://[fe80::1]:4568", true},
		{"http://localhost.example.com", true}, {"http://0.0.0.0:4568", true},
	} {
		warn, err := validateEndpointURL(tc.url)
		if err != nil || (warn != "") != tc.warn {
			t.Errorf("%s: warning %q, error %v; want a warning: %v", tc.url, warn, err, tc.warn)
		}
	}
}

// productPackages lists the packages the binary is built from that belong
// to this module, and every package of the binary that imports os/exec.
func productPackages(t *testing.T) (own []string, execUsers []string) {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{.Module}}|{{join .Imports \",\"}}", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			continue
		}
		path, imports := parts[0], strings.Split(parts[2], ",")
		if strings.HasPrefix(path, "github.com/kinesis-shards/kinesis-shards") {
			own = append(own, path)
		}
		if slices.Contains(imports, "os/exec") {
			execUsers = append(execUsers, path)
		}
	}
	return own, execUsers
}

// TestNoShellOuts: none of the product's own packages imports os/exec or
// starts a process another way, the test harness is not linked in, and the
// third-party packages of the binary that can start processes are the
// known ones: the SDK's credential_process support (runs what the user's
// AWS profile names) and charmbracelet/colorprofile (runs `tmux info` to
// learn the terminal's colours inside tmux). bubbletea's exec.go
// (tea.ExecProcess) is linked but never called.
func TestNoShellOuts(t *testing.T) {
	t.Parallel()
	own, execUsers := productPackages(t)
	for _, want := range []string{"github.com/kinesis-shards/kinesis-shards/cmd", "github.com/kinesis-shards/kinesis-shards/tail",
		"github.com/kinesis-shards/kinesis-shards/lineage", "github.com/kinesis-shards/kinesis-shards/reshard",
		"github.com/kinesis-shards/kinesis-shards/render/dashboard", "github.com/kinesis-shards/kinesis-shards/internal/kstream"} {
		if !slices.Contains(own, want) {
			t.Fatalf("go list -deps . does not list %s: %v", want, own)
		}
	}
	for _, p := range own {
		for _, harness := range []string{"/internal/kinesistest", "/internal/tools"} {
			if strings.Contains(p, harness) {
				t.Errorf("the binary links the test harness package %s", p)
			}
		}
	}
	known := []string{"os/exec", "github.com/aws/aws-sdk-go-v2/credentials/processcreds", "github.com/charmbracelet/colorprofile", "github.com/charmbracelet/bubbletea"}
	for _, p := range execUsers {
		if strings.HasPrefix(p, "github.com/kinesis-shards/") {
			t.Errorf("%s imports os/exec", p)
		} else if !slices.Contains(known, p) {
			t.Errorf("%s (a dependency of the binary) imports os/exec: review what it runs, then add it to the known list", p)
		}
	}
	// The same from the source, which also catches os.StartProcess and
	// syscall.Exec/ForkExec.
	root, _ := emulator.RepoRoot()
	startRE := regexp.MustCompile(`\b(os\.StartProcess|syscall\.(Exec|ForkExec|StartProcess)|"os/exec")`)
	for _, p := range own {
		dir := filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(p, "github.com/kinesis-shards/kinesis-shards"), "/"))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if !strings.HasSuffix(en.Name(), ".go") || strings.HasSuffix(en.Name(), "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, en.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if m := startRE.Find(b); m != nil {
				t.Errorf("%s/%s: %s", p, en.Name(), m)
			}
		}
	}
}

// FuzzValidateEndpointURL: --endpoint-url never panics; what it accepts
// is an http(s) URL with a host, and only plain http to a host that is not
// loopback gets the warning.
func FuzzValidateEndpointURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:4568", "https://kinesis.us-east-1.amazonaws.com", "http://10.0.0.1", "ftp://x", "http://", "http://[::1]:1", "://", "http://%zz", "HTTP://LOCALHOST"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		warn, err := validateEndpointURL(s)
		if err != nil {
			if warn != "" || !strings.Contains(err.Error(), "is not an http(s) URL") {
				t.Fatalf("%q: warning %q with error %v", s, warn, err)
			}
			return
		}
		l := strings.ToLower(s)
		if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
			t.Fatalf("%q accepted", s)
		}
		if strings.HasPrefix(l, "https://") && warn != "" {
			t.Fatalf("%q: https warned", s)
		}
	})
}

// FuzzRedactSecrets: redaction is idempotent and leaves no access key id,
// Credential= or Signature= value behind, whatever surrounds them.
func FuzzRedactSecrets(f *testing.F) {
	f.Add("Authorization=AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240101/us-east-1/kinesis/aws4_request, SignedHeaders=host, Signature=abc123")
	f.Add("x-amz-security-token:FQoGZXIvYXdzEJr\nhost:kinesis")
	f.Add("stream arn:aws:kinesis:us-east-1:123456789012:stream/orders not found")
	f.Fuzz(func(t *testing.T, s string) {
		r := redactSecrets(s)
		if redactSecrets(r) != r {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, r, redactSecrets(r))
		}
		for _, p := range secretPatterns[3:] {
			if p.re.MatchString(r) {
				t.Fatalf("%q left %q", s, p.re.FindString(r))
			}
		}
		for _, m := range regexp.MustCompile(`(?i)(Credential|Signature)=([^\s,;&'"]*)`).FindAllStringSubmatch(r, -1) {
			if m[2] != "" && m[2] != "[redacted]" {
				t.Fatalf("%q left %q", s, m[0])
			}
		}
	})
}
