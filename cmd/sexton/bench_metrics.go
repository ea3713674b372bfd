package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sexton/api"
)

// The masters' own figures the benches print: process metrics from their
// /metrics (the Go and process collectors every master registers).
const (
	metricRSS     = "process_resident_memory_bytes"
	metricHeap    = "go_memstats_heap_inuse_bytes"
	metricCPUSecs = "process_cpu_seconds_total"
)

// masterHTTPFlag registers --master-http: the RPC addresses say nothing of
// the masters' HTTP ports, so a bench that reads /metrics is told them.
func masterHTTPFlag(fs *flag.FlagSet) *string {
	return fs.String("master-http", envString("SEXTON_MASTER_HTTP", ""),
		"the masters' HTTP addresses A,B,C (their --http-addr), to read RSS, heap and CPU from /metrics; empty: not read (env SEXTON_MASTER_HTTP)")
}

// masterProbe reads the masters' /metrics and /v1/status over HTTP, or
// HTTPS with the cluster's TLS settings when they are given (a master
// serves HTTPS when it has TLS, and asks no client certificate there).
type masterProbe struct {
	addrs  []string
	scheme string
	hc     *http.Client
}

func (e *env) masterProbe(list string) (*masterProbe, error) {
	cc, err := e.clientConfig()
	if err != nil {
		return nil, err
	}
	p := &masterProbe{addrs: splitList(list), scheme: "http", hc: &http.Client{Timeout: 5 * time.Second}}
	if cc.TLS != nil {
		p.scheme = "https"
		p.hc.Transport = &http.Transport{TLSClientConfig: cc.TLS}
	}
	return p, nil
}

// get fetches path from addr, at most 64 MiB of it.
func (p *masterProbe) get(ctx context.Context, addr, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.scheme+"://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s%s: %s", addr, path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// scrape returns the named unlabelled metrics of the master at addr; a
// name it does not export is absent from the map.
func (p *masterProbe) scrape(ctx context.Context, addr string, names ...string) (map[string]float64, error) {
	body, err := p.get(ctx, addr, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body), names), nil
}

// parseMetrics reads the named unlabelled samples ("name value") of a
// Prometheus text exposition; malformed lines are skipped.
func parseMetrics(text string, names []string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		// The value may be followed by a timestamp.
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		if f, err := strconv.ParseFloat(fields[0], 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// leader is the HTTP address of the master whose /v1/status says it
// leads.
func (p *masterProbe) leader(ctx context.Context) (string, error) {
	var errs []string
	for _, a := range p.addrs {
		body, err := p.get(ctx, a, "/v1/status")
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		var st api.StatusResponse
		if err := json.Unmarshal(body, &st); err != nil {
			errs = append(errs, fmt.Sprintf("%s/v1/status: %v", a, err))
			continue
		}
		if st.RaftState == "Leader" {
			return a, nil
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("no master of --master-http says it leads (%s)", strings.Join(errs, "; "))
	}
	return "", fmt.Errorf("no master of --master-http %s says it leads", strings.Join(p.addrs, ","))
}

// mib formats bytes as MiB.
func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// masterMemory is one master's memory figures; a field it did not export
// (or a master that did not answer) is absent.
type masterMemory map[string]float64

// memory reads every master's RSS and heap in use; nil without
// --master-http. A master that does not answer has an empty entry.
func (p *masterProbe) memory() map[string]masterMemory {
	if len(p.addrs) == 0 {
		return nil
	}
	out := map[string]masterMemory{}
	for _, a := range p.addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := p.scrape(ctx, a, metricRSS, metricHeap)
		cancel()
		if err != nil {
			fmt.Printf("master %s: /metrics: %v\n", a, err)
		}
		out[a] = m
	}
	return out
}

// printMemory prints each master's RSS and heap in use now, what they
// grew by since before, and bytes per object: RSS over the objects the
// cluster holds, and the growth over the added objects.
func (p *masterProbe) printMemory(before map[string]masterMemory, objects int, added int64) {
	if len(p.addrs) == 0 {
		fmt.Println("masters' RSS and heap: not read (give --master-http, the masters' --http-addr list)")
		return
	}
	now := p.memory()
	for _, a := range p.addrs {
		m, b := now[a], before[a]
		rss, okR := m[metricRSS]
		heap, okH := m[metricHeap]
		if !okR && !okH {
			fmt.Printf("master %s: no %s or %s in /metrics\n", a, metricRSS, metricHeap)
			continue
		}
		line := fmt.Sprintf("master %s:", a)
		if okR {
			line += fmt.Sprintf(" RSS %s", mib(rss))
			if r0, ok := b[metricRSS]; ok {
				line += fmt.Sprintf(" (%+.1f)", (rss-r0)/(1<<20))
			}
		}
		if okH {
			line += fmt.Sprintf(", heap in use %s", mib(heap))
			if h0, ok := b[metricHeap]; ok {
				line += fmt.Sprintf(" (%+.1f)", (heap-h0)/(1<<20))
			}
		}
		if okR && objects > 0 {
			line += fmt.Sprintf("; %.0f bytes/object (RSS / %d objects)", rss/float64(objects), objects)
		}
		if r0, ok := b[metricRSS]; ok && okR && added > 0 {
			line += fmt.Sprintf(", %.0f bytes/object (RSS growth / %d added)", (rss-r0)/float64(added), added)
		}
		fmt.Println(line)
	}
}

// printElections says when the Raft term moved between two statuses: the
// run's figures then include failovers (on a loaded machine, leaders that
// could not reach a quorum within the lease timeout stepped down).
func printElections(before, after api.StatusResponse) {
	if after.Term > before.Term {
		fmt.Printf("note: Raft term %d → %d during the run (elections): the figures include failovers\n", before.Term, after.Term)
	}
}
