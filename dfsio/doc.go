// Package dfsio owns the file I/O of DFS replicas: the client's positional
// writes and reads of a value at its descriptor's range, and the leader's
// file side effects (create and preallocate a bucket or shard file, delete
// an evicted one, list the root for reconciliation, check the root's
// marker). It owns a process's DFS settings: it is the one reader of the
// MOONCAKE_DFS_* environment (root, adapter, fsync, and the allocator's
// settings, which fsm/dfsalloc only names and validates: a state package
// reads no environment), publishes the master's and compares a client's
// with them. The master's leader duties and the client (the CLI's DFS
// data path) both use it; it holds no allocator state. It also owns the
// root's journal of range records (records.go): the writer's put record of
// each DFS value and the leader's removal records, the only place outside
// the masters that says which key and incarnation a range holds.
//
// Adapter "posix" uses pread/pwrite (golang.org/x/sys/unix) on a directory
// every node mounts. "hf3fs" is accepted as a name and refused: it is not
// built into sexton.
//
// An acknowledged DFS write means the WriteAt calls completed, not that the
// bytes reached stable storage; MOONCAKE_DFS_FSYNC=1 adds an fdatasync after
// the write, before PutEnd.
package dfsio
