package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// Proxy is a loopback reverse proxy that applies an Injector's rules in
// front of an emulator, for code that cannot take an http.RoundTripper: the
// real binary (AWS_ENDPOINT_URL_KINESIS=p.URL) or a soak program.
type Proxy struct {
	URL string // http://127.0.0.1:PORT

	srv       *httptest.Server
	stop      context.CancelFunc // releases stalled requests
	transport *http.Transport
}

// Proxy starts a proxy to target (e.g. an emulator's Endpoint) that is
// closed when the test ends; it fails the test if it cannot start.
func (in *Injector) Proxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := in.StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy to target without a testing.TB (benchmarks
// take Proxy too; this is for soak programs). Close it when done.
func (in *Injector) StartProxy(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("faults: proxy target %q: want scheme://host:port (%v)", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faults: proxy: %w", err)
	}
	upstream := http.DefaultTransport.(*http.Transport).Clone()
	upstream.Proxy = nil // loopback emulators only
	ctx, stop := context.WithCancel(context.Background())
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
		},
		Transport: in.RoundTripper(upstream),
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// A dropped call, or one cut short by Close or by the client
			// leaving: close the connection without a response.
			if errors.Is(err, ErrDropped) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						conn.Close()
						return
					}
				}
			}
			http.Error(w, "faults proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	srv := &httptest.Server{
		Listener: l,
		Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			rp.ServeHTTP(w, r.WithContext(rctx))
		})},
	}
	srv.Start()
	return &Proxy{URL: srv.URL, srv: srv, stop: stop, transport: upstream}, nil
}

// Close releases stalled requests, waits for the calls in flight and closes
// every connection, upstream ones included (kinesis-mock's SIGTERM waits
// for idle keep-alive connections). It is idempotent.
func (p *Proxy) Close() {
	p.stop()
	p.srv.Close()
	p.transport.CloseIdleConnections()
}
