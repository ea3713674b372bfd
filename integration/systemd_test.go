package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/internal/testutil"
)

// notifyListener is what systemd listens on for a Type=notify unit: a
// unixgram socket named in NOTIFY_SOCKET.
type notifyListener struct {
	path string
	msgs <-chan string
}

func listenNotify(t *testing.T, name string) *notifyListener {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".sock")
	return &notifyListener{path: path, msgs: testutil.ListenNotify(t, path)}
}

// env is what systemd gives the service: the socket and a 400ms watchdog.
func (l *notifyListener) env() []string {
	return []string{"NOTIFY_SOCKET=" + l.path, "WATCHDOG_USEC=400000", "WATCHDOG_PID="}
}

// read reads messages until one satisfies stop or d passes; it returns
// what it read and whether stop ended it.
func (l *notifyListener) read(d time.Duration, stop func(m string) bool) (seen []string, stopped bool) {
	end := time.After(d)
	for {
		select {
		case m := <-l.msgs:
			seen = append(seen, m)
			if stop(m) {
				return seen, true
			}
		case <-end:
			return seen, false
		}
	}
}

// until reads messages until one contains want (and then checks now), or
// fails after d. It returns how many WATCHDOG=1 came before it.
func (l *notifyListener) until(t *testing.T, want string, d time.Duration, now func() error) int {
	t.Helper()
	seen, ok := l.read(d, func(m string) bool { return strings.Contains(m, want) })
	if !ok {
		t.Fatalf("no %q within %v; got %q", want, d, seen)
	}
	if now != nil {
		if err := now(); err != nil {
			t.Fatalf("%q arrived, but: %v", want, err)
		}
	}
	dogs := 0
	for _, m := range seen {
		if strings.Contains(m, "WATCHDOG=1") {
			dogs++
		}
	}
	return dogs
}

// quiet reads messages for d and fails if one contains never.
func (l *notifyListener) quiet(t *testing.T, never string, d time.Duration) []string {
	t.Helper()
	seen, early := l.read(d, func(m string) bool { return strings.Contains(m, never) })
	if early {
		t.Fatalf("%q too early: %q", never, seen)
	}
	return seen
}

// The binary under a Type=notify unit, started as systemd would start the
// masters of a new cluster, in any order: a master alone has no quorum, so
// it feeds the watchdog and says what it waits for, but is not READY; once
// its peer is up and a leader is elected, READY=1 comes (/readyz agrees at
// that moment), then keep-alives. A holder is READY once mounted. SIGTERM
// says STOPPING=1.
func TestSystemdNotify(t *testing.T) {
	base := t.TempDir()
	type node struct {
		id, raft, rpc, http string
		sd                  *notifyListener
		p                   *proc
	}
	nodes := []*node{{id: "m1"}, {id: "m2"}}
	var peers []string
	for _, n := range nodes {
		n.raft, n.rpc, n.http = freePort(t), freePort(t), freePort(t)
		n.sd = listenNotify(t, n.id)
		peers = append(peers, n.id+"="+n.raft)
	}
	start := func(n *node) {
		n.p = startProc(t, n.id, filepath.Join(base, n.id+".log"), n.sd.env(), "master", "--id", n.id,
			"--data-dir", filepath.Join(base, n.id), "--raft-addr", n.raft, "--rpc-addr", n.rpc, "--http-addr", n.http,
			"--peers", strings.Join(peers, ","), "--bootstrap")
	}
	m1, m2 := nodes[0], nodes[1]
	start(m1)
	seen := m1.sd.quiet(t, "READY=1", 1500*time.Millisecond)
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "STATUS=starting: no leader known") || strings.Count(all, "WATCHDOG=1") < 3 {
		t.Fatalf("a master without quorum: want keep-alives and a starting status, got %q\n%s", seen, tail(m1.p.logText(), 2000))
	}
	if code, body := testutil.HTTPGet(t, nil, "http://"+m1.http+"/readyz"); code == 200 {
		t.Fatalf("/readyz is %d %q without a quorum", code, body)
	}

	start(m2)
	readyNow := func(n *node) func() error {
		return func() error {
			if code, body := testutil.HTTPGet(t, nil, "http://"+n.http+"/readyz"); code != 200 {
				return fmt.Errorf("%s /readyz: %d %s", n.id, code, body)
			}
			return nil
		}
	}
	for _, n := range nodes {
		n.sd.until(t, "READY=1", 30*time.Second, readyNow(n))
		n.sd.until(t, "WATCHDOG=1", 2*time.Second, nil) // keep-alives go on after READY=1
	}

	hsd := listenNotify(t, "holder")
	hdir, haddr := filepath.Join(base, "h1"), freePort(t)
	startProc(t, "h1", hdir+".log", hsd.env(), "holder", "--masters", m1.rpc+","+m2.rpc, "--dir", hdir, "--rpc-addr", haddr, "--client-id", "h1")
	hsd.until(t, "READY=1", 30*time.Second, func() error {
		st, err := holderStatus(haddr, "")
		if err != nil || !st.Mounted {
			return fmt.Errorf("holder not mounted (%v)", err)
		}
		return nil
	})
	hsd.until(t, "WATCHDOG=1", 2*time.Second, nil)

	m1.p.stop()
	m1.sd.until(t, "STOPPING=1", 10*time.Second, nil)
}
