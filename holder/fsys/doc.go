// Package fsys is the small filesystem interface the holder's bucket store
// uses for every file access, an OS implementation, and a fault-injecting
// wrapper for tests.
//
// Routing all I/O through one interface is what lets tests prove the
// durability claims: a rule makes a given operation on a given path fail
// (EIO, ENOSPC, any error), once or always, and per-operation counters show
// how many fsyncs and renames a code path really issued.
package fsys
