package holder

import (
	"bufio"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
)

// sample finds the value of one series (name and labels exactly as the
// text format writes them, e.g. `x{a="b"}`) in a /metrics body.
func sample(body, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// The holder's HTTP endpoints: /healthz answers at once, /readyz only once
// the segment is mounted and replayed, and /metrics shows the store's
// usage against the watermarks, tombstone persistence, the fetch traffic,
// GC's work and the mount, each changing with what the holder did.
func TestHolderHTTPAndMetrics(t *testing.T) {
	m := startFakeMaster(t, grant.NewKey())
	f := newGCFixture(t, StoreOptions{})
	for i := range 4 {
		f.put(fmt.Sprintf("k%d", i), 1000) // one full 4-key bucket
	}
	f.put("live", 500) // opens a second bucket
	svc, err := StartService(f.s, ServiceConfig{Masters: []string{m.ln.Addr().String()}, ListenAddr: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0", Capacity: 1 << 20, HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	base := "http://" + svc.HTTPAddr()

	if code, _ := testutil.HTTPGet(t, nil, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d before mount, want 200", code)
	}
	if code, body := testutil.HTTPGet(t, nil, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not mounted") {
		t.Fatalf("/readyz = %d %q while the mount is held, want 503 naming the mount", code, body)
	}
	_, body := testutil.HTTPGet(t, nil, base+"/metrics")
	if v, ok := sample(body, "sexton_holder_mounted"); !ok || v != 0 {
		t.Fatalf("sexton_holder_mounted = %v (present %v) before mount", v, ok)
	}
	if !regexp.MustCompile(`(?m)^sexton_build_info\{.*go_version="` + regexp.QuoteMeta(runtime.Version()) + `".*\} 1$`).MatchString(body) {
		t.Fatalf("/metrics has no sexton_build_info{...,go_version=%q} 1", runtime.Version())
	}
	if v, _ := sample(body, "sexton_holder_live_bytes"); v != 4500 {
		t.Fatalf("sexton_holder_live_bytes = %v, want 4500", v)
	}
	if _, ok := sample(body, `sexton_holder_gc_watermark_ratio{level="high"}`); ok {
		t.Fatal("watermarks exported before GC was configured")
	}

	close(m.hold)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		code, _ := testutil.HTTPGet(t, nil, base+"/readyz")
		return code == http.StatusOK
	}, "/readyz 200 after mount and replay")

	// Tombstone the full bucket: one batch, one bucket persistence.
	f.kill("k0", "k1", "k2", "k3")
	_, body = testutil.HTTPGet(t, nil, base+"/metrics")
	for series, want := range map[string]float64{
		"sexton_holder_mounted":                                      1,
		"sexton_holder_mount_epoch":                                  1,
		"sexton_holder_replayed":                                     1,
		"sexton_holder_dead_bytes":                                   4000,
		"sexton_holder_live_bytes":                                   500,
		"sexton_holder_buckets":                                      2,
		`sexton_holder_objects{state="tombstoned"}`:                  4,
		"sexton_holder_tombstone_batches_total":                      1,
		"sexton_holder_tombstone_persist_seconds_count":              1,
		"sexton_holder_tombstone_persist_failures_total":             0,
		`sexton_holder_put_sync_seconds_count{step="data"}`:          2, // each bucket's first commit; the small values after it ride in their journal records
		`sexton_holder_put_sync_seconds_count{step="meta"}`:          5,
		"sexton_holder_capacity_bytes":                               1 << 20,
		`sexton_holder_gc_intent_recoveries_total{state="PREPARED"}`: 0,
	} {
		if v, ok := sample(body, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	used, _ := sample(body, "sexton_holder_used_bytes")
	if ratio, ok := sample(body, "sexton_holder_disk_usage_ratio"); !ok || used <= 4500 || ratio != used/(1<<20) {
		t.Errorf("usage ratio %v (present %v) for %v used bytes of 1 MiB", ratio, ok, used)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		_, body := testutil.HTTPGet(t, nil, base+"/metrics")
		v, _ := sample(body, `sexton_holder_fetches_total{result="empty"}`)
		return v >= 1
	}, "an empty fetch counted")

	// GC with the capacity: the fully dead bucket is unlinked.
	o := testGCOptions()
	o.Capacity, o.Interval = 1<<20, 20*time.Millisecond
	if err := f.s.StartGC(o, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		_, body = testutil.HTTPGet(t, nil, base+"/metrics")
		v, _ := sample(body, "sexton_holder_dead_bytes")
		c, _ := sample(body, "sexton_holder_gc_cleanup_pending")
		return v == 0 && c == 0
	}, "GC reclaims the dead bucket")
	for series, want := range map[string]float64{
		"sexton_holder_gc_enabled":                          1,
		`sexton_holder_gc_buckets_total{action="unlinked"}`: 1,
		`sexton_holder_gc_watermark_ratio{level="high"}`:    DefaultGCHighWatermark,
		`sexton_holder_gc_watermark_ratio{level="low"}`:     DefaultGCLowWatermark,
	} {
		if v, ok := sample(body, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if v, _ := sample(body, "sexton_holder_gc_bytes_reclaimed_total"); v < 4000 {
		t.Errorf("sexton_holder_gc_bytes_reclaimed_total = %v after unlinking a 4000-byte bucket", v)
	}
	if v, _ := sample(body, "sexton_holder_gc_passes_total"); v < 1 {
		t.Errorf("sexton_holder_gc_passes_total = %v", v)
	}
}

// The fetch/ack counters follow the tasks the master hands out and the
// outcomes tombstoning gives them.
func TestHolderTaskOutcomeCounters(t *testing.T) {
	m, s := mountedStore(t)
	mustPut(t, s, "a", incN(1), []byte("aaaa"))
	m.mu.Lock()
	m.tasks = []api.LocalDeleteTask{task(s, 1, "a", incN(1)), task(s, 2, "absent", incN(2))}
	m.mu.Unlock()
	svc := startTestService(t, s, m, func(c *ServiceConfig) {
		c.HTTPAddr = "127.0.0.1:0"
	})
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return m.ackedCount() >= 2 }, "both tasks acked")
	_, body := testutil.HTTPGet(t, nil, "http://"+svc.HTTPAddr()+"/metrics")
	for series, want := range map[string]float64{
		"sexton_holder_tasks_fetched_total":                         2,
		`sexton_holder_task_outcomes_total{outcome="Removed"}`:      1,
		`sexton_holder_task_outcomes_total{outcome="StaleVersion"}`: 1,
		`sexton_holder_fetches_total{result="tasks"}`:               1,
		`sexton_holder_acks_total{result="ok"}`:                     1,
	} {
		if v, ok := sample(body, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}
