package sdnotify

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sexton/internal/testutil"
)

func TestNotifyWithoutSocketIsNoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify(Ready); sent || err != nil {
		t.Fatalf("Notify without NOTIFY_SOCKET: sent %v, %v", sent, err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative/path")
	if _, err := Notify(Ready); err == nil {
		t.Fatal("a relative NOTIFY_SOCKET was accepted")
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, c := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"junk", "", 0},
		{"-5", "", 0},
		{"30000000", "", 30 * time.Second},
		{"30000000", "1", 0}, // another process's watchdog
	} {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		if got := WatchdogInterval(); got != c.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, want %v", c.usec, c.pid, got, c.want)
		}
	}
}

// TestReadyOnlyWhenReadyAndKeepAlivesOnlyWhenHealthy: READY=1 comes once,
// after the probe first says yes; WATCHDOG=1 stops while unhealthy and
// resumes after.
func TestReadyOnlyWhenReadyAndKeepAlivesOnlyWhenHealthy(t *testing.T) {
	ch := testutil.NotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "100000") // keep-alives every 50ms
	t.Setenv("WATCHDOG_PID", "")
	var ready, healthy atomic.Bool
	healthy.Store(true)
	n := Start(Config{
		Ready:       func() (bool, string) { return ready.Load(), "waiting for the test" },
		Healthy:     func() (bool, string) { return healthy.Load(), "the test says so" },
		ReadyStatus: "serving",
		PollEvery:   10 * time.Millisecond,
	})
	defer n.Stop()

	count := func(d time.Duration) (readies, dogs int, all []string) {
		deadline := time.After(d)
		for {
			select {
			case m := <-ch:
				all = append(all, m)
				for _, l := range strings.Split(m, "\n") {
					switch l {
					case Ready:
						readies++
					case Watchdog:
						dogs++
					}
				}
			case <-deadline:
				return
			}
		}
	}
	r, w, all := count(300 * time.Millisecond)
	if r != 0 {
		t.Fatalf("READY=1 before the process was ready: %q", all)
	}
	if w < 3 {
		t.Fatalf("%d keep-alives in 300ms at a 50ms period: %q", w, all)
	}
	if !strings.Contains(strings.Join(all, "\n"), "STATUS=starting: waiting for the test") {
		t.Errorf("no starting status: %q", all)
	}
	ready.Store(true)
	r, w, all = count(300 * time.Millisecond)
	if r != 1 || w < 3 || !strings.Contains(strings.Join(all, "\n"), "STATUS=serving") {
		t.Fatalf("after ready: %d READY=1, %d keep-alives: %q", r, w, all)
	}
	healthy.Store(false)
	count(100 * time.Millisecond) // one keep-alive may have been in flight
	r, w, all = count(300 * time.Millisecond)
	if w != 0 || r != 0 {
		t.Fatalf("unhealthy, still %d keep-alives (%d READY=1): %q", w, r, all)
	}
	healthy.Store(true)
	if _, w, all = count(300 * time.Millisecond); w < 3 {
		t.Fatalf("healthy again: %d keep-alives: %q", w, all)
	}
	n.Stop()
	if _, _, all = count(100 * time.Millisecond); !strings.Contains(strings.Join(all, "\n"), Stopping) {
		t.Fatalf("no STOPPING=1 on Stop: %q", all)
	}
}
