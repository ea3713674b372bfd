// Package transporttest holds what tests that call a node's RPC listener
// share: one call on a fresh connection with a given client config (a
// token, a certificate or none), the way a role test asks what one caller
// may do. Only tests import it.
package transporttest

import (
	"context"
	"testing"
	"time"

	"sexton/transport"
)

// CallOnce makes one call to addr on a fresh connection with cfg and closes
// it. A dial failure fails the test: what the call answers is the caller's
// to check.
func CallOnce(t *testing.T, addr string, cfg transport.ClientConfig, method string, req, resp any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, addr, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.Call(ctx, method, req, resp)
}
