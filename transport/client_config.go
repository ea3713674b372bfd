package transport

import (
	"crypto/tls"
	"time"
)

// Client defaults.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultCallTimeout = 10 * time.Second
)

// ClientConfig configures connections made by Dial, Pool and ClusterClient.
// Zero values take the defaults.
type ClientConfig struct {
	// Token is the token this client proves to servers that require one
	// (the cluster token or a role token; the server tells by which it
	// matches). A server without a token accepts a client with one (see
	// DESIGN.md).
	Token string
	// TLS, when set, runs a TLS handshake right after connect, before
	// the token handshake. Nil dials plain TCP. If ServerName is empty
	// the host part of the dialled address is used (an IP address is
	// checked against the certificate's IP SANs). A certificate the
	// client refuses, or a server that refuses ours, is UNAUTHENTICATED,
	// like a token mismatch: it is configuration, not a failover.
	TLS *tls.Config
	// MaxFrame bounds every frame a server sends us (DefaultMaxFrame if 0).
	MaxFrame int
	// DialTimeout bounds the TCP connect.
	DialTimeout time.Duration
	// CallTimeout is the deadline of a call whose ctx has none.
	CallTimeout time.Duration
	// HandshakeTimeout bounds the handshake after connect.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds the arrival of one response frame once its
	// first byte is in, and each write of requests.
	FrameTimeout time.Duration
	// StrictResponses refuses (CORRUPT) a response body with a field the
	// resp type lacks. Off by default: a newer server may add fields an
	// older client can safely ignore, whereas servers decode requests
	// strictly (see Request.Decode).
	StrictResponses bool
}

func (c ClientConfig) withDefaults() ClientConfig {
	c.MaxFrame = clampMaxFrame(c.MaxFrame)
	c.DialTimeout = orDefault(c.DialTimeout, DefaultDialTimeout)
	c.CallTimeout = orDefault(c.CallTimeout, DefaultCallTimeout)
	c.HandshakeTimeout = orDefault(c.HandshakeTimeout, DefaultHandshakeTimeout)
	c.FrameTimeout = orDefault(c.FrameTimeout, DefaultFrameTimeout)
	return c
}
