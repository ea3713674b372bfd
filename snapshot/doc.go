// Package snapshot is sexton's versioned snapshot codec. It owns the byte
// format of a master's snapshot: it writes format 1.4.0 (1.3.0, 1.2.0 or
// 1.1.0 on request) and reads 1.4.0, 1.3.0, 1.2.0, 1.1.0 and 1.0.0,
// streaming in both directions so a snapshot of a million objects is never
// held in memory whole.
//
// A Writer takes the FSM's records section by section; Read hands them to
// a Sink as it decodes them and returns nil only for an intact stream;
// Inspect validates a stream and counts its records for operators. The
// package knows nothing of Raft or of what the records mean: whether they
// form a consistent state is the FSM's to judge. The byte layout is in
// DESIGN.md.
package snapshot
