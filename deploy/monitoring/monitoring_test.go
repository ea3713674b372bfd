package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"sexton/devcluster"
	"sexton/internal/testport"
)

// ports is this package's own range (see internal/testport).
var ports = testport.Range{Lo: 19000, Hi: 20000}

// descName pulls the metric name out of a Desc: client_golang exposes it
// only through String ("Desc{fqName: \"name\", ...}").
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exported lists every metric name the registries can produce (described,
// whether or not a sample exists yet), histogram and summary series
// included.
func exported(t *testing.T, regs ...*prometheus.Registry) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, reg := range regs {
		ch := make(chan *prometheus.Desc, 64)
		go func() {
			reg.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			m := descName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read a metric name from %s", d)
			}
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				names[m[1]+suffix] = true
			}
		}
	}
	return names
}

// sextonMetric finds metric names in a PromQL expression; label names and
// values never start with sexton_ here, and `up` is Prometheus's own.
var sextonMetric = regexp.MustCompile(`\bsexton_[a-zA-Z0-9_]+`)

type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int      `json:"id"`
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"`
}

type target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// dashboardExprs parses the dashboard and returns each panel's
// expressions by panel title, failing on a panel without any.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json is not valid JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Fatalf("dashboard without uid or title")
	}
	out := map[string][]string{}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
				}
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	if len(out) < 10 {
		t.Fatalf("only %d panels with queries", len(out))
	}
	return out
}

// alertExprs returns the expr lines of alerts.yml by alert name.
func alertExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	alert := ""
	for _, line := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(l, "- alert:"); ok {
			alert = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(l, "expr:"); ok && alert != "" {
			out[alert] = append(out[alert], v)
		}
	}
	if len(out) < 7 {
		t.Fatalf("only %d alerts with expressions in alerts.yml", len(out))
	}
	return out
}

// Every metric a dashboard panel or an alert rule names is one the
// master's or the holder's registry exports: a renamed metric cannot
// leave a panel or an alert silently empty. The registries are those of a
// real in-process master and holder.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	c, err := devcluster.Start(devcluster.Config{Dir: t.TempDir(), RPCAddr: ports.Addr(t), RaftAddr: ports.Addr(t),
		HTTPAddr: ports.Addr(t), HolderAddr: ports.Addr(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names := exported(t, c.Master.MetricsRegistry(), c.Holder.MetricsRegistry())
	for _, must := range []string{"sexton_raft_is_leader", "sexton_holder_dead_bytes", "sexton_holder_tombstone_persist_seconds_bucket"} {
		if !names[must] {
			t.Fatalf("the registries do not describe %s; is the name reading broken? %d names", must, len(names))
		}
	}
	check := func(file string, exprs map[string][]string) {
		used := 0
		for where, es := range exprs {
			for _, e := range es {
				for _, m := range sextonMetric.FindAllString(e, -1) {
					used++
					if !names[m] {
						t.Errorf("%s: %q uses %s, which neither registry exports", file, where, m)
					}
				}
			}
		}
		if used == 0 {
			t.Errorf("%s names no sexton metric at all", file)
		}
	}
	check("grafana-dashboard.json", dashboardExprs(t))
	check("alerts.yml", alertExprs(t))
}

// Every dashboard expression is valid PromQL: promtool checks them as
// recording rules (with the dashboard's variables filled in).
func TestDashboardExpressionsParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (apt-get install prometheus); dashboard PromQL not checked")
	}
	exprs := dashboardExprs(t)
	titles := make([]string, 0, len(exprs))
	for k := range exprs {
		titles = append(titles, k)
	}
	sort.Strings(titles)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	vars := strings.NewReplacer("$master_job", "sexton-master", "$holder_job", "sexton-holder")
	n := 0
	for _, title := range titles {
		for _, e := range exprs[title] {
			n++
			q, _ := json.Marshal(vars.Replace(e)) // a JSON string is a YAML string
			fmt.Fprintf(&b, "      - record: dashboard:expr%d\n        expr: %s\n", n, q)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil || !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool {
		return strings.Contains(l, fmt.Sprintf("SUCCESS: %d rules found", n))
	}) {
		t.Fatalf("promtool rejects dashboard expressions: %v\n%s", err, out)
	}
}
