// Package layering holds the table of the module's layers and the test
// that keeps imports pointing down it: a package may import its own layer
// or a lower one, never a higher one. Leaves (api, internal/*, codecs,
// transport) know nothing of the nodes; the node packages (fsm, holder,
// raftio, the master's policies under master/policy) know nothing of what
// composes them; the composition roots (devcluster, cmd/sexton) are
// imported by nothing but tests; bench and fsck sit between them, so only
// a composition root runs a bench or a check. The packages of test support (TestOnly) are imported by tests
// alone.
package layering

// Layers lists the module's packages by layer, lowest first, as paths
// relative to the module; "x/..." is every package below x (not x
// itself). A package in no layer is an error: add it where it belongs.
var Layers = [][]string{
	// Leaves: codecs, wire formats and helpers.
	// internal/testutil, raftio/raftiotest and transport/transporttest are
	// leaves too, and TestOnly.
	{"api", "internal/...", "grant", "snapshot", "fsm/...", "holder/...", "raftio/...", "dfsio", "transport", "transport/..."},
	// One node's state machine, storage or Raft plumbing, and the
	// master's pure leader policy.
	{"fsm", "holder", "raftio", "master/policy/..."},
	// Nodes, the client library, the rebuild, and the shapes the command
	// line prints (jsonout reads holder's and api's types).
	{"master", "client", "rebuild", "jsonout"},
	// Benches and checks over a running cluster, for the command line
	// only.
	{"bench", "fsck"},
	// Composition roots and the tests that run the binary.
	{"devcluster", "cmd/sexton", "integration", "deploy/monitoring", "clients/python/tests/certgen"},
}

// TestOnly lists packages that only tests may import: the fault
// filesystems fail and lose writes on purpose, the policies' data-driven
// runner links package testing, and the rest hold what tests share
// (polling, HTTP, certificates, the handshake relay, one RPC call), so no
// package that ships (in the default build or with the testhooks tag) may
// link them.
var TestOnly = []string{"internal/fsys/errorfs", "internal/testutil", "master/policy/policytest", "raftio/raftiotest", "transport/transporttest"}
