package rebuild

import "sexton/api"

// removed reports whether a holder's record is evidence that its
// incarnation was removed: a tombstone that is not an eviction. An evicted
// copy was given up for space after the master dropped that replica, so
// the incarnation stays adoptable from a holder that still holds it live;
// the evicted copy itself has no bytes, so it is neither adopted nor
// deleted.
func removed(r *api.HolderRecord) bool { return r.Tombstoned && !r.Evicted }
