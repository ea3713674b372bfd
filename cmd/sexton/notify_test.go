package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/holder"
	"sexton/internal/sdnotify"
	"sexton/internal/testport"
	"sexton/internal/testutil"
	"sexton/master"
)

// ports is this package's loopback range (internal/testport).
var ports = testport.Range{Lo: 16000, Hi: 18000}

// notifySocket listens on a unixgram socket as systemd would, names it in
// NOTIFY_SOCKET with a 200ms watchdog, and returns its datagrams.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	ch := testutil.NotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", "")
	return ch
}

// expectNoReady reads datagrams for d: keep-alives must come, READY=1 must not.
func expectNoReady(t *testing.T, ch <-chan string, d time.Duration) []string {
	t.Helper()
	var got []string
	dogs := 0
	end := time.After(d)
	for {
		select {
		case m := <-ch:
			got = append(got, m)
			if strings.Contains(m, sdnotify.Ready) {
				t.Fatalf("READY=1 before the server was ready: %q", got)
			}
			if strings.Contains(m, sdnotify.Watchdog) {
				dogs++
			}
		case <-end:
			if dogs < 2 {
				t.Fatalf("%d keep-alives in %v at a 100ms period: %q", dogs, d, got)
			}
			return got
		}
	}
}

// awaitReady waits for READY=1 and checks ready() at that moment, then
// that keep-alives follow.
func awaitReady(t *testing.T, ch <-chan string, ready func() bool) {
	t.Helper()
	end := time.After(30 * time.Second)
	for {
		select {
		case m := <-ch:
			if !strings.Contains(m, sdnotify.Ready) {
				continue
			}
			if !ready() {
				t.Fatalf("READY=1 (%q) while the server is not ready", m)
			}
			dogs := 0
			for dogs < 3 {
				select {
				case m := <-ch:
					if strings.Contains(m, sdnotify.Watchdog) {
						dogs++
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("keep-alives stopped after READY=1 (%d seen)", dogs)
				}
			}
			return
		case <-end:
			t.Fatal("no READY=1 within 30s")
		}
	}
}

// TestMasterNotifiesReadyAfterLeading: a master with no cluster yet keeps
// the watchdog fed but is not ready; once it is bootstrapped and has led
// (barrier, EpochBegin), READY=1 comes, then keep-alives.
func TestMasterNotifiesReadyAfterLeading(t *testing.T) {
	ch := notifySocket(t)
	raftAddr := ports.Addr(t)
	n, err := master.New(master.Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: raftAddr, RPCAddr: ports.Addr(t), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	sd := notifyMaster(n)
	defer sd.Stop()

	got := expectNoReady(t, ch, 600*time.Millisecond)
	if !strings.Contains(strings.Join(got, "\n"), "STATUS=starting: no leader known") {
		t.Errorf("no status saying what the master waits for: %q", got)
	}
	conf := raft.Configuration{Servers: []raft.Server{{ID: "m1", Address: raft.ServerAddress(raftAddr)}}}
	if err := n.Raft().BootstrapCluster(conf).Error(); err != nil {
		t.Fatal(err)
	}
	awaitReady(t, ch, func() bool { ok, _ := n.Readiness(); return ok && n.IsLeader() })
}

// TestHolderNotifiesReadyAfterMount: a holder whose master is not up yet
// keeps the watchdog fed but is not ready; once the master is up and the
// holder has mounted, READY=1 comes, then keep-alives.
func TestHolderNotifiesReadyAfterMount(t *testing.T) {
	ch := notifySocket(t)
	rpcAddr := ports.Addr(t)
	dir := t.TempDir()
	sd := holder.StartNotify(dir, nil)
	defer sd.Stop()
	svc, store, err := holder.Start(dir, holder.ServiceConfig{Masters: []string{rpcAddr}, ListenAddr: "127.0.0.1:0", Logger: hclog.NewNullLogger()}, holder.DefaultGCOptions(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	defer svc.Close()
	sd.Started(svc)

	expectNoReady(t, ch, 600*time.Millisecond)
	n, err := master.New(master.Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: ports.Addr(t), RPCAddr: rpcAddr, Bootstrap: true, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	awaitReady(t, ch, svc.Mounted)
}
