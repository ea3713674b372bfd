package bench

import (
	"fmt"
	"testing"
	"time"
)

// TestLatenciesPercentiles: pct is the nearest-rank percentile of what
// was added, in any order; none added reads 0, and reset forgets.
func TestLatenciesPercentiles(t *testing.T) {
	l := &latencies{}
	if l.pct(0.5) != 0 {
		t.Errorf("empty p50 = %s, want 0", l.pct(0.5))
	}
	for _, ms := range []int{7, 1, 10, 3, 5, 9, 2, 8, 4, 6} {
		l.add(time.Duration(ms) * time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, time.Millisecond}, {0.5, 5 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {1, 10 * time.Millisecond}} {
		if got := l.pct(c.p); got != c.want {
			t.Errorf("p%v = %s, want %s", c.p*100, got, c.want)
		}
	}
	if l.count() != 10 {
		t.Errorf("count %d, want 10", l.count())
	}
	l.reset()
	if l.count() != 0 || l.pct(1) != 0 {
		t.Errorf("after reset: count %d, max %s; want 0, 0", l.count(), l.pct(1))
	}
}

// TestSliceClockRatesPerTenth: each tenth's rate is its objects over the
// time since the tenth before; a tenth reached by the same count as the
// one before (one batch crossing two bounds) rates 0.
func TestSliceClockRatesPerTenth(t *testing.T) {
	s := &sliceClock{total: 100}
	s.at = []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 4 * time.Second}
	got := fmt.Sprint(s.rates())
	if want := "[10 10 0 5]"; got != want {
		t.Errorf("rates %s, want %s", got, want)
	}
	s = &sliceClock{total: 100, start: time.Now()}
	s.note(35) // three tenths at once
	s.note(100)
	if len(s.at) != 10 {
		t.Errorf("%d tenths noted after the count reached the total, want 10", len(s.at))
	}
}

// TestHolderSyncLine: the holders' fsync figures are the data and
// metadata means per group commit over every holder read both times,
// and the replica writes per group commit.
func TestHolderSyncLine(t *testing.T) {
	p := &masterProbe{addrs: []string{"h1", "h2"}}
	reading := func(groups, data, meta float64) map[string]float64 {
		return map[string]float64{
			holderPutSync + `_count{step="data"}`: groups, holderPutSync + `_sum{step="data"}`: data,
			holderPutSync + `_count{step="meta"}`: groups, holderPutSync + `_sum{step="meta"}`: meta,
		}
	}
	before := histogramReading{"h1": reading(0, 0, 0), "h2": reading(10, 1, 1)}
	after := histogramReading{"h1": reading(30, 0.06, 0.03), "h2": reading(20, 1.04, 1.02)}
	got := holderSyncLine(p, before, after, 80)
	want := "holder fsync (the holders' sexton_holder_put_sync_seconds), mean per group commit: data fsync 2.500 ms, metadata persist 1.250 ms, over 40 group commits (2.0 replica writes each, if only this bench wrote)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := holderSyncLine(&masterProbe{}, nil, nil, 0); got != "holder fsync: not read (give --holder-http, the holders' --http-addr list)" {
		t.Errorf("without --holder-http: %q", got)
	}
}
