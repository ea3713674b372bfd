package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"sexton/api"
)

// A client without TLS waits for the server's hello, and a TLS server
// waits for the client's ClientHello: left alone, both sit out the
// handshake timeout. So a TLS listener looks at what the client sends
// first. A TLS client starts at once with a handshake record (first byte
// 0x16); anything else, or silence for plainClientWindow, is a client
// speaking the plain protocol, and is answered in that protocol with a
// refusal (errPortSpeaksTLS) it can show at once.
const (
	tlsRecordHandshake = 0x16
	// plainClientWindow is how long a TLS listener waits for the first
	// byte. A TLS client writes its ClientHello right after connecting,
	// so this is far beyond any real one's delay and well inside the
	// second in which a misconfigured plain client should hear why.
	plainClientWindow = 400 * time.Millisecond
)

// PortSpeaksTLS and PortIsPlain start the messages a client gets when its
// TLS setting does not match the server's.
const (
	PortSpeaksTLS = "this port speaks TLS"
	PortIsPlain   = "this port does not speak TLS"
)

func errPortSpeaksTLS() *api.Error {
	return api.Errorf(api.CodeUnauthenticated, "%s: give --tls-ca (and a client certificate, --tls-cert and --tls-key, if the server requires one)", PortSpeaksTLS)
}

// sniffConn is a TLS listener's raw connection. Its first byte is peeked
// (sniff) before crypto/tls reads anything; afterwards reads go straight to
// the socket once the peeked byte is consumed.
type sniffConn struct {
	net.Conn
	br *bufio.Reader
}

func newSniffConn(nc net.Conn) *sniffConn {
	return &sniffConn{Conn: nc, br: bufio.NewReaderSize(nc, 16)}
}

func (c *sniffConn) Read(p []byte) (int, error) {
	if c.br.Buffered() > 0 {
		return c.br.Read(p)
	}
	return c.Conn.Read(p)
}

// errPlainClient is the refusal of a plain client on a TLS listener, for
// the log and the refused count.
var errPlainClient = errors.New("a client without TLS on this TLS port (" + PortSpeaksTLS + "; told the client so)")

// sniff waits up to plainClientWindow (never past deadline) for the first
// byte. A TLS handshake record goes on to the TLS handshake; anything else
// gets errPortSpeaksTLS as a plain frame, and the connection is refused.
func (c *sniffConn) sniff(deadline time.Time) error {
	window := time.Now().Add(plainClientWindow)
	if deadline.Before(window) {
		window = deadline
	}
	if err := c.Conn.SetReadDeadline(window); err != nil {
		return err
	}
	b, err := c.br.Peek(1)
	if err == nil && b[0] == tlsRecordHandshake {
		return c.Conn.SetReadDeadline(deadline)
	}
	if err != nil && !isTimeout(err) {
		return fmt.Errorf("closed before the TLS handshake: %w", err)
	}
	if !time.Now().Before(deadline) {
		return fmt.Errorf("TLS handshake not started within the handshake timeout")
	}
	buf, encErr := encodeFrame(&envelope{kind: kindWelcome, err: errPortSpeaksTLS()}, nil)
	if encErr == nil {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Conn.Write(buf.Bytes())
		releaseFrame(buf)
	}
	return errPlainClient
}
