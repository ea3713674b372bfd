// Package master is one sexton master node: hashicorp/raft wired to the
// replicated fsm, the msgpack RPC handlers clients and holders call, the
// leader's soft state (softstate.go: holder liveness, read leases, task
// backoff, the revoke gate, each a pure policy under master/policy) and
// the leader's background duties (EpochBegin on election, discard of
// abandoned puts).
//
// Everything nondeterministic (placement, clocks, the cluster id) is decided
// here, on the leader, and carried into the fsm inside a command. Nothing is
// put into the fsm that Apply could not recompute from the log.
package master
