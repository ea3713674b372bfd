package bench

import (
	"strings"
	"testing"
	"time"
)

// TestParseMetrics: the unlabelled samples named are read, with or
// without a timestamp; labelled series, comments, other names and
// malformed lines are not.
func TestParseMetrics(t *testing.T) {
	text := `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 6.5e+07
go_memstats_heap_inuse_bytes 1234 1700000000000
process_cpu_seconds_total{mode="user"} 99
process_cpu_seconds_total
process_cpu_seconds_total 
go_goroutines 12
`
	got := parseMetrics(text, []string{metricRSS, metricHeap, metricCPUSecs})
	want := map[string]float64{metricRSS: 6.5e7, metricHeap: 1234}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// TestCommitCycleSplitsTheLeadersEntryTime: the commit cycle line is
// the run's time per leader entry, split into the leader's log write plus
// its fastest follower's (the two that lie in a row on a commit) and the
// rest; a run with entries overlapped says so instead of a negative rest,
// and a run with two leaders (an election) prints no cycle at all.
func TestCommitCycleSplitsTheLeadersEntryTime(t *testing.T) {
	leader := func(entries, write float64) map[string]float64 {
		return map[string]float64{
			"sexton_raft_commit_seconds_count":                   entries,
			"sexton_raft_commit_seconds_sum":                     entries * 0.001,
			`sexton_raft_log_write_seconds_count{role="leader"}`: entries,
			`sexton_raft_log_write_seconds_sum{role="leader"}`:   entries * write,
		}
	}
	follower := func(writes, write float64) map[string]float64 {
		return map[string]float64{
			`sexton_raft_log_write_seconds_count{role="follower"}`: writes,
			`sexton_raft_log_write_seconds_sum{role="follower"}`:   writes * write,
		}
	}
	zero := histogramReading{"m1": {}, "m2": {}, "m3": {}}
	cycleLine := func(t *testing.T, after histogramReading, elapsed time.Duration) string {
		t.Helper()
		var out strings.Builder
		p := &masterProbe{addrs: []string{"m1", "m2", "m3"}, out: &out}
		p.printCommitParts(zero, after, elapsed)
		for line := range strings.Lines(out.String()) {
			if strings.HasPrefix(line, "commit cycle") {
				return strings.TrimSpace(line)
			}
		}
		return ""
	}
	// 1,000 entries in 1.5 s: 1.5 ms an entry; 0.4 ms on the leader, the
	// faster follower 0.5 ms (the slower one's 0.7 ms is off the path).
	got := cycleLine(t, histogramReading{"m1": leader(1000, 0.0004), "m2": follower(1000, 0.0007), "m3": follower(1000, 0.0005)}, 1500*time.Millisecond)
	want := "commit cycle: 1.500 ms an entry (1000 entries in 1.50 s): the two log writes in a row 0.900 ms (the leader's 0.400 ms, the fastest follower's 0.500 ms), the rest 0.600 ms (transport, hand-offs, apply, answers, the clients' round trips)"
	if got != want {
		t.Errorf("one leader:\n got %q\nwant %q", got, want)
	}
	got = cycleLine(t, histogramReading{"m1": leader(1000, 0.0004), "m2": follower(1000, 0.0005), "m3": follower(1000, 0.0005)}, 800*time.Millisecond)
	if want := "commit cycle: 0.800 ms an entry (1000 entries in 0.80 s), shorter than its two log writes in a row (0.900 ms): entries overlapped"; got != want {
		t.Errorf("overlapped:\n got %q\nwant %q", got, want)
	}
	if got = cycleLine(t, histogramReading{"m1": leader(500, 0.0004), "m2": leader(500, 0.0004), "m3": follower(1000, 0.0005)}, time.Second); got != "" {
		t.Errorf("two leaders: printed %q, want no cycle line", got)
	}
}

// TestParseHistograms: the _sum and _count series of the named histograms
// are read, labelled or not, keyed as written; buckets, other names and
// malformed lines are not.
func TestParseHistograms(t *testing.T) {
	text := `# TYPE sexton_raft_log_write_seconds histogram
sexton_raft_log_write_seconds_bucket{role="leader",le="0.001"} 3
sexton_raft_log_write_seconds_sum{role="leader"} 0.0025
sexton_raft_log_write_seconds_count{role="leader"} 5
sexton_raft_commit_seconds_sum 1.5 1700000000000
sexton_raft_commit_seconds_count 1000
sexton_raft_commit_seconds_count
sexton_fsm_apply_seconds_sum 9
`
	got := parseHistograms(text, []string{"sexton_raft_log_write_seconds", "sexton_raft_commit_seconds"})
	want := map[string]float64{
		`sexton_raft_log_write_seconds_sum{role="leader"}`:   0.0025,
		`sexton_raft_log_write_seconds_count{role="leader"}`: 5,
		"sexton_raft_commit_seconds_sum":                     1.5,
		"sexton_raft_commit_seconds_count":                   1000,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if mean, n := histogramMean(nil, got, "sexton_raft_log_write_seconds", `{role="leader"}`); n != 5 || mean != 0.0005 {
		t.Errorf("mean %v over %v, want 0.0005 over 5", mean, n)
	}
}
