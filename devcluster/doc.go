// Package devcluster runs a whole sexton cluster in one process: a
// one-node master (a one-voter Raft cluster on disk) and one holder, in a
// directory of the caller's. It is what `sexton dev` runs and what the
// client package's examples run against; it is not for production.
package devcluster
