package holder

import (
	"strings"
	"testing"
	"time"
)

// Alive is the holder's watchdog liveness: true while the follow loop has
// turned within followStall, false once it has not (hung) or once closed.
func TestAliveNeedsTheFollowLoopToTurn(t *testing.T) {
	s := &Service{stop: make(chan struct{})}
	s.cfg.setDefaults()
	s.followTurn.Store(time.Now().UnixNano())
	if ok, why := s.Alive(); !ok {
		t.Fatalf("a loop that just turned: not alive: %s", why)
	}
	s.followTurn.Store(time.Now().Add(-s.followStall() - time.Second).UnixNano())
	if ok, why := s.Alive(); ok || !strings.Contains(why, "follow loop has not turned") {
		t.Fatalf("a loop stalled past %v: alive %v (%q)", s.followStall(), ok, why)
	}
	s.followTurn.Store(time.Now().UnixNano())
	close(s.stop)
	if ok, _ := s.Alive(); ok {
		t.Fatal("a closed service is alive")
	}
}
