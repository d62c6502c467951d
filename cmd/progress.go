package cmd

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows that something is being waited for, on stderr: a spinner
// with the elapsed time on a terminal, plain lines otherwise (logs and CI
// read those).
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time

	mu   sync.Mutex
	msg  string
	done chan struct{}
	wg   sync.WaitGroup
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startProgress begins showing msg.
func (f *Factory) startProgress(msg string) *progress {
	p := &progress{w: f.IO.ErrOut, tty: f.IO.StderrTTY, start: time.Now(), msg: msg, done: make(chan struct{})}
	if !p.tty {
		fmt.Fprintln(p.w, msg+" ...")
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			p.mu.Lock()
			fmt.Fprintf(p.w, "\r\033[K%s %s (%.1fs)", spinnerFrames[i%len(spinnerFrames)], p.msg, time.Since(p.start).Seconds())
			p.mu.Unlock()
			select {
			case <-p.done:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Update changes the message; without a terminal a changed message is
// printed as a new line.
func (p *progress) Update(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.msg {
		return
	}
	p.msg = msg
	if !p.tty {
		fmt.Fprintln(p.w, msg+" ...")
	}
}

// Stop ends the display and prints final (if not empty) on its own line.
func (p *progress) Stop(final string) {
	if p.tty {
		select {
		case <-p.done:
		default:
			close(p.done)
		}
		p.wg.Wait()
		fmt.Fprint(p.w, "\r\033[K")
	}
	if final != "" {
		fmt.Fprintln(p.w, final)
	}
}

// Elapsed is the time since the progress started.
func (p *progress) Elapsed() time.Duration { return time.Since(p.start) }
