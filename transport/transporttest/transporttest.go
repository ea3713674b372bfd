// Package transporttest holds what tests of a node's RPC listener share:
// one call on a fresh connection with a given client config (a token, a
// certificate or none), the way a role or TLS test asks what one caller
// may do,
// and the check that a listener's role table and its methods agree. Only
// tests import it.
package transporttest

import (
	"context"
	"slices"
	"testing"
	"time"

	"sexton/internal/authz"
	"sexton/transport"
)

// CallOnce makes one call to addr on a fresh connection with cfg and closes
// it. A dial failure fails the test: what the call answers is the caller's
// to check.
func CallOnce(t *testing.T, addr string, cfg transport.ClientConfig, method string, req, resp any) error {
	t.Helper()
	dialed, err := call(addr, cfg, method, req, resp)
	if !dialed {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return err
}

// Call is CallOnce for a caller that may be refused at the dial (a TLS
// handshake, a token): a dial failure is returned like the call's error.
func Call(addr string, cfg transport.ClientConfig, method string, req, resp any) error {
	_, err := call(addr, cfg, method, req, resp)
	return err
}

// call makes one call on a fresh connection, within five seconds; dialed
// says whether the connection was made.
func call(addr string, cfg transport.ClientConfig, method string, req, resp any) (dialed bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, addr, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	return true, conn.Call(ctx, method, req, resp)
}

// WantRoleTable fails t unless every method served has a row in table
// (called name, declared in file) and every row is a method served: a
// method added without deciding its role would be refused to everyone.
func WantRoleTable(t *testing.T, table authz.Table, name, file string, served []string) {
	t.Helper()
	for _, m := range served {
		if _, ok := table[m]; !ok {
			t.Errorf("method %s has no row in %s (%s)", m, name, file)
		}
	}
	for m := range table {
		if !slices.Contains(served, m) {
			t.Errorf("%s has a row for %s, which the listener does not serve", name, m)
		}
	}
}
