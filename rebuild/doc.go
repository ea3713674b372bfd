// Package rebuild decides what a rebuilt cluster adopts from the records
// of the lost cluster's holders (`sexton operator rebuild`, docs/DESIGN.md §11).
//
// It is pure: Merge takes every holder's scan (api.HolderRecord pages,
// sorted by key and incarnation) and returns a Plan — the cluster id the
// holders' markers agree on, the incarnation floor, the segments to
// register, the objects to adopt, the copies to delete and what was
// dropped or found inconsistent. Reading the holders and sending the plan
// through the leader is the CLI's job (cmd/sexton/rebuild.go); the rules
// are here so they can be tested without a cluster:
//
//   - per key the newest incarnation that is live on some holder and
//     tombstoned on none wins; a tombstoned (key, incarnation) never comes
//     back, wherever else it still reads as live;
//   - a tombstone a holder marks evicted (the copy was given up for space
//     after the master dropped that replica) is no tombstone for that
//     rule: it neither blocks the incarnation nor is adopted or deleted;
//   - every other live copy (an older incarnation, one tombstoned
//     elsewhere) becomes a delete task, not a place in the table;
//   - copies of the winning incarnation that differ in size or checksum
//     are reported and only the verified ones (read back and matching
//     their own record) kept, the most common verified version winning;
//   - the floor is the largest incarnation index seen on any holder, live
//     or dead, so the rebuilt cluster never issues one at or below it.
package rebuild
