package holder

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sexton/internal/tlsconf"
)

// startHTTP serves the operator's endpoints, as a master does (HTTPS
// when the holder runs TLS):
// /metrics (this holder's registry), /healthz (the process answers) and
// /readyz (200 only while mounted with the mount's replay done; the store
// was recovered before the service started, or it would not exist).
func (s *Service) startHTTP(addr string) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := s.readiness(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if s.cfg.TLS != nil {
		// HTTPS with the holder's certificate, as on a master; a client
		// certificate is optional whatever --tls-client-auth says: probes
		// and scrapers rarely carry one, and nothing here changes state.
		ln = tls.NewListener(ln, s.cfg.TLS.ServerConfig(tlsconf.VerifyClientCertIfGiven))
	}
	s.httpLn = ln
	// Bounded header reads: the listener faces whoever can reach it.
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.httpSrv.Serve(ln)
	}()
	return nil
}

// HTTPAddr is the address /metrics is served on; "" when not serving.
func (s *Service) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// MetricsRegistry is the holder's Prometheus registry (what /metrics
// serves), for embedding processes and tests.
func (s *Service) MetricsRegistry() *prometheus.Registry { return s.reg }

func (s *Service) readiness() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.mounted:
		// Not the segment id: BindCluster may be rewriting the identity now.
		return false, "segment not mounted (no leader reached yet, or the mount went stale)\n"
	case !s.replayed:
		return false, "mounted; replay (reconcile with the master) not done yet\n"
	}
	return true, ""
}
