// Package btree is github.com/google/btree v1.1.3's generic B-tree
// (BTreeG: an in-memory B-tree with lazy copy-on-write Clone), copied
// here with two changes: where a node splits, and how far a node's item
// slice grows.
//
// google/btree splits a full node in half. Keys inserted in ascending
// order always land past the last item of the node they go to, so every
// node they leave behind is half full, for good: the fsm's table of ten
// million objects put in key order took ~167 bytes per object, of which
// ~64 were empty slots. Here an item that goes on a run splits a full
// node at the item's place instead (splitIndex): the items before it
// stay, full, and the run goes on filling the left node. An item goes on
// a run when it lands past the node's last item, or in the same gap
// between two of its items as the tree's previous insert: an ascending
// run that began inside the tree, as when `sexton bench load`'s 16
// clients take 256-key batches from one counter and a batch lands below
// batches already applied. Node fill in the package's test: ascending
// keys 97 %, those batches 86 % (60 % with the past-the-end rule
// alone), random keys ~69 % as before: an item landing anywhere else
// splits the node in half.
//
// Either side of such a split may start with one item, below the
// minimum a B-tree keeps in a node; this tree's deletion already
// tolerates it (it grows a child at or below the minimum by stealing
// from a sibling, or merging with one, before it descends), and the
// left node is the one the run goes on filling.
//
// The second change: append grows a full item slice to twice its length
// and then up to the allocator's next size class, counting the 8-byte
// header Go puts in front of an allocation with pointers over 512 bytes;
// a node of 64-byte items went from 32 slots to 75 (4,864 bytes) when it
// can hold at most 63 (4,040 bytes, the 4,096 class). items.room gives a
// node exactly maxItems slots when doubling would reach them: the fsm's
// table went from 113 to 100 bytes per object (BenchmarkHeapPerObject).
//
// A copy, not a fork on a module proxy, because the changes are small
// (splitIndex, the tree remembering its previous insert, and room, marked
// "sexton:") to 800 lines that have not changed upstream since 2022; the
// tests here check the tree against a model under random and ascending
// inserts, deletes and clones, and the fill the change is for.
// google/btree's license (Apache 2.0) is in LICENSE.
package btree
