// Package dfsio owns the file I/O of DFS replicas: the client's positional
// writes and reads of a value at its descriptor's range, and the leader's
// file side effects (create and preallocate a bucket or shard file, delete
// an evicted one, list the root for reconciliation). It also reads a
// process's MOONCAKE_DFS_* settings and compares them with the master's.
//
// Adapter "posix" uses pread/pwrite (golang.org/x/sys/unix) on a directory
// every node mounts. "hf3fs" is accepted as a name and refused: it is not
// built into sexton.
//
// An acknowledged DFS write means the WriteAt calls completed, not that the
// bytes reached stable storage; MOONCAKE_DFS_FSYNC=1 adds an fdatasync after
// the write, before PutEnd.
package dfsio
