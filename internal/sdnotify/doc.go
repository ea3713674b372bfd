// Package sdnotify tells systemd how a sexton server is doing: READY=1
// once it can serve (Type=notify units wait for it), WATCHDOG=1 keep-alives
// at half the unit's WatchdogSec while the process is healthy, STATUS=
// lines for `systemctl status`, and STOPPING=1 on the way out.
//
// The protocol is one datagram per message on the unix socket named by
// $NOTIFY_SOCKET (see sd_notify(3)); it is written here by hand rather
// than with go-systemd's daemon package because that is all it is, and a
// dependency for one sendto is not worth its upgrades. Outside systemd
// (no $NOTIFY_SOCKET) every call is a no-op.
package sdnotify
