// Package policy is the master leader's pure policy: what only the leader
// knows and a new leader rebuilds (State: holder liveness, read leases and
// the term's lease floor, task retry backoff, the revoke gate), where a
// put's replicas go (Place, PlacePreferred), when a node snapshots and how
// much log it keeps (Meter, CountTrigger, TrailingCount, LogSizing,
// StaggerOf), whether a node is ready (ReadyFor), and the DFS duties'
// decisions (DFSDuties: read touches, file op backoff, stray files;
// LostUnits, UnreadyDFSFile).
//
// Every decision takes the time as an argument and does no I/O, so
// TestPolicy runs them on a fake clock from testdata/*.txt, one file per
// topic, with no cluster. The master feeds them its raft and fsm state
// and acts on their answers.
package policy
