// Package fsys is the small filesystem interface that the holder's bucket
// store and the master's Raft storage use for every file access, and its
// OS implementation.
//
// Routing all I/O through one interface is what lets tests prove the
// durability claims: the fault filesystems of package errorfs (rules that
// fail a given operation on a given path, per-operation counters, a space
// model, and a power-loss model that keeps only what was fsynced) wrap an
// FS without the production code knowing. They live in their own package
// so that nothing that ships links them.
package fsys
