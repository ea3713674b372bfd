package master

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sexton/internal/tlsconf"
)

func (n *Node) startHTTP() error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := n.readiness(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if n.cfg.EnableDebug {
		// Profiles only when asked for (--enable-debug): they expose
		// internals, and a CPU profile or trace costs CPU for as long as
		// anyone who can reach this port asks (docs/SECURITY.md).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		// A snapshot now, for measuring what one costs (a remove bench
		// running across it; docs/SCALING.md, "How to reproduce"). POST only.
		mux.HandleFunc("/debug/snapshot", n.serveSnapshotNow)
	}
	mux.HandleFunc("/v1/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.status())
	})
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	if n.cfg.TLS != nil {
		// A client certificate is optional here whatever
		// --tls-client-auth says: health probes and scrapers rarely
		// carry one, and nothing here changes state.
		ln = tls.NewListener(ln, n.cfg.TLS.ServerConfig(tlsconf.VerifyClientCertIfGiven))
	}
	n.httpLn = ln
	n.httpSrv = &http.Server{Handler: mux}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = n.httpSrv.Serve(ln)
	}()
	return nil
}
