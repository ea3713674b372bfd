package integration

import (
	"testing"

	"sexton/transport"
)

// dialT dials addr with token; the connection closes when the test ends.
func dialT(t *testing.T, addr, token string) *transport.Conn {
	t.Helper()
	return dialTLS(t, addr, transport.ClientConfig{Token: token})
}
