package loopback

import (
	"net"

	"golang.org/x/sys/unix"
)

// CongestionControl is the congestion control of a TCP connection between
// two processes of one host. Reno never paces; a host default that does
// (BBR) spreads each large value's segments over timer interrupts, which
// on loopback, with no network to pace for, only costs CPU on both ends
// (docs/SCALING.md, "The write path"). Reno is open to every process (the
// kernel never restricts it), so setting it needs no privilege.
const CongestionControl = "reno"

// Unpace sets CongestionControl on nc when its peer is on this host
// (LocalPeer). A failure keeps the host's default, which is only slower.
func Unpace(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	local, lok := tc.LocalAddr().(*net.TCPAddr)
	peer, pok := tc.RemoteAddr().(*net.TCPAddr)
	if !lok || !pok || !LocalPeer(local, peer) {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, CongestionControl)
	})
}

// LocalPeer reports whether a connection's peer is on this host: a
// loopback address, or this end's own address (a process that dialled
// one of this host's own addresses; the kernel carries that over loopback
// too).
func LocalPeer(local, peer *net.TCPAddr) bool {
	return peer.IP.IsLoopback() || peer.IP.Equal(local.IP)
}
