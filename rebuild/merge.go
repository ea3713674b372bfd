package rebuild

import (
	"fmt"
	"slices"
	"strings"

	"sexton/api"
	"sexton/dfsio"
)

// Scan is one holder's answer to a full HolderListRecords scan.
type Scan struct {
	Endpoint     string
	Segment      api.SegmentID
	ClusterID    uint64
	Pool         string
	Capabilities []api.Capability
	// Records are sorted by (key, incarnation), as the holder pages them.
	Records []api.HolderRecord
	// KnownSegments are the segment ids of its cluster the holder heard
	// of from a master before the masters were lost (nil: an older build
	// or a holder that never heartbeated).
	KnownSegments []api.SegmentID
}

// Options change how Merge decides.
type Options struct {
	// Verify reads back copies of a winning incarnation that disagree.
	Verify Verifier
	// OwnAbove, on a rerun, is the serving cluster's incarnation base:
	// a copy above it was issued by the serving cluster itself, whose
	// table alone decides its fate (a revoked or overwritten put's copy
	// must not be adopted over the value the table serves), so the merge
	// neither adopts nor deletes it and leaves it out of MaxSeen.
	OwnAbove uint64
	// AllowMissing names segments the holders' records name that the
	// operator knows are not scanned (a holder lost for good, or one to
	// adopt later); any other unscanned one makes Merge refuse.
	AllowMissing []api.SegmentID
	// DFS, if set, is the lost cluster's DFS root: its put records are
	// copies like the holders', under the same rules (dfs.go).
	DFS *DFSOptions
}

// IncMargin is added to the largest incarnation the scan saw to make the
// plan's IncFloor: a holder that was not scanned (down, forgotten, adopted
// later) may hold copies written after the newest one scanned, and the
// rebuilt cluster must never issue an incarnation at or below one of
// them. 2³² puts past the newest scanned one is more than any cluster
// writes between a holder's last contact and the loss of every master.
const IncMargin = 1 << 32

// ScannedHolder is one holder the plan was built from.
type ScannedHolder struct {
	Endpoint string
	Segment  api.SegmentID
	Pool     string
	Records  int
}

// Copy is one holder's live copy of a (key, incarnation).
type Copy struct {
	Segment  api.SegmentID
	Endpoint string
	Size     int64
	CRC32C   uint32
}

// Verifier reads a copy back from its holder and reports whether its
// bytes match the copy's own size and checksum. Merge calls it only for
// copies of a winning incarnation whose holders disagree.
type Verifier func(key string, inc api.ObjectIncarnation, c Copy) bool

// Conflict is a winning incarnation whose copies differed.
type Conflict struct {
	Key         string
	Incarnation api.ObjectIncarnation
	Copies      []Copy
	// Verified are the copies that read back matching their record.
	Verified []api.SegmentID
	// Kept are the copies adopted (empty: none verified, the key is lost).
	Kept []api.SegmentID
}

// Dropped is a key that gets no place in the table although some holder
// still has a record of it: every incarnation is tombstoned somewhere,
// legacy, or failed verification.
type Dropped struct {
	Key    string
	Reason string
}

// Plan is what the rebuild adopts.
type Plan struct {
	ClusterID uint64
	// MaxSeen is the largest incarnation index any holder reported
	// (on a rerun: of the lost cluster's copies).
	MaxSeen uint64
	// Own counts the keys a rerun left alone because every record of
	// them is the serving cluster's own (Options.OwnAbove).
	Own int
	// IncFloor is MaxSeen plus IncMargin: the rebuilt cluster's
	// incarnations start above it, so above every copy a holder that was
	// not scanned can hold.
	IncFloor uint64
	// Scanned are the holders the plan was built from, by segment.
	Scanned []ScannedHolder
	// Missing are segments the holders' records name that were not
	// scanned and that Options.AllowMissing allowed.
	Missing   []api.SegmentID
	Segments  []api.RebuildSegment
	Objects   []api.RebuildObject
	Deletes   []api.RebuildDelete
	Dropped   []Dropped
	Conflicts []Conflict
	// Records counts every record scanned; Bytes the adopted objects' sizes.
	Records int
	Bytes   int64
	// Legacy counts live records with the zero incarnation, which cannot
	// be adopted (the holder's own reconciliation removes them).
	Legacy int
	// DFSRecords counts the DFS root's records; DFSAdopted the objects
	// given a DFS replica; DFSRejected the put records not adopted
	// although nothing removed them.
	DFSRecords  int
	DFSAdopted  int
	DFSRejected []DFSRejected
	// DFSKills are the removal records (each its incarnation only) the
	// rebuild writes to the DFS root's journal before it adopts: one for
	// every put record of the lost cluster it does not adopt and nothing
	// killed yet, as every holder copy it does not adopt becomes a delete
	// task. Otherwise a value the rebuilt table never knew (an overwritten
	// one) would count again once the newer one is removed on a holder.
	DFSKills []dfsio.RangeRecord
}

// Merge builds the plan of a first rebuild; MergeWith says more.
func Merge(scans []Scan, verify Verifier) (*Plan, error) {
	return MergeWith(scans, Options{Verify: verify})
}

// MergeWith builds the plan from every scanned holder. It refuses holders
// whose markers name different clusters, two holders with one segment id,
// records out of order, and a segment some holder knows of that was
// neither scanned nor allowed missing.
func MergeWith(scans []Scan, o Options) (*Plan, error) {
	p := &Plan{}
	var used []*Scan
	for i := range scans {
		s := &scans[i]
		if s.ClusterID == 0 {
			if len(s.Records) != 0 {
				return nil, fmt.Errorf("holder %s (segment %s) holds %d records but its marker names no cluster", s.Endpoint, s.Segment, len(s.Records))
			}
			continue // a holder that never mounted anything: nothing to adopt
		}
		if p.ClusterID == 0 {
			p.ClusterID = s.ClusterID
		} else if s.ClusterID != p.ClusterID {
			return nil, fmt.Errorf("holders disagree on the cluster: %s (segment %s) is in cluster %016x, %s (segment %s) in %016x; rebuild only the holders of one cluster",
				used[0].Endpoint, used[0].Segment, p.ClusterID, s.Endpoint, s.Segment, s.ClusterID)
		}
		for _, u := range used {
			if u.Segment == s.Segment {
				return nil, fmt.Errorf("holders %s and %s both have segment %s (a copied directory?); rebuild from one of them", u.Endpoint, s.Endpoint, s.Segment)
			}
		}
		for j := 1; j < len(s.Records); j++ {
			a, b := &s.Records[j-1], &s.Records[j]
			if a.Key > b.Key || (a.Key == b.Key && !a.Incarnation.Less(b.Incarnation)) {
				return nil, fmt.Errorf("holder %s (segment %s): records out of order at %q %s", s.Endpoint, s.Segment, b.Key, b.Incarnation)
			}
		}
		used = append(used, s)
		caps := s.Capabilities
		if caps == nil {
			caps = []api.Capability{}
		}
		p.Segments = append(p.Segments, api.RebuildSegment{Segment: s.Segment, Pool: s.Pool, Capabilities: caps})
		p.Scanned = append(p.Scanned, ScannedHolder{Endpoint: s.Endpoint, Segment: s.Segment, Pool: s.Pool, Records: len(s.Records)})
		p.Records += len(s.Records)
	}
	if o.DFS != nil && o.DFS.ClusterID != 0 {
		switch {
		case p.ClusterID == 0:
			p.ClusterID = o.DFS.ClusterID
		case p.ClusterID != o.DFS.ClusterID:
			return nil, fmt.Errorf("the DFS root's marker names cluster %016x, the holders cluster %016x; name the lost cluster's DFS root", o.DFS.ClusterID, p.ClusterID)
		}
	}
	if p.ClusterID == 0 {
		return nil, fmt.Errorf("no scanned holder belongs to a cluster (every marker names cluster 0): nothing to rebuild")
	}
	slices.SortFunc(p.Segments, func(a, b api.RebuildSegment) int { return strings.Compare(string(a.Segment), string(b.Segment)) })
	slices.SortFunc(p.Scanned, func(a, b ScannedHolder) int { return strings.Compare(string(a.Segment), string(b.Segment)) })
	if err := p.account(used, o.AllowMissing); err != nil {
		return nil, err
	}
	m := merger{p: p, scans: used, pos: make([]int, len(used)), verify: o.Verify, ownAbove: o.OwnAbove}
	if o.DFS != nil {
		m.indexDFS(o.DFS)
	}
	m.run()
	p.dfsOverlaps()
	m.dfsKills()
	p.IncFloor = p.MaxSeen + IncMargin
	return p, nil
}

// account checks that every segment a scanned holder knows of was
// scanned or is allowed missing: a holder nobody named would otherwise
// mount the rebuilt cluster later holding copies the plan never saw.
func (p *Plan) account(used []*Scan, allow []api.SegmentID) error {
	scanned := map[api.SegmentID]bool{}
	for _, s := range used {
		scanned[s.Segment] = true
	}
	var unaccounted []string
	seen := map[api.SegmentID]bool{}
	for _, s := range used {
		for _, id := range s.KnownSegments {
			if scanned[id] || seen[id] {
				continue
			}
			seen[id] = true
			if slices.Contains(allow, id) {
				p.Missing = append(p.Missing, id)
				continue
			}
			unaccounted = append(unaccounted, string(id))
		}
	}
	slices.Sort(p.Missing)
	if len(unaccounted) > 0 {
		slices.Sort(unaccounted)
		return fmt.Errorf("the holders' records name %d segments that were not scanned: %s; start their holders and name them (--holders), or, if they are lost for good or are to be adopted later, pass --allow-missing-segments %s (their copies are not adopted now)",
			len(unaccounted), strings.Join(unaccounted, ", "), strings.Join(unaccounted, ","))
	}
	return nil
}

type merger struct {
	p      *Plan
	scans  []*Scan
	pos    []int
	verify Verifier
	// ownAbove is Options.OwnAbove.
	ownAbove uint64
	// dfs are the DFS root's records by key, dfsKeys their keys sorted,
	// dpos the next one run visits.
	dfs       map[string]*dfsKey
	dfsKeys   []string
	dpos      int
	verifyDFS func(dfsio.RangeRecord) bool
}

// own reports whether inc was issued by the serving cluster of a rerun.
func (m *merger) own(inc api.ObjectIncarnation) bool {
	return m.ownAbove != 0 && inc.Low > m.ownAbove
}

// held is one record with the holder it came from.
type held struct {
	scan *Scan
	rec  *api.HolderRecord
}

// run walks the holders' sorted lists together, one key at a time.
func (m *merger) run() {
	var recs []held
	for {
		key, ok := "", false
		for i, s := range m.scans {
			if m.pos[i] < len(s.Records) {
				if k := s.Records[m.pos[i]].Key; !ok || k < key {
					key, ok = k, true
				}
			}
		}
		if m.dpos < len(m.dfsKeys) {
			if k := m.dfsKeys[m.dpos]; !ok || k < key {
				key, ok = k, true
			}
		}
		if !ok {
			return
		}
		if m.dpos < len(m.dfsKeys) && m.dfsKeys[m.dpos] == key {
			m.dpos++
		}
		recs = recs[:0]
		for i, s := range m.scans {
			for m.pos[i] < len(s.Records) && s.Records[m.pos[i]].Key == key {
				recs = append(recs, held{scan: s, rec: &s.Records[m.pos[i]]})
				m.pos[i]++
			}
		}
		m.key(key, recs)
	}
}

// key decides one key from every holder's records of it.
func (m *merger) key(key string, recs []held) {
	p := m.p
	dk := m.dfs[key]
	dead := map[api.ObjectIncarnation]bool{}
	for inc := range dk.exactKills() {
		dead[inc] = true // a revoked put's copies never return, wherever they are
	}
	lost := recs[:0:0]
	for _, h := range recs {
		if removed(h.rec) {
			dead[h.rec.Incarnation] = true
		}
		if m.own(h.rec.Incarnation) {
			continue // the serving cluster's own copy: only its tombstone counts
		}
		p.MaxSeen = max(p.MaxSeen, h.rec.Incarnation.Low)
		lost = append(lost, h)
	}
	if len(lost) == 0 && (dk == nil || len(dk.puts) == 0) {
		if len(recs) > 0 {
			p.Own++
		}
		return
	}
	recs = lost
	var winner api.ObjectIncarnation
	found := false
	for _, h := range recs {
		inc := h.rec.Incarnation
		switch {
		case h.rec.Tombstoned:
		case inc.IsZero():
			p.Legacy++
		case dead[inc], dk.killedThrough(inc):
			// A DFS removal record of this or a newer incarnation: the
			// holder's copy is an older value of a removed key.
		case !found || winner.Less(inc):
			winner, found = inc, true
		}
	}
	win, top, hasTop := m.pickDFS(key, dk, winner, found)
	switch {
	case hasTop && (!found || winner.Less(top)):
		// The DFS root has the newest incarnation: every holder copy is
		// older and goes.
		for _, h := range recs {
			if !h.rec.Tombstoned && !h.rec.Incarnation.IsZero() {
				p.Deletes = append(p.Deletes, deleteOf(h))
			}
		}
		if win == nil {
			p.Dropped = append(p.Dropped, Dropped{Key: key, Reason: fmt.Sprintf("its newest incarnation %s is only on the DFS root, and its range does not verify", top)})
			return
		}
		m.adoptDFSOnly(key, win)
		return
	case win != nil && win.Inc == winner:
		defer m.addDFS(key, win)
	}
	var copies []held
	for _, h := range recs {
		switch {
		case h.rec.Tombstoned || h.rec.Incarnation.IsZero():
		case found && h.rec.Incarnation == winner:
			copies = append(copies, h)
		default:
			// An older incarnation, or one tombstoned on another holder.
			p.Deletes = append(p.Deletes, deleteOf(h))
		}
	}
	if !found {
		if dk == nil || len(dk.puts) == 0 {
			p.Dropped = append(p.Dropped, Dropped{Key: key, Reason: "no incarnation is live on a holder and tombstoned on none"})
		} else {
			p.Dropped = append(p.Dropped, Dropped{Key: key, Reason: "no incarnation is live on a holder or in the DFS root's records and removed on none"})
		}
		return
	}
	kept := m.keep(key, winner, copies)
	var obj *api.RebuildObject
	for _, h := range copies {
		if !slices.Contains(kept, h.scan.Segment) {
			p.Deletes = append(p.Deletes, deleteOf(h))
			continue
		}
		if obj == nil {
			obj = &api.RebuildObject{Key: key, Tenant: h.rec.Tenant, Size: h.rec.Size, Incarnation: winner}
		}
		obj.Replicas = append(obj.Replicas, api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: h.scan.Segment, Pool: h.scan.Pool})
	}
	if obj == nil {
		p.Dropped = append(p.Dropped, Dropped{Key: key, Reason: fmt.Sprintf("no copy of %s verified", winner)})
		return
	}
	if len(obj.Replicas) > api.MaxReplicas {
		obj.Replicas = obj.Replicas[:api.MaxReplicas]
	}
	p.Objects = append(p.Objects, *obj)
	p.Bytes += obj.Size
}

// keep returns the segments whose copy of the winner is adopted: all of
// them when they agree; otherwise the verified ones of the most common
// verified version (ties: the version whose first segment sorts first).
func (m *merger) keep(key string, inc api.ObjectIncarnation, copies []held) []api.SegmentID {
	type version struct {
		size int64
		crc  uint32
	}
	agree := true
	for _, h := range copies[1:] {
		if h.rec.Size != copies[0].rec.Size || h.rec.CRC32C != copies[0].rec.CRC32C {
			agree = false
		}
	}
	all := make([]api.SegmentID, 0, len(copies))
	for _, h := range copies {
		all = append(all, h.scan.Segment)
	}
	if agree {
		return all
	}
	c := Conflict{Key: key, Incarnation: inc, Verified: []api.SegmentID{}, Kept: []api.SegmentID{}}
	groups := map[version][]api.SegmentID{}
	for _, h := range copies {
		cp := Copy{Segment: h.scan.Segment, Endpoint: h.scan.Endpoint, Size: h.rec.Size, CRC32C: h.rec.CRC32C}
		c.Copies = append(c.Copies, cp)
		if m.verify != nil && m.verify(key, inc, cp) {
			c.Verified = append(c.Verified, cp.Segment)
			v := version{h.rec.Size, h.rec.CRC32C}
			groups[v] = append(groups[v], cp.Segment)
		}
	}
	var best []api.SegmentID
	for _, g := range groups {
		slices.Sort(g)
		if len(g) > len(best) || (len(g) == len(best) && g[0] < best[0]) {
			best = g
		}
	}
	c.Kept = append(c.Kept, best...)
	m.p.Conflicts = append(m.p.Conflicts, c)
	return best
}

func deleteOf(h held) api.RebuildDelete {
	return api.RebuildDelete{Segment: h.scan.Segment, Key: h.rec.Key, Tenant: h.rec.Tenant, Incarnation: h.rec.Incarnation}
}
