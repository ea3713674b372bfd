package holder

// Test machinery (DESIGN.md, "Test machinery"): the named steps at which a test can run
// code inside the store (Store.hook) and the ack gate that holds the
// follow loop between a durable tombstone and its ack. Both exist only in
// a binary built with the testhooks tag (testhooks_on.go); in a release
// build (testhooks_off.go) testHook and waitAckGate are empty and compile
// away. Crash points (crashpoints.go, holder/crashpoint) follow the same
// tag.

// Test hook names: the steps a test can run code at.
const (
	hookGCAfterPrepare    = "gc.after-prepare"
	hookGCCopiedRecord    = "gc.copied-record"
	hookGCBeforeCommit    = "gc.before-commit"
	hookGCAfterCommit     = "gc.after-commit"
	hookTombstoneResolved = "tombstone.resolved"
	hookPutPlanned        = "put.planned"
	// hookTombstoneFloorWait: a tombstone batch found records absent and
	// is about to wait for the committer before recording their floors.
	hookTombstoneFloorWait = "tombstone.floor-wait"
)

// EnvAckGate names a file path. When set, a holder built with the
// testhooks tag creates that file before every ack and waits until
// something removes it. Integration tests use it to hold a holder between
// its tombstone and its ack while they kill the leader. A release build
// never reads it.
const EnvAckGate = "SEXTON_TEST_ACK_GATE"

// EnvSkipSync names, comma-separated, sync sites (syncsites.go) that a
// holder built with the testhooks tag leaves out: their fsync returns
// success without syncing. The durability audit runs the power-loss tests
// with each site left out to show a test fails without it. A release build
// never reads it.
const EnvSkipSync = "SEXTON_TEST_SKIP_SYNC"
