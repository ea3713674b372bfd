package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Messages systemd understands (sd_notify(3)).
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Watchdog = "WATCHDOG=1"
)

// Status is the STATUS= line systemctl status shows.
func Status(s string) string { return "STATUS=" + strings.ReplaceAll(s, "\n", " ") }

// maxSocketPath bounds $NOTIFY_SOCKET: a unix socket path (sun_path) is
// at most 108 bytes; anything longer is not a socket systemd made.
const maxSocketPath = 108

// Notify sends the messages, newline-separated, in one datagram to
// $NOTIFY_SOCKET. It reports false (and no error) when the variable is
// unset: the process is not run by systemd as Type=notify.
func Notify(msgs ...string) (bool, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return false, nil
	}
	if len(path) > maxSocketPath {
		return false, fmt.Errorf("NOTIFY_SOCKET: %d bytes, longer than a unix socket path", len(path))
	}
	switch {
	case path[0] == '@':
		// An abstract socket: Go spells its leading NUL as '@' too.
	case path[0] != '/':
		return false, fmt.Errorf("NOTIFY_SOCKET %q: want an absolute path or an @abstract name", path)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(msgs, "\n"))); err != nil {
		return false, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return true, nil
}

// WatchdogInterval is the unit's WatchdogSec as systemd passed it
// ($WATCHDOG_USEC), or 0 when no watchdog watches this process (unset,
// malformed, or $WATCHDOG_PID names another process).
func WatchdogInterval() time.Duration {
	usec, err := strconv.ParseUint(os.Getenv("WATCHDOG_USEC"), 10, 63)
	if err != nil || usec == 0 {
		return 0
	}
	if p := os.Getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(os.Getpid()) {
		return 0
	}
	// Bound it so the conversion cannot overflow (a year is plenty).
	return time.Duration(min(usec, uint64(365*24*time.Hour/time.Microsecond))) * time.Microsecond
}

// Probe answers whether the process is ready (or healthy) and, when it
// is not, why: the reason becomes the STATUS= line.
type Probe func() (ok bool, why string)

// Config says when the process is ready and when it is healthy.
type Config struct {
	// Ready is polled every PollEvery until it first says yes; then
	// READY=1 is sent, once.
	Ready Probe
	// Healthy gates each WATCHDOG=1: a process that is not healthy stops
	// sending them and systemd kills it after WatchdogSec. Nil is always
	// healthy. It is asked before and after readiness: a hung process is
	// hung either way.
	Healthy Probe
	// ReadyStatus is the STATUS= line sent with READY=1.
	ReadyStatus string
	// PollEvery is how often Ready is polled (default 100ms).
	PollEvery time.Duration
	// OnError receives send failures (default: ignored; systemd cannot be
	// told about them anyway).
	OnError func(error)
}

// Notifier runs the readiness poll and the watchdog keep-alives.
type Notifier struct {
	cfg      Config
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Start begins polling readiness and, when $WATCHDOG_USEC is set, sending
// keep-alives at half its interval. Outside systemd it does nothing.
func Start(cfg Config) *Notifier {
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 100 * time.Millisecond
	}
	if cfg.Healthy == nil {
		cfg.Healthy = func() (bool, string) { return true, "" }
	}
	if cfg.OnError == nil {
		cfg.OnError = func(error) {}
	}
	n := &Notifier{cfg: cfg, stop: make(chan struct{})}
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return n
	}
	n.wg.Add(1)
	go n.readyLoop()
	if every := WatchdogInterval() / 2; every > 0 {
		n.wg.Add(1)
		go n.watchdogLoop(every)
	}
	return n
}

func (n *Notifier) send(msgs ...string) {
	if _, err := Notify(msgs...); err != nil {
		n.cfg.OnError(err)
	}
}

// loop calls step now and then every d until it answers true or Stop is
// called; it is the body of one of the loops wg counts.
func (n *Notifier) loop(d time.Duration, step func() (done bool)) {
	defer n.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for !step() {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

func (n *Notifier) readyLoop() {
	lastWhy := ""
	n.loop(n.cfg.PollEvery, func() bool {
		ok, why := n.cfg.Ready()
		if ok {
			n.send(Ready, Status(n.cfg.ReadyStatus))
			return true
		}
		if why != lastWhy {
			n.send(Status("starting: " + why))
			lastWhy = why
		}
		return false
	})
}

func (n *Notifier) watchdogLoop(every time.Duration) {
	sick := false
	n.loop(every, func() bool {
		if ok, why := n.cfg.Healthy(); ok {
			if sick {
				n.send(Watchdog, Status("healthy again"))
			} else {
				n.send(Watchdog)
			}
			sick = false
		} else if !sick {
			n.send(Status("unhealthy, watchdog keep-alives withheld: " + why))
			sick = true
		}
		return false
	})
}

// Stop ends the loops and tells systemd the process is stopping. It is
// safe to call more than once.
func (n *Notifier) Stop() {
	n.stopOnce.Do(func() {
		close(n.stop)
		n.wg.Wait()
		if os.Getenv("NOTIFY_SOCKET") != "" {
			n.send(Stopping, Status("stopping"))
		}
	})
}
