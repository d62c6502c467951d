package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
)

// The stub runs in a child process ("bench stub ..."), pinned to another
// core than the tail it serves, so the tail's CPU time and its core are its
// own. It prints its URL, serves until its stdin closes, then prints its
// counters.

func stubMain(args []string) error {
	if len(args) > 0 && args[0] == "fanout" {
		return fanoutMain(args[1:])
	}
	fs := flag.NewFlagSet("stub", flag.ContinueOnError)
	var o wirestub.Options
	fs.IntVar(&o.Shards, "shards", 1, "open shards")
	fs.IntVar(&o.RecordSize, "size", 1024, "payload bytes per record")
	fs.IntVar(&o.RecordsPerPage, "page", 0, "records per page (0: a full page)")
	fs.IntVar(&o.Pages, "pages", 0, "pages per shard before it is caught up (-1: for ever)")
	fs.BoolVar(&o.Binary, "binary", false, "binary payloads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := wirestub.Start(o)
	if err != nil {
		return err
	}
	fmt.Println(s.URL)
	// "stats" on stdin prints the counters; EOF (the parent closed it, or
	// died) prints them and ends.
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "stats" {
			printStats(s)
		}
	}
	printStats(s)
	return s.Close()
}

func printStats(s *wirestub.Server) {
	st := s.Stats()
	fmt.Printf("stats getrecords=%d records=%d payload=%d conns=%d maxconns=%d iterators=%d listshards=%d caughtup=%d\n",
		st.Calls["GetRecords"], st.RecordsServed, st.PayloadServed, st.ConnsAccepted, st.MaxActiveConns, st.Calls["GetShardIterator"], st.Calls["ListShards"], st.CaughtUpPages)
}

// stubProc is a running stub child.
type stubProc struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	stats map[string]int64
}

// startStub starts the stub child, on core cpu when cpu >= 0.
func startStub(ctx context.Context, cpu int, args ...string) (*stubProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := append([]string{self, "stub"}, args...)
	if cpu >= 0 {
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &stubProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line := make(chan string, 1)
	go func() {
		l, _ := p.out.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "http://") {
			p.stop()
			return nil, fmt.Errorf("stub did not start (%q)", l)
		}
		p.URL = l
		return p, nil
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("stub did not start in 60s")
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// query asks the stub for its counters.
func (p *stubProc) query() (map[string]int64, error) {
	if _, err := io.WriteString(p.stdin, "stats\n"); err != nil {
		return nil, err
	}
	return p.readStats()
}

func (p *stubProc) readStats() (map[string]int64, error) {
	type res struct {
		m   map[string]int64
		err error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := p.out.ReadString('\n')
		if err != nil {
			ch <- res{nil, err}
			return
		}
		m := map[string]int64{}
		for _, f := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "stats ")) {
			if k, v, ok := strings.Cut(f, "="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				m[k] = n
			}
		}
		ch <- res{m, nil}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("stub: no stats")
	}
}

// stop closes the stub's stdin, reads its last counters and waits for it.
func (p *stubProc) stop() {
	_ = p.stdin.Close()
	if m, err := p.readStats(); err == nil {
		p.stats = m
	}
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
