// Package holder owns one LOCAL_DISK directory of a sexton holder: its
// identity marker and exclusive lock, the append-only bucket files and
// their metadata, the live index rebuilt from that metadata at start, and
// durable tombstones (BatchMarkDeleted; BatchMarkEvicted marks the ones
// eviction made, so a rebuild tells them from removals) and the
// watermarked bucket GC
// that reclaims dead bytes with crash-safe intents (gc_*.go). The
// master-follow loop and the data RPC build on this store.
//
// Layout of a directory (docs/DESIGN.md §5):
//
//	.mooncake_local_disk_segment_id  identity {v, segment_id, cluster_id, created} (JSON)
//	.lock                            flock(LOCK_EX|LOCK_NB) for the Store's life
//	<20-digit id>.bucket             value bytes, appended
//	<20-digit id>.meta               BucketMetadata (msgpack, CRC-32C trailer): the checkpoint
//	<20-digit id>.journal            put records appended since the .meta (length, CRC-32C, msgpack each)
//	.bucket_gc_intent                a GC round's {v, state, sources, target} (msgpack, CRC-32C), only during a round
//	.tombstone_floor                 per key, the highest incarnation tombstoned here {v, floors[{k, inc, at, ev?}]} (msgpack, CRC-32C)
//
// All file access goes through internal/fsys (tests wrap it in the fault
// filesystems of internal/fsys/errorfs), and every step of a put or a
// tombstone persistence and of a GC round has a named crash point
// (holder/crashpoint) that fires only in a testhooks build (DESIGN.md,
// "Test machinery").
package holder
