// Package snaptrigger is when a master node snapshots and how much log it
// keeps: a snapshot once the bytes applied since the last one reach a
// share of its size (Meter, staggered across voters by StaggerOf), and
// raft's count trigger and trailing log scaled to the state and the
// entries' size (CountTrigger, TrailingCount, LogSizing). Every decision
// is a function of its arguments; TestSnapTrigger runs them from
// testdata/*.txt.
package snaptrigger
