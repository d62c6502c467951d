package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// Start and readiness timings (docs/KINESIS-NOTES.md §10).
const (
	probeEvery    = 100 * time.Millisecond
	probeTimeout  = time.Second
	readyTimeout  = 30 * time.Second
	attachTimeout = 5 * time.Second // a running emulator answers at once
	stopGrace     = 5 * time.Second
	startAttempts = 3 // when a free port was taken between our check and the emulator's bind
	logTailBytes  = 4096
	logTailLines  = 20
)

// ErrPortInUse is wrapped by Start's error when a port was taken, either
// before the start (something already accepts connections there) or by the
// emulator failing to bind (EADDRINUSE).
var ErrPortInUse = errors.New("port in use")

// Options configures Start. The zero value starts kinesis-mock the way the
// tests want it.
type Options struct {
	// Backend to start; "" means Fake. Main lets
	// KINESIS_SHARDS_TEST_BACKEND override it.
	Backend Backend
	// StateDuration is how long CREATING, DELETING and UPDATING (split,
	// merge, shard count, stream mode, consumers, encryption) last. 0 means
	// 100 ms, long enough to observe UPDATING; negative means instant. moto
	// ignores it.
	StateDuration time.Duration
	// ShardLimit per account and region; 0 means 1000 (kinesalite's own
	// default is 10, kinesis-mock's 50). moto has no limit.
	ShardLimit int
	// Env is appended to the emulator's environment and wins over the
	// harness's settings, e.g. "INITIALIZE_STREAMS=demo:4" or
	// "SHOULD_PERSIST_DATA=true" for kinesis-mock.
	Env []string
	// LogDir receives the emulator's log (and is its working directory, so
	// kinesis-mock's persisted data lands there). "" means a temporary
	// directory that Stop removes unless Emulator.KeepLog is set.
	LogDir string
	// AccountID is the 12-digit access key id of Client and Env, and
	// kinesis-mock's AWS_ACCOUNT_ID (where INITIALIZE_STREAMS creates its
	// streams). "" means AccountID() of the working directory.
	AccountID string
	// Port is the plain HTTP port; 0 picks a free one.
	Port int
	// TLSPort is kinesis-mock's TLS port (always opened, never used by the
	// harness); 0 picks a free one.
	TLSPort int
}

func (o Options) withDefaults() Options {
	if o.Backend == "" {
		o.Backend = Fake
	}
	if o.StateDuration == 0 {
		o.StateDuration = 100 * time.Millisecond
	}
	if o.StateDuration < 0 {
		o.StateDuration = 0
	}
	if o.ShardLimit == 0 {
		o.ShardLimit = 1000
	}
	if o.AccountID == "" {
		o.AccountID = AccountID()
	}
	return o
}

// Emulator is a running emulator, started by Start or attached by Attach.
// Its methods are safe for concurrent use.
type Emulator struct {
	Endpoint    string        // http://127.0.0.1:PORT
	Backend     Backend       // which emulator
	Caps        Caps          // what it can do
	PID         int           // process id; 0 when attached or in process (Fake)
	LogPath     string        // the emulator's stdout and stderr; "" when attached
	StartupTime time.Duration // from exec to the first successful ListStreams
	// KeepLog keeps a temporary log directory on Stop (Main sets it when
	// tests fail and prints the path).
	KeepLog bool

	opts      Options
	dir       string // working directory, holds the log
	tempDir   bool   // dir is ours to remove
	plainPort int
	tlsPort   int

	transport *http.Transport // shared by every Client; see Transport

	mu     sync.Mutex
	proc   *process
	served *inProcess // the Fake backend's server
}

// process is one exec of the emulator.
type process struct {
	cmd       *exec.Cmd
	done      chan struct{} // closed when Wait returned
	err       error         // Wait's error, valid after done
	logOffset int64         // where this run's output starts in the log
}

// Start starts an emulator on free loopback ports and waits until it answers
// ListStreams (every 100 ms; at most 30 s or until ctx ends). If the process
// exits first, the error holds the log's tail. When a port picked as free is
// taken before the emulator binds it, Start retries on new ports.
func Start(ctx context.Context, o Options) (*Emulator, error) {
	o = o.withDefaults()
	if err := Available(o.Backend); err != nil {
		return nil, err
	}
	e := &Emulator{Backend: o.Backend, Caps: CapsOf(o.Backend), opts: o, transport: newTransport()}
	if o.Backend == Fake {
		return e, e.serve()
	}
	if err := e.makeDir(); err != nil {
		return nil, err
	}
	fixed := o.Port != 0 || o.TLSPort != 0
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = e.pickPorts(); err != nil {
			break
		}
		if err = e.launch(ctx); err == nil {
			return e, nil
		}
		if fixed || !errors.Is(err, ErrPortInUse) || ctx.Err() != nil {
			break
		}
	}
	if e.tempDir {
		_ = os.RemoveAll(e.dir)
	}
	return nil, err
}

// Attach returns an Emulator for an endpoint that is already running (it
// starts nothing, and Stop leaves it alone), once it answers ListStreams.
func Attach(ctx context.Context, endpoint string, b Backend) (*Emulator, error) {
	if b == "" {
		b = KinesisMock
	}
	e := &Emulator{
		Endpoint: strings.TrimRight(endpoint, "/"), Backend: b, Caps: CapsOf(b),
		opts: Options{Backend: b, AccountID: AccountID()}, transport: newTransport(),
	}
	ctx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	if err := e.waitReady(ctx, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// Stop ends the emulator: SIGTERM, up to 5 s of grace, then SIGKILL. It is
// idempotent, does nothing for an attached emulator, and removes a temporary
// log directory unless KeepLog is set. It reports an emulator that had died
// before Stop, with the log's tail, and then keeps the log.
func (e *Emulator) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.stop()
	if e.tempDir && !e.KeepLog && err == nil { // a crash's log is worth keeping
		if rerr := os.RemoveAll(e.dir); rerr == nil {
			e.tempDir = false
		}
	}
	return err
}

// Restart stops the emulator and starts it again on the same ports, so
// clients keep working. State is lost unless persistence was enabled in
// Options.Env (kinesis-mock: SHOULD_PERSIST_DATA=true).
func (e *Emulator) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.served != nil {
		e.served.close()
		return e.serve()
	}
	if e.PID == 0 {
		return errors.New("emulator: cannot restart an attached emulator")
	}
	_ = e.stop() // an emulator that died is exactly what a restart is for
	return e.launch(ctx)
}

// Running reports whether the emulator process is alive (always true when
// attached: it is not ours to watch).
func (e *Emulator) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.served != nil {
		return e.served.running()
	}
	if e.PID == 0 {
		return true
	}
	if e.proc == nil {
		return false
	}
	select {
	case <-e.proc.done:
		return false
	default:
		return true
	}
}

func (e *Emulator) stop() error {
	if e.served != nil {
		e.transport.CloseIdleConnections()
		e.served.close()
		return nil
	}
	p := e.proc
	if p == nil {
		return nil
	}
	e.proc = nil
	// kinesis-mock's SIGTERM waits for open keep-alive connections (it took
	// the whole 5 s grace with one idle client connection): close ours.
	e.transport.CloseIdleConnections()
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections() // clients built on the default transport
	}
	select {
	case <-p.done:
		return fmt.Errorf("emulator: %s (pid %d) exited before Stop (%v)%s", e.Backend, e.PID, p.err, e.tail(p))
	default:
	}
	terminate(p, stopGrace)
	return nil
}

// newTransport is the HTTP transport of the harness's clients: loopback
// only, so no proxy; enough idle connections for parallel tests.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConnsPerHost = 64
	return t
}

// Transport is the HTTP transport shared by every client from Client. Wrap
// it (e.g. with a faults.Injector's RoundTripper) rather than making a new
// one: Stop closes its idle connections first, without which kinesis-mock
// takes the whole 5 s grace to exit on SIGTERM.
func (e *Emulator) Transport() *http.Transport { return e.transport }

// terminate sends SIGTERM, waits up to grace, then kills; it returns once the
// process has been reaped, so no zombie remains.
func terminate(p *process, grace time.Duration) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill() // Windows has no SIGTERM
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (e *Emulator) makeDir() error {
	if e.opts.LogDir != "" {
		if err := os.MkdirAll(e.opts.LogDir, 0o755); err != nil {
			return fmt.Errorf("emulator: log dir: %w", err)
		}
		e.dir = e.opts.LogDir
	} else {
		dir, err := os.MkdirTemp("", "kinesis-shards-"+string(e.Backend)+"-")
		if err != nil {
			return fmt.Errorf("emulator: log dir: %w", err)
		}
		e.dir, e.tempDir = dir, true
	}
	e.LogPath = filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", e.Backend, os.Getpid()))
	return nil
}

// pickPorts takes free loopback ports for those not fixed by Options. The
// emulator binds them after we release them; launch checks again and Start
// retries if another process got there first.
func (e *Emulator) pickPorts() error {
	e.plainPort, e.tlsPort = e.opts.Port, e.opts.TLSPort
	var err error
	if e.plainPort == 0 {
		if e.plainPort, err = freePort(); err != nil {
			return err
		}
	}
	if e.Backend != KinesisMock {
		e.tlsPort = 0
	} else {
		for e.tlsPort == 0 || e.tlsPort == e.plainPort {
			if e.tlsPort, err = freePort(); err != nil {
				return err
			}
		}
	}
	e.Endpoint = "http://127.0.0.1:" + strconv.Itoa(e.plainPort)
	return nil
}

// freePort returns a loopback port that was free a moment ago (a variable
// so that a test can hand out a taken one).
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("emulator: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portAnswers reports whether something accepts TCP connections on the
// loopback port: then a readiness probe would reach it instead of ours.
func portAnswers(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (e *Emulator) ports() []int {
	if e.tlsPort != 0 {
		return []int{e.plainPort, e.tlsPort}
	}
	return []int{e.plainPort}
}

// launch execs the emulator and waits for readiness; on failure nothing is
// left running. The caller holds e.mu or owns e exclusively.
func (e *Emulator) launch(ctx context.Context) error {
	for _, port := range e.ports() {
		if portAnswers(port) {
			return fmt.Errorf("emulator: %s: %w: 127.0.0.1:%d already accepts connections", e.Backend, ErrPortInUse, port)
		}
	}
	name, args, env, err := e.command()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(e.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	offset, _ := log.Seek(0, io.SeekEnd)
	fmt.Fprintf(log, "=== %s: starting %s on ports %v\n", time.Now().Format(time.RFC3339Nano), e.Backend, e.ports())

	cmd := exec.Command(name, args...)
	cmd.Dir = e.dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log // an *os.File: the child writes it directly, no copying goroutines
	cmd.SysProcAttr = sysProcAttr()
	start := time.Now()
	err = cmd.Start()
	log.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("emulator: start %s: %w", e.Backend, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), logOffset: offset}
	go func() { // owned by p: Stop and terminate wait for done
		p.err = cmd.Wait()
		close(p.done)
	}()
	e.PID = cmd.Process.Pid
	if err := e.waitReady(ctx, p); err != nil {
		terminate(p, 0) // nothing to save yet
		return err
	}
	e.StartupTime = time.Since(start)
	e.proc = p
	return nil
}

// command returns what to exec for the backend.
func (e *Emulator) command() (name string, args, env []string, err error) {
	o := e.opts
	env = os.Environ()
	switch e.Backend {
	case KinesisMock:
		dir, err := packageDir(KinesisMock)
		if err != nil {
			return "", nil, nil, err
		}
		d := strconv.FormatInt(o.StateDuration.Milliseconds(), 10) + "ms" // a unit is mandatory
		env = append(env,
			"KINESIS_MOCK_CERT_PATH="+filepath.Join(dir, "server.json"),
			"KINESIS_MOCK_PLAIN_PORT="+strconv.Itoa(e.plainPort),
			"KINESIS_MOCK_TLS_PORT="+strconv.Itoa(e.tlsPort),
			"SHARD_LIMIT="+strconv.Itoa(o.ShardLimit),
			"ON_DEMAND_STREAM_COUNT_LIMIT=50",
			"LOG_LEVEL=WARN",
			"SHOULD_PERSIST_DATA=false",
			"AWS_REGION=us-east-1",
			"AWS_ACCOUNT_ID="+o.AccountID,
		)
		for _, v := range []string{
			"CREATE_STREAM", "DELETE_STREAM", "SPLIT_SHARD", "MERGE_SHARDS", "UPDATE_SHARD_COUNT",
			"UPDATE_STREAM_MODE", "REGISTER_STREAM_CONSUMER", "DEREGISTER_STREAM_CONSUMER",
			"START_STREAM_ENCRYPTION", "STOP_STREAM_ENCRYPTION",
		} {
			env = append(env, v+"_DURATION="+d)
		}
		return "node", []string{filepath.Join(dir, "main.js")}, append(env, o.Env...), nil
	case Kinesalite:
		dir, err := packageDir(Kinesalite)
		if err != nil {
			return "", nil, nil, err
		}
		ms := o.StateDuration.Milliseconds()
		opts, _ := json.Marshal(map[string]any{
			"createStreamMs": ms, "deleteStreamMs": ms, "updateStreamMs": ms, "shardLimit": o.ShardLimit,
		})
		// Loopback only: kinesalite's CLI binds every interface.
		const script = `const [dir, port, opts] = process.argv.slice(1);
const server = require(dir)(JSON.parse(opts));
server.on('error', (err) => { console.error(err); process.exit(1); });
server.listen(+port, '127.0.0.1', () => console.log('kinesalite listening on 127.0.0.1:' + port));`
		return "node", []string{"-e", script, dir, strconv.Itoa(e.plainPort), string(opts)}, append(env, o.Env...), nil
	case Moto:
		env = append(env, "PYTHONUNBUFFERED=1")
		return "moto_server", []string{"-H", "127.0.0.1", "-p", strconv.Itoa(e.plainPort)}, append(env, o.Env...), nil
	}
	return "", nil, nil, fmt.Errorf("emulator: unknown backend %q", e.Backend)
}

// waitReady probes ListStreams every 100 ms with a 1 s timeout until one
// succeeds; it fails at once, with the log's tail, if p exits. p is nil for
// an attached emulator.
func (e *Emulator) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var exited <-chan struct{}
	if p != nil {
		exited = p.done
	}
	probe := kinesis.New(e.ClientOptions(), func(o *kinesis.Options) {
		o.RetryMaxAttempts = 1
		o.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	})
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-exited:
			return e.exitError(p)
		default:
		}
		if p != nil && e.bindFailed(p) {
			// kinesis-mock sometimes stays alive, deaf, after failing to
			// bind one of its two ports: don't wait 30 s for it.
			return fmt.Errorf("emulator: %s could not bind: %w on %v%s", e.Backend, ErrPortInUse, e.ports(), e.tail(p))
		}
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		_, err := probe.ListStreams(pctx, &kinesis.ListStreamsInput{Limit: aws.Int32(1)})
		pcancel()
		if err == nil {
			select {
			case <-exited: // the answer came from someone else on our port
				return e.exitError(p)
			default:
				return nil
			}
		}
		lastErr = err
		select {
		case <-exited:
			return e.exitError(p)
		case <-ctx.Done():
			msg := fmt.Sprintf("emulator: %s at %s not ready (%v); last probe: %v", e.Backend, e.Endpoint, ctx.Err(), lastErr)
			if p != nil {
				msg += e.tail(p)
			}
			return errors.New(msg)
		case <-tick.C:
		}
	}
}

// bindMessages are log lines of a failed bind: node (both emulators) and
// Python (moto).
var bindMessages = []string{"EADDRINUSE", "Address already in use"}

// bindFailed reports whether p's output so far says a port could not be
// bound. The log is small while starting, so rereading it is cheap.
func (e *Emulator) bindFailed(p *process) bool {
	b, err := os.ReadFile(e.LogPath)
	if err != nil || int64(len(b)) < p.logOffset {
		return false
	}
	out := string(b[p.logOffset:])
	return slices.ContainsFunc(bindMessages, func(m string) bool { return strings.Contains(out, m) })
}

func (e *Emulator) exitError(p *process) error {
	if e.bindFailed(p) {
		return fmt.Errorf("emulator: %s exited before it was ready (%v): %w on %v%s", e.Backend, p.err, ErrPortInUse, e.ports(), e.tail(p))
	}
	return fmt.Errorf("emulator: %s exited before it was ready (%v)%s", e.Backend, p.err, e.tail(p))
}

// tail returns the last lines p wrote to the log, indented, after a line
// naming the log.
func (e *Emulator) tail(p *process) string {
	f, err := os.Open(e.LogPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	from := max(p.logOffset, end-logTailBytes)
	b := make([]byte, end-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("; %s ends:\n\t%s", e.LogPath, strings.Join(lines, "\n\t"))
}
