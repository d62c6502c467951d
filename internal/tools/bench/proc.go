package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// toolEnv is the environment of the binary and the AWS CLI against a local
// endpoint: nothing from the developer's AWS setup leaks in.
func toolEnv(c *config, endpoint, accessKey string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToUpper(k), "AWS_") || k == "GOMAXPROCS" || k == "GODEBUG" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"AWS_ENDPOINT_URL_KINESIS="+endpoint,
		"AWS_ENDPOINT_URL="+endpoint, // the AWS CLI v1 reads neither; it gets --endpoint-url too
		"AWS_ACCESS_KEY_ID="+accessKey,
		"AWS_SECRET_ACCESS_KEY=x",
		"AWS_REGION=us-east-1",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_PAGER=",
		"XDG_STATE_HOME="+c.tmp,
		"NO_COLOR=1",
	)
	return append(env, extra...)
}

// procStat is what /proc says about a process.
type procStat struct {
	at      time.Time
	cpu     time.Duration // user + system
	rssKiB  int64
	hwmKiB  int64
	threads int64
}

// clockTick is USER_HZ, 100 on every Linux this runs on.
const clockTick = 10 * time.Millisecond

func readProc(pid int) (procStat, error) {
	st := procStat{at: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return st, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return st, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpu = time.Duration(ut+stt) * clockTick
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, l := range strings.Split(string(s), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.Fields(v + " 0")[0], 10, 64)
		switch k {
		case "VmRSS":
			st.rssKiB = n
		case "VmHWM":
			st.hwmKiB = n
		case "Threads":
			st.threads = n
		}
	}
	return st, nil
}

// lineCounter counts what a process writes: bytes, lines, and when the
// first and the latest line arrived; onLine (optional) sees each line.
type lineCounter struct {
	bytes, lines atomic.Int64
	first, last  atomic.Int64 // unix ns
	onLine       func(line []byte, at time.Time)
	partial      []byte
}

func (w *lineCounter) Write(p []byte) (int, error) {
	now := time.Now()
	w.bytes.Add(int64(len(p)))
	n := int64(bytes.Count(p, []byte{'\n'}))
	if n > 0 {
		w.first.CompareAndSwap(0, now.UnixNano())
		w.last.Store(now.UnixNano())
		w.lines.Add(n)
	}
	if w.onLine != nil {
		rest := p
		for {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				w.partial = append(w.partial, rest...)
				break
			}
			line := rest[:i]
			if len(w.partial) > 0 {
				line = append(w.partial, line...)
				w.partial = w.partial[:0]
			}
			w.onLine(line, now)
			rest = rest[i+1:]
		}
	}
	return len(p), nil
}

// child is a running kinesis-shards (or any) process whose stdout is
// counted and whose stderr is kept.
type child struct {
	cmd    *exec.Cmd
	out    *lineCounter
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	err    error
	start  time.Time
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4<<20 {
		return len(p), nil // enough
	}
	return l.b.Write(p)
}

// startChild starts argv with env, on core cpu when cpu >= 0. errLines,
// when set, also sees each line of stderr as it arrives.
func startChild(argv, env []string, cpu int, out *lineCounter, errLines ...func(line []byte, at time.Time)) (*child, error) {
	if cpu >= 0 {
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	}
	if out == nil {
		out = &lineCounter{}
	}
	ch := &child{cmd: exec.Command(argv[0], argv[1:]...), out: out, done: make(chan struct{})}
	ch.cmd.Env = env
	ch.cmd.Stdout = out
	ch.cmd.Stderr = lockedBuffer{&ch.mu, &ch.stderr}
	if len(errLines) > 0 {
		ch.cmd.Stderr = io.MultiWriter(ch.cmd.Stderr, &lineCounter{onLine: errLines[0]})
	}
	ch.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ch.start = time.Now()
	if err := ch.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	return ch, nil
}

func (ch *child) pid() int { return ch.cmd.Process.Pid }

func (ch *child) stderrText() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.stderr.String()
}

func (ch *child) exited() bool {
	select {
	case <-ch.done:
		return true
	default:
		return false
	}
}

// stop interrupts the child (as Ctrl-C does), waits up to grace, then
// kills it.
func (ch *child) stop(grace time.Duration) {
	if ch.exited() {
		return
	}
	_ = ch.cmd.Process.Signal(os.Interrupt)
	select {
	case <-ch.done:
	case <-time.After(grace):
		_ = ch.cmd.Process.Kill()
		<-ch.done
	}
}

// wait waits for the child to exit by itself.
func (ch *child) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-ch.done:
		if ch.err != nil {
			return fmt.Errorf("%s: %v\n%s", ch.cmd.Args, ch.err, tailOf(ch.stderrText(), 1500))
		}
		return nil
	case <-time.After(timeout):
		ch.stop(5 * time.Second)
		return fmt.Errorf("%s did not finish in %s\n%s", ch.cmd.Args, timeout, tailOf(ch.stderrText(), 1500))
	case <-ctx.Done():
		ch.stop(5 * time.Second)
		return ctx.Err()
	}
}

// runTimed runs a command to its end and returns its wall time and output.
func runTimed(ctx context.Context, argv, env []string, stdin io.Reader) (time.Duration, []byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, out.Bytes(), fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, tailOf(errb.String(), 1500))
	}
	return d, out.Bytes(), nil
}
