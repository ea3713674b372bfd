// Package opshttp is the operator's HTTP listener that masters and holders
// share: /metrics, /healthz, /readyz, and the profiles when debugging is
// on, with the timeouts and TLS every such listener needs. Each node adds
// its own handlers to the mux before Start.
package opshttp

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sexton/internal/tlsconf"
)

// Timeouts of the listener. It faces whoever can reach the port, so a
// client that trickles its request or holds an idle connection is cut
// off. No write timeout: a profile, a trace or the master's
// /debug/snapshot answers only when it is done.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Config is what the shared endpoints need from a node.
type Config struct {
	// Addr is the address to listen on.
	Addr string
	// TLS, when set, makes the listener HTTPS with the node's
	// certificate. A client certificate is optional whatever
	// --tls-client-auth says: probes and scrapers rarely carry one, and
	// nothing here changes state.
	TLS *tlsconf.Source
	// Metrics is the registry /metrics serves.
	Metrics prometheus.Gatherer
	// Ready answers /readyz: 200 when ready, else 503 with why.
	Ready func() (ok bool, why string)
	// Debug registers /debug/pprof/: profiles expose internals and cost
	// CPU for as long as anyone who can reach the port asks
	// (docs/SECURITY.md), so only when asked for.
	Debug bool
}

// Server is a running listener.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Start registers the shared endpoints on mux, listens on cfg.Addr and
// serves mux until Shutdown or Close.
func Start(cfg Config, mux *http.ServeMux) (*Server, error) {
	mux.Handle("/metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := cfg.Ready(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if cfg.Debug {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS.ServerConfig(tlsconf.VerifyClientCertIfGiven))
	}
	s := &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
			IdleTimeout: IdleTimeout},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops accepting, lets requests in flight finish until ctx
// ends, then closes what is left; it returns once serving has stopped.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}

// Close stops the listener and every connection at once.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}
