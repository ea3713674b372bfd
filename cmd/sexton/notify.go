package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"sexton/holder"
	"sexton/internal/sdnotify"
	"sexton/master"
)

// The servers tell systemd (Type=notify units, deploy/systemd) when they
// can serve and, with WatchdogSec, that they are still alive. Outside
// systemd none of this does anything.

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

// holderNotify is started before the holder opens its directory, so a
// long recovery keeps the watchdog fed (the process is working, and
// TimeoutStartSec bounds it); once the service runs, READY=1 follows its
// first mount and keep-alives need its follow loop to turn.
type holderNotify struct {
	svc atomic.Pointer[holder.Service]
	*sdnotify.Notifier
}

func notifyHolder(dir string) *holderNotify {
	h := &holderNotify{}
	h.Notifier = sdnotify.Start(sdnotify.Config{
		Ready: func() (bool, string) {
			svc := h.svc.Load()
			switch {
			case svc == nil:
				return false, "recovering " + dir
			case !svc.Mounted():
				return false, "mounting at the master"
			}
			return true, ""
		},
		Healthy: func() (bool, string) {
			if svc := h.svc.Load(); svc != nil {
				return svc.Alive()
			}
			return true, ""
		},
		ReadyStatus: "serving " + dir,
		OnError:     notifyError,
	})
	return h
}

// started hands the running service to the readiness and watchdog probes.
func (h *holderNotify) started(svc *holder.Service) { h.svc.Store(svc) }

// notifyError reports the first failed send only: the next keep-alive
// would repeat it every few seconds.
func notifyError(err error) {
	if notifyFailed.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "sexton: systemd notify: %v (further failures not shown)\n", err)
	}
}

var notifyFailed atomic.Bool
