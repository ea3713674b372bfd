package master

import (
	"encoding/json"
	"net/http"

	"sexton/internal/opshttp"
)

// startHTTP serves the operator's endpoints (internal/opshttp: /metrics,
// /healthz, /readyz, pprof with --enable-debug) and the master's own:
// /v1/status and, with --enable-debug, /debug/snapshot.
func (n *Node) startHTTP() error {
	mux := http.NewServeMux()
	if n.cfg.EnableDebug {
		// A snapshot now, for measuring what one costs (a remove bench
		// running across it; docs/SCALING.md, "How to reproduce"). POST only.
		mux.HandleFunc("/debug/snapshot", n.serveSnapshotNow)
	}
	mux.HandleFunc("/v1/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.status())
	})
	srv, err := opshttp.Start(opshttp.Config{Addr: n.cfg.HTTPAddr, TLS: n.cfg.TLS, Metrics: n.metrics.reg,
		Ready: n.readiness, Debug: n.cfg.EnableDebug}, mux)
	if err != nil {
		return err
	}
	n.httpSrv = srv
	return nil
}
