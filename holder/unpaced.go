package holder

import (
	"net"

	"golang.org/x/sys/unix"
)

// localCongestionControl is the congestion control of a data connection
// whose client is on this host. Reno never paces; a host default that
// does (BBR) spreads each value's segments over timer interrupts, which on
// loopback, with no network to pace for, only costs CPU on both ends
// (docs/SCALING.md, "The write path"). Reno is open to every process
// (the kernel never restricts it), so setting it needs no privilege.
const localCongestionControl = "reno"

// listenData listens on addr for the data listener: each connection from
// a client on this host is given localCongestionControl; any other keeps
// the host's default.
func listenData(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return localUnpaced{ln}, nil
}

// localUnpaced is a listener whose accepted local connections do not pace.
type localUnpaced struct{ net.Listener }

func (l localUnpaced) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		unpaceLocal(nc)
	}
	return nc, err
}

// unpaceLocal sets localCongestionControl on nc when its peer is on this
// host (localPeer). A failure keeps the host's default, which is only
// slower.
func unpaceLocal(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	local, lok := tc.LocalAddr().(*net.TCPAddr)
	peer, pok := tc.RemoteAddr().(*net.TCPAddr)
	if !lok || !pok || !localPeer(local, peer) {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, localCongestionControl)
	})
}

// localPeer reports whether a connection's peer is on this host: a
// loopback address, or the very address it connected to (a client that
// dialled one of this host's own addresses; the kernel carries that over
// loopback too).
func localPeer(local, peer *net.TCPAddr) bool {
	return peer.IP.IsLoopback() || peer.IP.Equal(local.IP)
}
