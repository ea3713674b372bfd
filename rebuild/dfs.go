package rebuild

import (
	"fmt"
	"slices"
	"strings"

	"sexton/api"
	"sexton/dfsio"
)

// DFSOptions give the merge the lost cluster's DFS root: its journal of
// range records (dfsio/DESIGN.md "Range records") and a reader of ranges.
type DFSOptions struct {
	// ClusterID is the cluster the root's marker names (zero: none).
	ClusterID uint64
	// Records are the journal's records in append order.
	Records []dfsio.RangeRecord
	// Verify reads a put record's range and reports whether it holds the
	// record's size and CRC-32C. Merge calls it only for the records that
	// may win their key.
	Verify func(dfsio.RangeRecord) bool
}

// DFSRejected is a put record the merge did not adopt although nothing
// removed it: its range no longer holds the recorded bytes (a torn write,
// a reused range), or it overlaps a newer adopted one.
type DFSRejected struct {
	Key         string
	Incarnation api.ObjectIncarnation
	Path        string
	Offset      int64
	Reason      string
}

// dfsKey is one key's records.
type dfsKey struct {
	puts []dfsio.RangeRecord
	// through is the largest incarnation a removal record kills with all
	// below it; exact are incarnations a revoke's record kills alone.
	through    api.ObjectIncarnation
	hasThrough bool
	exact      map[api.ObjectIncarnation]bool
}

func (k *dfsKey) killedThrough(inc api.ObjectIncarnation) bool {
	return k != nil && k.hasThrough && !k.through.Less(inc)
}

// indexDFS groups the journal by key and counts its incarnations into
// MaxSeen (a removal's too: the rebuilt cluster must issue none of them).
func (m *merger) indexDFS(o *DFSOptions) {
	m.dfs = map[string]*dfsKey{}
	for _, r := range o.Records {
		if m.own(r.Inc) {
			continue
		}
		m.p.MaxSeen = max(m.p.MaxSeen, r.Inc.Low)
		k := m.dfs[r.Key]
		if k == nil {
			k = &dfsKey{}
			m.dfs[r.Key] = k
			m.dfsKeys = append(m.dfsKeys, r.Key)
		}
		switch {
		case r.Op == dfsio.RecordPut:
			k.puts = append(k.puts, r)
		case r.Through:
			if !k.hasThrough || k.through.Less(r.Inc) {
				k.through, k.hasThrough = r.Inc, true
			}
		default:
			if k.exact == nil {
				k.exact = map[api.ObjectIncarnation]bool{}
			}
			k.exact[r.Inc] = true
		}
	}
	slices.Sort(m.dfsKeys)
	m.p.DFSRecords = len(o.Records)
	m.verifyDFS = o.Verify
}

// pickDFS decides key's DFS copies. Its candidates are the put records
// no removal record kills (a removal's kills every older incarnation, a
// revoke's, a supersede's or an eviction's its own; a holder's tombstone
// kills no DFS record: it may be a revoked newer put's, over an
// acknowledged DFS value). top is the newest candidate incarnation;
// win is a record of it whose range verifies, or nil. Below the holders'
// winner (floor) nothing is read. Records of top that do not verify are
// reported; an older record is never a fallback (it would be an
// overwritten value), as an older holder copy is not when the newest
// copies fail verification.
func (m *merger) pickDFS(key string, k *dfsKey, floor api.ObjectIncarnation, hasFloor bool) (win *dfsio.RangeRecord, top api.ObjectIncarnation, hasTop bool) {
	if k == nil {
		return nil, top, false
	}
	var cands []dfsio.RangeRecord
	for _, r := range k.puts {
		switch {
		case k.exact[r.Inc], k.killedThrough(r.Inc):
		default:
			cands = append(cands, r)
			if !hasTop || top.Less(r.Inc) {
				top, hasTop = r.Inc, true
			}
		}
	}
	if !hasTop || (hasFloor && top.Less(floor)) {
		return nil, top, hasTop
	}
	slices.SortStableFunc(cands, func(a, b dfsio.RangeRecord) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp64(a.Offset, b.Offset)
	})
	for i := range cands {
		r := &cands[i]
		if r.Inc != top {
			continue
		}
		if m.verifyDFS != nil && m.verifyDFS(*r) {
			return r, top, true
		}
		m.p.DFSRejected = append(m.p.DFSRejected, DFSRejected{Key: key, Incarnation: r.Inc, Path: r.Path, Offset: r.Offset,
			Reason: "the range does not hold the recorded size and CRC-32C (torn, never written, or reused)"})
	}
	return nil, top, true
}

func dfsReplicaOf(r *dfsio.RangeRecord) api.ReplicaDescriptor {
	d := r.Desc()
	return api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &d}
}

// dfsOverlaps resolves adopted DFS replicas that share bytes of one file
// (a range freed and reused whose old bytes happen to verify): the newer
// incarnation keeps it, the older loses its DFS replica, and an object
// left without replicas is dropped.
func (p *Plan) dfsOverlaps() {
	type span struct {
		obj      int
		path     string
		off, end int64
		inc      api.ObjectIncarnation
		key      string
	}
	var spans []span
	for i, o := range p.Objects {
		for _, r := range o.Replicas {
			if r.DFS != nil {
				spans = append(spans, span{obj: i, path: r.DFS.Path, off: r.DFS.Offset, end: r.DFS.Offset + r.DFS.AlignedSize, inc: o.Incarnation, key: o.Key})
			}
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return cmp64(a.off, b.off)
	})
	lose := map[int]bool{}
	for i := 1; i < len(spans); i++ {
		a, b := &spans[i-1], &spans[i]
		if a.path != b.path || a.end <= b.off {
			continue
		}
		loser, winner := a, b
		if b.inc.Less(a.inc) {
			loser, winner = b, a
		}
		lose[loser.obj] = true
		p.DFSRejected = append(p.DFSRejected, DFSRejected{Key: loser.key, Incarnation: loser.inc, Path: loser.path, Offset: loser.off,
			Reason: fmt.Sprintf("its range overlaps %q %s, a newer record", winner.key, winner.inc)})
		if loser == b {
			*b = *a // keep the survivor as the one later spans compare with
		}
	}
	if len(lose) == 0 {
		return
	}
	kept := p.Objects[:0]
	for i, o := range p.Objects {
		if lose[i] {
			o.Replicas = slices.DeleteFunc(slices.Clone(o.Replicas), func(r api.ReplicaDescriptor) bool { return r.DFS != nil })
			if len(o.Replicas) == 0 {
				p.Bytes -= o.Size
				p.DFSAdopted--
				p.Dropped = append(p.Dropped, Dropped{Key: o.Key, Reason: "its only copy, on the DFS root, overlaps a newer record"})
				continue
			}
			p.DFSAdopted--
		}
		kept = append(kept, o)
	}
	p.Objects = kept
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// exactKills is the incarnations revoke records kill (nil-safe).
func (k *dfsKey) exactKills() map[api.ObjectIncarnation]bool {
	if k == nil {
		return nil
	}
	return k.exact
}

// adoptDFSOnly makes win the key's object, with its DFS replica alone.
func (m *merger) adoptDFSOnly(key string, win *dfsio.RangeRecord) {
	tenant := win.Tenant
	if tenant == "" {
		tenant = api.DefaultTenant
	}
	m.p.Objects = append(m.p.Objects, api.RebuildObject{Key: key, Tenant: tenant, Size: win.Size, Incarnation: win.Inc,
		Replicas: []api.ReplicaDescriptor{dfsReplicaOf(win)}})
	m.p.Bytes += win.Size
	m.p.DFSAdopted++
}

// addDFS adds win's DFS replica to the key's object of the same
// incarnation that the holders' copies made, or makes one if none of
// them verified.
func (m *merger) addDFS(key string, win *dfsio.RangeRecord) {
	p := m.p
	if n := len(p.Objects); n > 0 && p.Objects[n-1].Key == key && p.Objects[n-1].Incarnation == win.Inc {
		o := &p.Objects[n-1]
		if len(o.Replicas) >= api.MaxReplicas {
			return
		}
		o.Replicas = append(o.Replicas, dfsReplicaOf(win))
		p.DFSAdopted++
		return
	}
	// No holder copy verified: the dropping of the key is undone.
	if n := len(p.Dropped); n > 0 && p.Dropped[n-1].Key == key {
		p.Dropped = p.Dropped[:n-1]
	}
	m.adoptDFSOnly(key, win)
}

// dfsKills lists a removal record for every put record of the lost
// cluster that the plan does not adopt and no removal record kills yet.
func (m *merger) dfsKills() {
	type ref struct {
		key  string
		inc  api.ObjectIncarnation
		desc api.DFSDescriptor
	}
	adopted := map[ref]bool{}
	for _, o := range m.p.Objects {
		for _, r := range o.Replicas {
			if r.DFS != nil {
				adopted[ref{o.Key, o.Incarnation, *r.DFS}] = true
			}
		}
	}
	for _, key := range m.dfsKeys {
		k := m.dfs[key]
		for _, r := range k.puts {
			if k.exact[r.Inc] || k.killedThrough(r.Inc) || adopted[ref{key, r.Inc, r.Desc()}] {
				continue
			}
			m.p.DFSKills = append(m.p.DFSKills, dfsio.RemovedRecord(key, r.Inc, r.Desc(), false))
		}
	}
}
