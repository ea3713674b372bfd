// Package fsys is the small filesystem interface the holder's bucket store
// uses for every file access, an OS implementation, a fault-injecting
// wrapper for tests, and a power-loss model (PowerLoss) that keeps only
// what was fsynced: file data as of its last fsync, directory entries as
// of the last directory fsync.
//
// Routing all I/O through one interface is what lets tests prove the
// durability claims: a rule makes a given operation on a given path fail
// (EIO, ENOSPC, any error), once or always, and per-operation counters show
// how many fsyncs and renames a code path really issued. Faulty.SetSpace
// models a small filesystem (ENOSPC after N bytes, Statfs reporting the
// model), so full-disk paths are tested without root.
package fsys
