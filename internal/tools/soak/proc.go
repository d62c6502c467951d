package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

type tailProc struct {
	cmd     *exec.Cmd
	started time.Time
	mu      sync.Mutex // lines and arrived grow while the process runs
	lines   []line
	arrived []time.Time // when each line was read from tail's stdout
	stderr  strings.Builder
	done    chan struct{}
	err     error // from Wait: an *exec.ExitError is judged by status, not here
}

func startTail(bin string, env []string, stream, checkpoint string, extra ...string) (*tailProc, error) {
	args := append([]string{"tail", stream, "--checkpoint", checkpoint, "--relist-interval", "2s",
		"--checkpoint-interval", checkpointInterval.String()}, extra...)
	return startProc(bin, env, args...)
}

// startProc starts the binary and reads its JSON lines as they arrive.
func startProc(bin string, env []string, args ...string) (*tailProc, error) {
	p := &tailProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.started = time.Now()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				p.mu.Lock()
				p.lines = append(p.lines, l)
				p.arrived = append(p.arrived, time.Now())
				p.mu.Unlock()
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *tailProc) wait() ([]line, []time.Time) {
	<-p.done
	return slices.Clone(p.lines), slices.Clone(p.arrived)
}

// snapshot is what the process printed so far.
func (p *tailProc) snapshot() []line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// status is how the process ended: "exit N" or the signal that ended it.
// Only after wait.
func (p *tailProc) status() string {
	ps := p.cmd.ProcessState
	if ps == nil {
		return fmt.Sprintf("not waited for (%v)", p.err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch sig := ws.Signal(); sig {
		case syscall.SIGKILL:
			return "SIGKILL"
		case syscall.SIGINT:
			return "SIGINT"
		default:
			return fmt.Sprintf("signal %d (%v)", int(sig), sig)
		}
	}
	return fmt.Sprintf("exit %d", ps.ExitCode())
}

// stderrTail is the end of what the run wrote to stderr, for a failure.
// Only after wait.
func (p *tailProc) stderrTail() string {
	s := strings.TrimRight(p.stderr.String(), "\n")
	if s == "" {
		return "(stderr empty)"
	}
	ls := strings.Split(s, "\n")
	if len(ls) > 10 {
		ls = ls[len(ls)-10:]
	}
	return "stderr (last lines):\n  " + strings.Join(ls, "\n  ")
}
