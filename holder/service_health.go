package holder

import (
	"fmt"
	"time"
)

// Mounted reports whether the holder holds a current mount: it recovered
// its directory (OpenStore) and the master accepted it. It is the
// holder's readiness (systemd's READY=1).
func (s *Service) Mounted() bool {
	mounted, _, _ := s.mountState()
	return mounted
}

// followStall is how long the follow loop may go without a turn before
// it counts as stuck: one turn is at most a long-poll fetch (FetchWait)
// whose call keeps retrying for the client's MaxWait (FetchWait+10s), or
// one reconcile page (20s); twice all of that is no longer slow, it is hung.
func (s *Service) followStall() time.Duration {
	return 2 * (s.cfg.FetchWait + s.cfg.FetchWait + 10*time.Second + 20*time.Second)
}

// Alive reports whether the follow loop still turns: it retries through
// an unreachable master, so only a hung holder stops it. It is the
// holder's liveness for a watchdog; not being mounted is not being dead.
func (s *Service) Alive() (bool, string) {
	if s.stopped() {
		return false, "closed"
	}
	idle := time.Since(time.Unix(0, s.followTurn.Load()))
	if limit := s.followStall(); idle > limit {
		return false, fmt.Sprintf("follow loop has not turned for %v (limit %v)", idle.Round(time.Second), limit)
	}
	return true, ""
}
