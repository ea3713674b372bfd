package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"sexton/internal/sdnotify"
	"sexton/master"
)

// The servers tell systemd (Type=notify units, deploy/systemd) when they
// can serve and, with WatchdogSec, that they are still alive. Outside
// systemd none of this does anything. The holder's probes are
// holder.Notify.

// notifyMaster sends READY=1 once the node is ready as /readyz means it
// (leader: after its first barrier and EpochBegin; follower: a leader
// known and everything committed applied), and WATCHDOG=1 while Raft's
// main loop answers.
func notifyMaster(n *master.Node) *sdnotify.Notifier {
	probeWithin := max(sdnotify.WatchdogInterval()/4, 500*time.Millisecond)
	return sdnotify.Start(sdnotify.Config{
		Ready:       n.Readiness,
		Healthy:     func() (bool, string) { return n.RaftResponsive(probeWithin) },
		ReadyStatus: fmt.Sprintf("serving: rpc %s", n.RPCAddr()),
		OnError:     notifyError,
	})
}

// notifyError reports the first failed send only: the next keep-alive
// would repeat it every few seconds.
func notifyError(err error) {
	if notifyFailed.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "sexton: systemd notify: %v (further failures not shown)\n", err)
	}
}

var notifyFailed atomic.Bool
