package master

import (
	"io"
	"net"
	"testing"

	"github.com/hashicorp/raft"

	"sexton/internal/tlsconf"
	"sexton/internal/tlsconf/tlstest"
	"sexton/raftio"
)

// The token handshake's framing (raftio/raftstream.go), which the relay
// of TestRaftHandshakeRelayIsRefused plays byte by byte: an 8-byte magic,
// 32-byte nonces and HMAC-SHA256 proofs, server ids as a length byte and
// the id.
const (
	raftAuthMagic = "SXRAFT\x00\x02"
	raftNonceLen  = 32
	raftMACLen    = 32
)

// readID reads a length byte and that many bytes of server id.
func readID(c net.Conn) (string, error) {
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", err
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(c, id); err != nil {
		return "", err
	}
	return string(id), nil
}

// issueTLS is a node's TLS source with a certificate of ca that names
// no master (a holder's or a client's).
func issueTLS(t testing.TB, ca *tlstest.CA, name string) *tlsconf.Source {
	t.Helper()
	f, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	return loadTLS(t, f)
}

// issueMasterTLS is master id's TLS source with a certificate of ca.
func issueMasterTLS(t testing.TB, ca *tlstest.CA, id string) *tlsconf.Source {
	t.Helper()
	f, err := ca.IssueMaster(id, id)
	if err != nil {
		t.Fatal(err)
	}
	return loadTLS(t, f)
}

func loadTLS(t testing.TB, f tlsconf.Files) *tlsconf.Source {
	t.Helper()
	s, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openTestSnapStore opens a stopped node's snapshot store in dataDir.
func openTestSnapStore(t testing.TB, dataDir string) *raftio.SnapshotStore {
	t.Helper()
	s, err := raftio.OpenSnapshotStore(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readSnap reads snapshot id whole.
func readSnap(s raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte, error) {
	m, rc, err := s.Open(id)
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return m, b, err
}
