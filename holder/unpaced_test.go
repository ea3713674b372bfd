package holder

import (
	"testing"
	"time"

	"sexton/internal/loopback"
	"sexton/internal/testutil"
)

// A data connection from this host is not paced: it runs Reno whatever
// the host's default congestion control is.
func TestDataListenerLocalClientsRunReno(t *testing.T) {
	testutil.SkipIfUnpacedByDefault(t, loopback.CongestionControl)
	ln, err := listenData("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, nc := testutil.AcceptFrom(t, ln); testutil.CongestionControl(t, nc) != loopback.CongestionControl {
		t.Fatalf("a loopback client's data connection runs %s, want %s", testutil.CongestionControl(t, nc), loopback.CongestionControl)
	}

	// The holder's own data listener is that one.
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	svc, err := StartService(s, ServiceConfig{Masters: []string{"127.0.0.1:1"}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, ok := svc.ln.(localUnpaced); !ok {
		t.Fatalf("the data listener is a %T, not listenData's", svc.ln)
	}
}
