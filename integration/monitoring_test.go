package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The shipped stuck-deletion rule, and what the test lowers in it: the
// age threshold (N = 300 s) and the time the alert stays pending (1m).
const (
	stuckAlert     = "SextonDeleteTaskStuck"
	stuckThreshold = "> 300"
	stuckFor       = "for: 1m"
)

// stuckRules is deploy/monitoring/alerts.yml with the stuck-deletion
// threshold lowered to 2 s and its pending time to 3 s, substituted in the
// shipped text so the expression Prometheus evaluates is the shipped one.
func stuckRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "monitoring", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "- alert: "+stuckAlert+"\n")
	if start < 0 {
		t.Fatalf("alerts.yml has no %s rule", stuckAlert)
	}
	end := len(text)
	if i := strings.Index(text[start+1:], "- alert: "); i >= 0 {
		end = start + 1 + i
	}
	rule := text[start:end]
	for _, s := range []string{stuckThreshold, stuckFor} {
		if n := strings.Count(rule, s); n != 1 {
			t.Fatalf("%s rule: %q appears %d times, want once:\n%s", stuckAlert, s, n, rule)
		}
	}
	rule = strings.Replace(rule, stuckThreshold, "> 2", 1)
	rule = strings.Replace(rule, stuckFor, "for: 3s", 1)
	return text[:start] + rule + text[end:]
}

// promAlert is one entry of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

func promGet(addr, path string, into any) error {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// startPrometheus runs the real prometheus binary on a private TSDB with
// 1 s scrapes and rule evaluations of the given rules.
func startPrometheus(t *testing.T, bin, rules string, masters, holders []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	quote := func(addrs []string) string { return `["` + strings.Join(addrs, `", "`) + `"]` }
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: sexton-master
    static_configs: [{targets: %s}]
  - job_name: sexton-holder
    static_configs: [{targets: %s}]
`, quote(masters), quote(holders))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("---- prometheus log ----\n%s", tail(string(b), 3000))
		}
	})
	return addr
}

// A holder stopped while removes target keys it holds: the leader's
// oldest-task age for its segment grows, and the shipped stuck-deletion
// rule (thresholds lowered) goes pending and then firing in a real
// Prometheus scraping three masters and two holders; the other holder's
// segment, whose tasks are acked, never alerts.
func TestStuckDeletionAlertFiresInPrometheus(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus binary not found (Debian package prometheus); the stuck-deletion alert is not tested end to end")
	}
	rules := stuckRules(t)
	c := startCluster(t, 3)
	h1HTTP, h2HTTP := freePort(t), freePort(t)
	h1 := c.startHolder(t, "mon1", "monp1", "SEXTON_HOLDER_HTTP_ADDR="+h1HTTP)
	h2 := c.startHolder(t, "mon2", "monp2", "SEXTON_HOLDER_HTTP_ADDR="+h2HTTP)
	st1, err := holderStatus(h1.addr, c.token)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := holderStatus(h2.addr, c.token)
	if err != nil {
		t.Fatal(err)
	}
	seg1, seg2 := string(st1.Segment), string(st2.Segment)
	var masters []string
	for _, m := range c.nodes {
		masters = append(masters, m.httpAddr)
	}
	addr := startPrometheus(t, prom, rules, masters, []string{h1HTTP, h2HTTP})

	// Every target scraped healthy before anything happens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var tr struct {
			Data struct {
				ActiveTargets []struct {
					ScrapeURL string `json:"scrapeUrl"`
					Health    string `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		up := 0
		if err := promGet(addr, "/api/v1/targets", &tr); err == nil {
			for _, tg := range tr.Data.ActiveTargets {
				if tg.Health == "up" {
					up++
				}
			}
		}
		if up == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus scrapes %d of 5 targets healthy after 30s: %+v", up, tr.Data.ActiveTargets)
		}
		time.Sleep(200 * time.Millisecond)
	}

	cl := c.client(0)
	for i := range 3 {
		putValue(t, c, cl, fmt.Sprintf("mon/stuck/%d", i), "monp1", []byte(strings.Repeat("s", 1000)))
	}
	putValue(t, c, cl, "mon/acked", "monp2", []byte(strings.Repeat("a", 1000)))

	// The holder of monp1 stops (alive, holding its lock, answering
	// nothing); then its keys are removed. The other holder's key too.
	if err := h1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h1.cmd.Process.Signal(syscall.SIGCONT) })
	removed := time.Now()
	for i := range 3 {
		mustRemove(t, c, fmt.Sprintf("mon/stuck/%d", i))
	}
	mustRemove(t, c, "mon/acked")
	waitNoTasks(t, cl, "mon/acked", 10*time.Second)

	var seen []string // the states of the seg1 alert, in order, deduplicated
	deadline = time.Now().Add(30 * time.Second)
	for {
		var ar struct {
			Data struct {
				Alerts []promAlert `json:"alerts"`
			} `json:"data"`
		}
		if err := promGet(addr, "/api/v1/alerts", &ar); err != nil {
			t.Fatalf("prometheus alerts API: %v", err)
		}
		for _, a := range ar.Data.Alerts {
			if a.Labels["alertname"] != stuckAlert {
				continue
			}
			switch a.Labels["segment"] {
			case seg1:
				if len(seen) == 0 || seen[len(seen)-1] != a.State {
					seen = append(seen, a.State)
					t.Logf("%.1fs after the removes: %s %s (value %s)", time.Since(removed).Seconds(), stuckAlert, a.State, a.Value)
				}
			case seg2:
				t.Fatalf("%s for the acking holder's segment %s: %+v", stuckAlert, seg2, a)
			default:
				t.Fatalf("%s for an unknown segment: %+v", stuckAlert, a)
			}
		}
		if len(seen) > 0 && seen[len(seen)-1] == "firing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s for %s: states seen %v, never firing within 30s", stuckAlert, seg1, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if seen[0] != "pending" {
		t.Fatalf("%s went %v: firing without being pending first", stuckAlert, seen)
	}
	// The alert stands for real tasks: the stopped holder's three.
	n := 0
	for _, task := range allTasks(t, cl) {
		if string(task.Segment) == seg1 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d tasks pending on %s while the alert fires, want 3", n, seg1)
	}
}
