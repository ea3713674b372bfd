package integration

import (
	"testing"
	"time"

	"sexton/transport"
)

func dialT(t *testing.T, addr, token string) *transport.Conn {
	t.Helper()
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, addr, transport.ClientConfig{Token: token})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
