// Package errorfs holds the fault-injecting filesystems that tests wrap
// around an fsys.FS, after pebble's vfs/errorfs: Faulty, where a rule makes
// a given operation on a given path fail (EIO, ENOSPC, any error), once or
// always, with per-operation counters that show how many fsyncs and renames
// a code path really issued, and a space model (SetSpace: ENOSPC after N
// bytes, Statfs reporting the model) so full-disk paths are tested without
// root; and PowerLoss, which keeps only what was fsynced: file data as of
// its last fsync, directory entries as of the last directory fsync.
//
// Only tests import this package; the layering test refuses a non-test
// import of it.
package errorfs
