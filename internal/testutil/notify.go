package testutil

import (
	"net"
	"path/filepath"
	"testing"
)

// NotifySocket listens on a unixgram socket as systemd does for a
// Type=notify unit (ListenNotify), names it in NOTIFY_SOCKET for the rest
// of the test and returns the datagrams it receives.
func NotifySocket(t testing.TB) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	ch := ListenNotify(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	return ch
}

// ListenNotify listens on a unixgram socket at path, as systemd does for a
// Type=notify unit, until the test ends, and returns the datagrams it
// receives; the channel closes with the socket.
func ListenNotify(t testing.TB, path string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 1000)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return ch
}
