package emulator

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/fake"
)

// inProcess is the Fake backend: internal/fake's wire handler served on a
// loopback port by the test binary itself, so tests reach it through the
// SDK, the real HTTP stack and the real binary exactly as they reach a
// node emulator, with nothing to install and nothing to start.
type inProcess struct {
	srv  *http.Server
	done chan struct{} // closed when Serve returned
	once sync.Once
}

// serve starts a new, empty fake on e.plainPort (a free one the first
// time, unless Options.Port fixes it). The caller holds e.mu or owns e.
func (e *Emulator) serve() error {
	start := time.Now()
	port := e.plainPort
	if port == 0 {
		port = e.opts.Port
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return fmt.Errorf("emulator: %s: %w: 127.0.0.1:%d (%v)", e.Backend, ErrPortInUse, port, err)
		}
		return fmt.Errorf("emulator: %s: %w", e.Backend, err)
	}
	e.plainPort = ln.Addr().(*net.TCPAddr).Port
	e.Endpoint = "http://127.0.0.1:" + strconv.Itoa(e.plainPort)
	svc := fake.New()
	// Pages of 100 shards, as kinesis-mock answers, so that paging is
	// exercised by streams of a test's size.
	svc.ShardLimit, svc.StateDelay, svc.PageSize = e.opts.ShardLimit, e.opts.StateDuration, 100
	p := &inProcess{srv: &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		_ = p.srv.Serve(ln) // ErrServerClosed after close
		close(p.done)
	}()
	e.served = p
	e.StartupTime = time.Since(start)
	return nil
}

// close stops the server and cuts open connections (subscriptions
// included); idempotent.
func (p *inProcess) close() {
	p.once.Do(func() {
		_ = p.srv.Close()
		<-p.done
	})
}

func (p *inProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Attached reports whether the emulator was attached (Attach, or
// KINESIS_SHARDS_TEST_ENDPOINT) rather than started by the harness: then it
// cannot be restarted, and a test that needs one of its own settings
// starts another.
func (e *Emulator) Attached() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.PID == 0 && e.served == nil
}
