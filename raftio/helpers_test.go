package raftio

import (
	"testing"

	"sexton/internal/testport"
	"sexton/raftio/raftiotest"
)

// ports is this package's own range (testport.Range: one per package).
var ports = testport.Range{Lo: 18000, Hi: 19000}

func freeAddr(t testing.TB) string {
	t.Helper()
	return ports.Addr(t)
}

// The relay of raftiotest plays the handshake by the lengths of its
// fields; they are this package's.
func TestRaftioTestFramingIsTheHandshakes(t *testing.T) {
	if raftiotest.MagicLen != len(raftAuthMagic) || raftiotest.NonceLen != raftNonceLen || raftiotest.MACLen != raftMACLen {
		t.Fatalf("raftiotest frames the handshake as magic %d, nonce %d, MAC %d bytes; raftio as %d, %d, %d",
			raftiotest.MagicLen, raftiotest.NonceLen, raftiotest.MACLen, len(raftAuthMagic), raftNonceLen, raftMACLen)
	}
}
