package opshttp

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEndpointsAndLimits: the shared endpoints answer, the node's own
// handler is served, pprof only with Debug, and the server bounds header
// reads (the listener faces whoever can reach it).
func TestEndpointsAndLimits(t *testing.T) {
	for _, debug := range []bool{false, true} {
		ready := false
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/own", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("own")) })
		s, err := Start(Config{Addr: "127.0.0.1:0", Metrics: prometheus.NewRegistry(), Debug: debug,
			Ready: func() (bool, string) { return ready, "not mounted" }}, mux)
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + s.Addr()
		if c, b := get(t, base+"/healthz"); c != 200 || b != "ok\n" {
			t.Errorf("/healthz: %d %q", c, b)
		}
		if c, b := get(t, base+"/readyz"); c != http.StatusServiceUnavailable || b != "not mounted\n" {
			t.Errorf("/readyz while not ready: %d %q", c, b)
		}
		ready = true
		if c, _ := get(t, base+"/readyz"); c != 200 {
			t.Errorf("/readyz when ready: %d", c)
		}
		if c, b := get(t, base+"/v1/own"); c != 200 || b != "own" {
			t.Errorf("own handler: %d %q", c, b)
		}
		if c, _ := get(t, base+"/metrics"); c != 200 {
			t.Errorf("/metrics: %d", c)
		}
		if c, _ := get(t, base+"/debug/pprof/"); (c == 200) != debug {
			t.Errorf("/debug/pprof/ with Debug=%v: %d", debug, c)
		}
		if s.srv.ReadHeaderTimeout <= 0 || s.srv.ReadTimeout <= 0 || s.srv.IdleTimeout <= 0 {
			t.Errorf("timeouts: header %v read %v idle %v, want all bounded", s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.IdleTimeout)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := http.Get(base + "/healthz"); err == nil {
			t.Error("answers after Shutdown")
		}
	}
}
