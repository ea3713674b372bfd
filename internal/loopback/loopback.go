package loopback

import "net"

// Free returns a loopback address nobody listens on now. Another process
// may take it before the caller binds it; the dev cluster and the bench
// accept that.
func Free() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
