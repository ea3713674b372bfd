// Package layering holds the table of the module's layers and the test
// that keeps imports pointing down it: a package may import its own layer
// or a lower one, never a higher one. Leaves (api, internal/*, codecs,
// transport) know nothing of the nodes; the node packages (fsm, holder,
// raftio) know nothing of what composes them; the composition roots
// (devcluster, cmd/sexton) are imported by nothing but tests. The
// packages of test support (TestOnly) are imported by tests alone.
package layering

// Layers lists the module's packages by layer, lowest first, as paths
// relative to the module; "x/..." is every package below x (not x
// itself). A package in no layer is an error: add it where it belongs.
var Layers = [][]string{
	// Leaves: codecs, wire formats and helpers.
	// internal/testutil and raftio/raftiotest are leaves too, and TestOnly.
	{"api", "internal/...", "grant", "snapshot", "fsm/...", "holder/...", "raftio/...", "dfsio", "transport"},
	// One node's state machine, storage or Raft plumbing.
	{"fsm", "holder", "raftio"},
	// Nodes and the client library.
	{"master", "client", "rebuild"},
	// Composition roots and the tests that run the binary.
	{"devcluster", "cmd/sexton", "integration", "deploy/monitoring"},
}

// TestOnly lists the packages that hold what tests share (polling, HTTP,
// certificates, fault injection, the handshake relay): no shipped package
// imports them, so none of it reaches the binary.
var TestOnly = []string{"internal/testutil", "raftio/raftiotest"}
