package fsm

import (
	"bytes"
	"crypto/sha256"
	"slices"

	"sexton/api"
	"sexton/snapshot"
)

// removedDigest identifies a removed key in the rebuild's removal memory:
// the first 16 bytes of the key's SHA-256. A fixed width bounds the memory
// whatever the keys' lengths; two keys colliding (about n²/2¹²⁹) would
// only turn one late copy into a delete task.
type removedDigest [snapshot.RebuildRemovedDigestLen]byte

func digestKey(key string) removedDigest {
	sum := sha256.Sum256([]byte(key))
	var d removedDigest
	copy(d[:], sum[:])
	return d
}

// maxRebuildRemoved bounds the removal memory; the snapshot's state
// record, which carries it, must fit one chunk (snapshot.MaxRebuildRemoved
// says why this many). A variable only so scenario tests can overflow it
// with a few keys; nothing else changes it.
var maxRebuildRemoved = snapshot.MaxRebuildRemoved

// rebuildWindowOpen reports whether late copies of the lost cluster may
// still be adopted: a rebuild began and `operator rebuild --close` has
// not ended it.
func (st *state) rebuildWindowOpen() bool { return st.rebuildCluster != 0 && !st.rebuildClosed }

// rememberRemoved records that key left the table, so no later adoption
// (a rerun, a late holder) brings an older copy of it back. Past
// maxRebuildRemoved keys the memory is dropped and rebuildOverflow set:
// from then on every adoption of a key absent from the table is refused.
func (st *state) rememberRemoved(key string) {
	if !st.rebuildWindowOpen() || st.rebuildOverflow {
		return
	}
	d := digestKey(key)
	if _, ok := st.rebuildRemoved[d]; ok {
		return
	}
	if len(st.rebuildRemoved) >= maxRebuildRemoved {
		st.rebuildRemoved, st.rebuildOverflow = nil, true
		return
	}
	if st.rebuildRemoved == nil {
		st.rebuildRemoved = map[removedDigest]struct{}{}
	}
	st.rebuildRemoved[d] = struct{}{}
}

// removedSinceRebuild reports whether key left the table since the
// rebuild began.
func (st *state) removedSinceRebuild(key string) bool {
	if len(st.rebuildRemoved) == 0 {
		return false
	}
	_, ok := st.rebuildRemoved[digestKey(key)]
	return ok
}

// removedBytes encodes the memory for the snapshot: the digests sorted and
// concatenated (nil when empty, so a state without it encodes as before).
func (st *state) removedBytes() []byte {
	if len(st.rebuildRemoved) == 0 {
		return nil
	}
	ds := make([]removedDigest, 0, len(st.rebuildRemoved))
	for d := range st.rebuildRemoved {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b removedDigest) int { return bytes.Compare(a[:], b[:]) })
	out := make([]byte, 0, len(ds)*len(removedDigest{}))
	for _, d := range ds {
		out = append(out, d[:]...)
	}
	return out
}

// restoreRemoved decodes removedBytes' encoding (the snapshot package has
// checked its length and order).
func restoreRemoved(b []byte) map[removedDigest]struct{} {
	n := len(b) / len(removedDigest{})
	if n == 0 {
		return nil
	}
	m := make(map[removedDigest]struct{}, n)
	for i := range n {
		var d removedDigest
		copy(d[:], b[i*len(d):])
		m[d] = struct{}{}
	}
	return m
}

// applyRebuildClose ends the adoption window of a finished rebuild: the
// removal memory is dropped and no later begin, adoption or late-holder
// mount is accepted. Repeating it is harmless.
func (st *state) applyRebuildClose(c *RebuildClose) *RebuildCloseResult {
	switch {
	case st.rebuildCluster == 0:
		return &RebuildCloseResult{Err: api.Errorf(api.CodeInvalidParams, "rebuild close: this cluster was never rebuilt")}
	case c.ClusterID != st.rebuildCluster:
		return &RebuildCloseResult{Err: api.Errorf(api.CodeInvalidParams, "rebuild close: this cluster rebuilt %016x, not %016x", st.rebuildCluster, c.ClusterID)}
	case st.clusterID != st.rebuildCluster:
		return &RebuildCloseResult{Err: api.Errorf(api.CodeInvalidParams, "rebuild close: the rebuild of %016x has not finished; rerun `operator rebuild` to finish it first", st.rebuildCluster)}
	}
	already := st.rebuildClosed
	st.rebuildClosed, st.rebuildRemoved, st.rebuildOverflow = true, nil, false
	return &RebuildCloseResult{Already: already}
}

// windowClosedErr is the answer to anything that would adopt after the
// window closed.
func (st *state) windowClosedErr(what string) *api.Error {
	return api.Errorf(api.CodeInvalidParams, "%s: the adoption window of the rebuild of cluster %016x is closed (operator rebuild --close); a late holder of the lost cluster can only be retired (operator retire) or wiped", what, st.rebuildCluster)
}

// RebuildStatus is the rebuild's part of the state, for status output.
type RebuildStatus struct {
	// Cluster is the lost cluster's id (zero: never rebuilt).
	Cluster  uint64
	Finished bool
	Closed   bool
	// Removed counts the keys in the removal memory; Overflowed says it
	// outgrew its bound and adoption of absent keys is refused.
	Removed    int
	Overflowed bool
	// IncBase is the incarnation base: every copy of the lost cluster is
	// at or below it, every copy this cluster issued above it.
	IncBase uint64
}

// Rebuild reports the rebuild's state.
func (f *FSM) Rebuild() RebuildStatus {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := f.st
	return RebuildStatus{Cluster: st.rebuildCluster, Finished: st.rebuildCluster != 0 && st.clusterID == st.rebuildCluster,
		Closed: st.rebuildClosed, Removed: len(st.rebuildRemoved), Overflowed: st.rebuildOverflow, IncBase: st.rebuildBase}
}
