package raftio

import (
	"testing"

	"sexton/internal/testport"
)

// ports is this package's own range (testport.Range: one per package).
var ports = testport.Range{Lo: 18000, Hi: 19000}

func freeAddr(t testing.TB) string {
	t.Helper()
	return ports.Addr(t)
}
