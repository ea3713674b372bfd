package holder

import (
	"net"

	"sexton/internal/loopback"
)

// listenData listens on addr for the data listener: each connection from
// a client on this host runs loopback.CongestionControl (never paced); any
// other keeps the host's default.
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
		loopback.Unpace(nc)
	}
	return nc, err
}
