// Package fsck compares the leader's metadata with what every mounted
// holder holds (`sexton fsck`, docs/CLI.md): the objects and delete tasks
// the leader lists, each holder's scan of its live copies, and the
// leader's reconcile answer for them. It reports orphans (live on a
// holder, not live in the master, no pending task), missing replicas
// (the master's replica, absent from its holder) and unreachable
// holders. It only reads; the command line prints the Report.
package fsck
