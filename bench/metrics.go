package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
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

// masterProbe reads the masters' /metrics and /v1/status over HTTP, or
// HTTPS with the cluster's TLS settings when they are given (a master
// serves HTTPS when it has TLS, and asks no client certificate there).
type masterProbe struct {
	addrs  []string
	scheme string
	hc     *http.Client
	out    io.Writer // where a node that does not answer is reported
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
	eachSample(text, func(series, name string, v float64) {
		if series == name && want[name] {
			out[name] = v
		}
	})
	return out
}

// eachSample calls f for every sample of a Prometheus text exposition: the
// series as written ("name" or "name{labels}"), its metric name, and its
// value (a timestamp after it is ignored). Comments and malformed lines
// are skipped.
func eachSample(text string, f func(series, name string, v float64)) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		series, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(series, "{")
		f(series, name, v)
	}
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
			fmt.Fprintf(p.out, "master %s: /metrics: %v\n", a, err)
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
		fmt.Fprintln(p.out, "masters' RSS and heap: not read (give --master-http, the masters' --http-addr list)")
		return
	}
	now := p.memory()
	for _, a := range p.addrs {
		m, b := now[a], before[a]
		rss, okR := m[metricRSS]
		heap, okH := m[metricHeap]
		if !okR && !okH {
			fmt.Fprintf(p.out, "master %s: no %s or %s in /metrics\n", a, metricRSS, metricHeap)
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
		fmt.Fprintln(p.out, line)
	}
}

// printElections says when the Raft term moved between two statuses: the
// run's figures then include failovers (on a loaded machine, leaders that
// could not reach a quorum within the lease timeout stepped down).
func printElections(w io.Writer, before, after api.StatusResponse) {
	if after.Term > before.Term {
		fmt.Fprintf(w, "note: Raft term %d → %d during the run (elections): the figures include failovers\n", before.Term, after.Term)
	}
}

// commitParts are the leader's and followers' histograms that take a
// commit apart (raftio/rafttimings.go): what `bench remove --master-http`
// prints for its timed removes.
var commitParts = []string{
	"sexton_raft_commit_seconds",
	"sexton_raft_log_write_seconds",
	"sexton_raft_dispatch_to_commit_seconds",
	"sexton_raft_append_entries_seconds",
	"sexton_remove_batch_keys",
}

// parseHistograms reads the _sum and _count series of the named histograms,
// labelled or not, keyed by the series as written ("name_sum{role=\"leader\"}").
func parseHistograms(text string, names []string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n+"_sum"], want[n+"_count"] = true, true
	}
	out := map[string]float64{}
	eachSample(text, func(series, name string, v float64) {
		if want[name] {
			out[series] = v
		}
	})
	return out
}

// histogramReading is every master's commitParts series at one moment:
// address → series → value. A master that did not answer is absent.
type histogramReading map[string]map[string]float64

func (p *masterProbe) readHistograms() histogramReading {
	return p.readAll("master ", func(body string) map[string]float64 { return parseHistograms(body, commitParts) })
}

// readAll reads /metrics from every node of p, keeping what parse takes
// from each; a node that does not answer is reported (what names its
// kind: "master " or "") and absent.
func (p *masterProbe) readAll(what string, parse func(body string) map[string]float64) histogramReading {
	out := histogramReading{}
	for _, a := range p.addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := p.get(ctx, a, "/metrics")
		cancel()
		if err != nil {
			fmt.Fprintf(p.out, "%s%s: /metrics: %v\n", what, a, err)
			continue
		}
		out[a] = parse(string(body))
	}
	return out
}

// histogramMean is one series' mean between two readings of a master, and
// how many samples it is over: name is the histogram, labels its label
// set as written ("" or "{role=\"leader\"}").
func histogramMean(before, after map[string]float64, name, labels string) (mean float64, n float64) {
	n = after[name+"_count"+labels] - before[name+"_count"+labels]
	if n <= 0 {
		return 0, 0
	}
	return (after[name+"_sum"+labels] - before[name+"_sum"+labels]) / n, n
}

// printCommitParts prints, for each master read both times, where the
// commits between the two readings went. A master that proposed entries
// meanwhile (it led) gets the means of its proposal to applied result, its
// own log write, log write start to committed and AppendEntries round trip
// to each follower; any other, the mean of its log writes as a follower.
// Without --master-http it says how to get them.
//
// Then, given the timed run's elapsed time, it prints the commit cycle:
// the time per leader entry, split into the two log writes that lie in a
// row on it (hashicorp/raft writes the leader's log before it sends the
// entry, and the entry commits when the fastest follower has written it;
// the follower's part is the lower of the followers' mean writes)
// and the rest (transport, hand-offs, apply, answers, the clients' round
// trips). With one Remove entry in flight, the log store can only shorten
// the first part: docs/SCALING.md reads the 16 × 1 target off this line.
func (p *masterProbe) printCommitParts(before, after histogramReading, elapsed time.Duration) {
	if len(p.addrs) == 0 {
		fmt.Fprintln(p.out, "commit parts: not read (give --master-http, the masters' --http-addr list)")
		return
	}
	ms := func(s float64) string { return fmt.Sprintf("%.3f ms", s*1e3) }
	var (
		leaders              int
		entries, leaderWrite float64
		fastestFollower      = math.Inf(1)
	)
	for _, a := range p.addrs {
		b, n := before[a], after[a]
		if b == nil || n == nil { // not read both times: no difference to take
			continue
		}
		if m, count := histogramMean(b, n, "sexton_raft_commit_seconds", ""); count > 0 {
			leaders, entries = leaders+1, count
			line := fmt.Sprintf("commit parts, leader %s: %.0f entries, propose→applied %s", a, count, ms(m))
			if k, c := histogramMean(b, n, "sexton_remove_batch_keys", ""); c > 0 {
				line += fmt.Sprintf(" (%.1f keys per Remove entry)", k)
			}
			if m, c := histogramMean(b, n, "sexton_raft_log_write_seconds", `{role="leader"}`); c > 0 {
				leaderWrite = m
				line += ", own log write " + ms(m)
			}
			if m, c := histogramMean(b, n, "sexton_raft_dispatch_to_commit_seconds", ""); c > 0 {
				line += ", log write start→committed " + ms(m)
			}
			var peers []string
			for series := range n {
				if labels, ok := strings.CutPrefix(series, "sexton_raft_append_entries_seconds_count"); ok {
					peers = append(peers, labels)
				}
			}
			slices.Sort(peers)
			for _, labels := range peers {
				if m, c := histogramMean(b, n, "sexton_raft_append_entries_seconds", labels); c > 0 {
					line += fmt.Sprintf(", AppendEntries%s %s", labels, ms(m))
				}
			}
			fmt.Fprintln(p.out, line)
			continue
		}
		if m, c := histogramMean(b, n, "sexton_raft_log_write_seconds", `{role="follower"}`); c > 0 {
			fastestFollower = min(fastestFollower, m)
			fmt.Fprintf(p.out, "commit parts, follower %s: %.0f log writes, %s each\n", a, c, ms(m))
		}
	}
	// Only one leader's entries make one cycle: a run across an election
	// has two, and its cycle would be an average of unlike things.
	if leaders != 1 || leaderWrite == 0 || math.IsInf(fastestFollower, 1) || elapsed <= 0 {
		return
	}
	cycle := elapsed.Seconds() / entries
	writes := leaderWrite + fastestFollower
	head := fmt.Sprintf("commit cycle: %s an entry (%.0f entries in %.2f s)", ms(cycle), entries, elapsed.Seconds())
	if writes > cycle {
		fmt.Fprintf(p.out, "%s, shorter than its two log writes in a row (%s): entries overlapped\n", head, ms(writes))
		return
	}
	fmt.Fprintf(p.out, "%s: the two log writes in a row %s (the leader's %s, the fastest follower's %s), the rest %s (transport, hand-offs, apply, answers, the clients' round trips)\n",
		head, ms(writes), ms(leaderWrite), ms(fastestFollower), ms(cycle-writes))
}
