package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"

	"sexton/api"
)

// tlsHandshake runs the client side of TLS on nc within the handshake
// timeout (or ctx's deadline, if sooner).
func tlsHandshake(ctx context.Context, nc net.Conn, addr string, cfg ClientConfig) (*tls.Conn, error) {
	conf := cfg.TLS
	if conf.ServerName == "" {
		conf = conf.Clone()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		conf.ServerName = host
	}
	hctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	defer cancel()
	tc := tls.Client(nc, conf)
	err := tc.HandshakeContext(hctx)
	if err == nil {
		return tc, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, contextError(ctx, "TLS handshake with "+addr)
	case hctx.Err() != nil || isTimeout(err):
		return nil, api.Errorf(api.CodeUnavailable, "TLS handshake with %s: not completed within %s", addr, cfg.HandshakeTimeout)
	case tlsRefused(err):
		return nil, api.Errorf(api.CodeUnauthenticated, "TLS handshake with %s: %v", addr, err)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		// A plain server's first frame (its hello) is no TLS record: a
		// configuration mismatch another attempt will not fix.
		return nil, api.Errorf(api.CodeUnauthenticated, "TLS handshake with %s: %s: drop --tls-ca, --tls-cert and --tls-key, or turn TLS on at the server (%v)", addr, PortIsPlain, err)
	}
	return nil, api.Errorf(api.CodeUnavailable, "TLS handshake with %s: %v", addr, err)
}

// tlsRefused reports whether err is a certificate verdict, ours on the
// server's chain or the server's alert on ours: a configuration problem
// that another attempt will not fix.
func tlsRefused(err error) bool {
	var (
		verr  *tls.CertificateVerificationError
		uae   x509.UnknownAuthorityError
		cie   x509.CertificateInvalidError
		hne   x509.HostnameError
		alert *net.OpError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &uae), errors.As(err, &cie), errors.As(err, &hne):
		return true
	case errors.As(err, &alert) && alert.Op == "remote error":
		// crypto/tls reports a received alert as OpError{Op: "remote
		// error"}; during the handshake every alert a server sends is a
		// refusal (bad, unknown or missing certificate, no shared version).
		return true
	}
	return false
}

// coalesceLimit: with TLS, frames batched for one write are copied into
// one buffer up to this size, so they go out as a few records and one
// syscall rather than a record and a syscall each (net.Buffers.WriteTo
// has no vectored path on a *tls.Conn).
const coalesceLimit = 64 << 10

func isTLS(nc net.Conn) bool {
	_, ok := nc.(*tls.Conn)
	return ok
}
