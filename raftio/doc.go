// Package raftio is the storage and transport under a master's
// hashicorp/raft: the log store (raft-boltdb or raft-wal, chosen by what
// the data dir holds) and its offline move to the other kind, the store
// guard that keeps a node calm while its data dir cannot be written, the
// snapshot store and how a snapshot's file is written (behind, paced, at
// background priority), the authenticated Raft stream layer, and the sink
// of Raft's own timings.
//
// It decides how Raft's bytes reach the disk and the network, never what
// they say: it imports neither the fsm nor the master, and `sexton bench
// raft` and `sexton debug raft-append` open the same stores and transport
// the master does, so they measure the master's Raft and not a copy.
// DESIGN.md says why each piece is as it is.
package raftio
