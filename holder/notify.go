package holder

import (
	"sync/atomic"

	"sexton/internal/sdnotify"
)

// Notify tells systemd (a Type=notify unit, deploy/systemd) how the
// holder command's holder in dir stands; outside systemd it does nothing.
// It is started before the holder opens its directory, so a long
// recovery keeps the watchdog fed (the process is working, and
// TimeoutStartSec bounds it); once the service runs (Started), READY=1
// follows its first mount and keep-alives need its follow loop to turn.
// onError hears of a failed send.
type Notify struct {
	svc atomic.Pointer[Service]
	*sdnotify.Notifier
}

// StartNotify starts notifying for the holder in dir.
func StartNotify(dir string, onError func(error)) *Notify {
	h := &Notify{}
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
		OnError:     onError,
	})
	return h
}

// Started hands the running service to the readiness and watchdog probes.
func (h *Notify) Started(svc *Service) { h.svc.Store(svc) }
