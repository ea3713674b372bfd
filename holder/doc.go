// Package holder owns one LOCAL_DISK directory of a sexton holder: its
// identity marker and exclusive lock, the append-only bucket files and
// their metadata, the live index rebuilt from that metadata at start, and
// durable tombstones (BatchMarkDeleted). The bucket GC, the master-follow
// loop and the data RPC build on this store.
//
// Layout of a directory (DESIGN.md §5 of the project):
//
//	.mooncake_local_disk_segment_id  identity {v, segment_id, cluster_id, created} (JSON)
//	.lock                            flock(LOCK_EX|LOCK_NB) for the Store's life
//	<20-digit id>.bucket             value bytes, appended
//	<20-digit id>.meta               BucketMetadata (msgpack, CRC-32C trailer): the commit point
//
// All file access goes through holder/fsys, and every step of a put or a
// tombstone persistence has a named crash point (holder/crashpoint).
package holder
