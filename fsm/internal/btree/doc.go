// Package btree is github.com/google/btree v1.1.3's generic B-tree
// (BTreeG: an in-memory B-tree with lazy copy-on-write Clone), copied
// here with one change: where a node splits.
//
// google/btree splits a full node in half. Keys inserted in ascending
// order always land past the last item of the node they go to, so every
// node they leave behind is half full, for good: the fsm's table of ten
// million objects put in key order (`sexton bench load`, or any keys
// that grow with time) took ~167 bytes per object, of which ~64 were
// empty slots. Here a full node that the new item goes past the end of
// is split near its end instead (splitIndex): the left node keeps all
// but one of its items, and the ascending run goes on filling the new
// right one, so such nodes are left full. An item that lands inside a
// node splits it in half as before, so random inserts are unchanged.
//
// The right node of such a split starts with one item, below the
// minimum a B-tree keeps in a node; this tree's deletion already
// tolerates it (it grows a child at or below the minimum by stealing
// from a sibling, or merging with one, before it descends), and the
// node is the one the next ascending inserts fill.
//
// A copy, not a fork on a module proxy, because it is one function's
// change to 800 lines that have not changed upstream since 2022; the
// tests here check the tree against a model under random and ascending
// inserts, deletes and clones, and the fill the change is for.
// google/btree's license (Apache 2.0) is in LICENSE.
package btree
