package holder

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"sexton/internal/opshttp"
)

// startHTTP serves the operator's endpoints, as a master does
// (internal/opshttp; HTTPS when the holder runs TLS): /metrics (this
// holder's registry), /healthz (the process answers) and /readyz (200
// only while mounted with the mount's replay done; the store was
// recovered before the service started, or it would not exist).
func (s *Service) startHTTP(addr string) error {
	srv, err := opshttp.Start(opshttp.Config{Addr: addr, TLS: s.cfg.TLS, Metrics: s.reg, Ready: s.readiness}, http.NewServeMux())
	if err != nil {
		return err
	}
	s.httpSrv = srv
	return nil
}

// HTTPAddr is the address /metrics is served on; "" when not serving.
func (s *Service) HTTPAddr() string {
	if s.httpSrv == nil {
		return ""
	}
	return s.httpSrv.Addr()
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
