package master

import (
	"fmt"
	"time"
)

// RaftResponsive reports whether Raft's main loop answers a request
// within timeout: a VerifyLeader is served by that loop in every state
// (a follower refuses it at once, a leader answers after one round of
// heartbeats or on stepping down), so any answer, error or not, means the
// loop turns. It is the master's liveness for a watchdog; a node without
// a quorum is alive, only not ready.
func (n *Node) RaftResponsive(timeout time.Duration) (bool, string) {
	select {
	case <-n.stopped:
		return false, "shut down"
	default:
	}
	var answered chan struct{}
	if p := n.liveProbe.Load(); p != nil {
		answered = *p // the last probe is still waiting: wait on it again
	} else {
		answered = make(chan struct{})
		n.liveProbe.Store(&answered)
		go func() {
			_ = n.raft.VerifyLeader().Error()
			n.liveProbe.Store(nil)
			close(answered)
		}()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-answered:
		return true, ""
	case <-t.C:
		return false, fmt.Sprintf("raft main loop did not answer within %v", timeout)
	}
}
