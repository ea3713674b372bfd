// Package rebuild decides what a rebuilt cluster adopts from the records
// of the lost cluster's holders (`sexton operator rebuild`, docs/DESIGN.md §11).
//
// Merge is pure: it takes every holder's scan (api.HolderRecord pages,
// sorted by key and incarnation) and returns a Plan — the cluster id the
// holders' markers agree on, the incarnation floor, the segments to
// register, the objects to adopt, the copies to delete and what was
// dropped or found inconsistent — and Plan.Batches cuts it into
// RebuildAdopt entries. ScanHolder and VerifyCopy read a holder over the
// transport (holders.go). Run (run.go) is the whole rebuild as `sexton
// operator rebuild` runs it: it chooses the holders, scans them, reads
// the lost cluster's DFS root (dfsroot.go), merges, and sends the plan
// through the leader, reporting progress (progress.go) and returning a
// Report (report.go) that the command prints. The merge's rules are here
// so they can be tested without a cluster:
//
//   - per key the newest incarnation that is live on some holder and
//     tombstoned on none wins; a tombstoned (key, incarnation) never comes
//     back, wherever else it still reads as live;
//   - a tombstone a holder marks evicted (the copy was given up for space
//     after the master dropped that replica) is no tombstone for that
//     rule: it neither blocks the incarnation nor is adopted or deleted;
//   - on the first rebuild of a lost cluster an older live incarnation
//     still wins over a newer tombstoned one: a put that was revoked (its
//     client gave up) leaves exactly that, and the older incarnation is
//     the acknowledged value. The same picture also arises when a key
//     was overwritten while the old copy's holder was down and the new
//     incarnation then removed: the old value comes back. The scan cannot
//     tell the two apart, and losing an acknowledged value is the worse
//     error, so the first rebuild keeps the older one;
//   - a rerun into a cluster that serves the rebuilt table (a late
//     holder's adoption) decides the lost cluster's copies the same way,
//     as if that holder had been there the first time; the copies the
//     serving cluster issued itself (above Options.OwnAbove, its
//     incarnation base) are neither adopted nor deleted: its table alone
//     decides them (a revoked put's copy must not win over the value it
//     serves), and keys removed since the rebuild are the fsm's removal
//     memory's to refuse;
//   - every other live copy (an older incarnation, one tombstoned
//     elsewhere) becomes a delete task, not a place in the table;
//   - copies of the winning incarnation that differ in size or checksum
//     are reported and only the verified ones (read back and matching
//     their own record) kept, the most common verified version winning;
//   - the floor is the largest incarnation index seen on any holder, live
//     or dead, plus IncMargin (2³²), so the rebuilt cluster never issues
//     one at or below a copy of a holder that was not scanned;
//   - every segment id a scanned holder recorded for its cluster (the
//     master sends them in heartbeats) must be scanned or named by
//     Options.AllowMissing, else the merge refuses: a forgotten holder
//     would otherwise join later with copies the plan never saw;
//   - with Options.DFS, the DFS root's put records are copies too
//     (dfs.go): a removal record kills its incarnation and every older
//     one of the key (holder copies included), a revoke's, supersede's or
//     eviction's record its own; a holder's tombstone kills no DFS record
//     (it may be a revoked newer put's); the newest
//     surviving DFS incarnation's range must read back with its CRC or
//     the key is dropped (no older fallback); one DFS replica per object.
package rebuild
