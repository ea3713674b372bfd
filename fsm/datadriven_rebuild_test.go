package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

func (d *ddRunner) rebuildBegin(_ *testing.T, a ddArgs) string {
	cmd := &RebuildBegin{ClusterID: a.u64("cluster"), IncFloor: a.u64("floor"), Finish: a.has("finish"), Now: d.h.now}
	for _, spec := range a.list("segs") {
		id, flag, _ := strings.Cut(spec, ":")
		s := RebuildSegment{Segment: api.SegmentID(id), Pool: "p", Capabilities: tombstoneCaps}
		if flag == "nocaps" {
			s.Capabilities = nil
		}
		cmd.Segments = append(cmd.Segments, s)
	}
	r := d.h.apply(cmd).(*RebuildBeginResult)
	if r.Err == nil {
		d.h.cluster = cmd.ClusterID
	}
	return fmt.Sprintf("%s cluster=%d base=%d repeat=%v added=%d finished=%v", fmtErr(r.Err), r.ClusterID, r.IncBase, r.Repeat, r.SegmentsAdded, r.Finished)
}

func (d *ddRunner) rebuildAdopt(_ *testing.T, a ddArgs) string {
	cmd := &RebuildAdopt{ClusterID: d.h.cluster, Now: d.h.now}
	if a.has("cluster") {
		cmd.ClusterID = a.u64("cluster")
	}
	for _, spec := range a.list("objs") {
		ref, segs, _ := strings.Cut(spec, ":")
		key, inc := d.parseRef(a, ref)
		var rs []api.ReplicaDescriptor
		if segs != "" {
			for _, s := range splitSegs(segs) {
				if strings.HasPrefix(string(s), "dfs-") {
					rs = append(rs, rebuildDFSReplica(a, string(s)))
					continue
				}
				rs = append(rs, localReplicas(s)...)
			}
		}
		cmd.Objects = append(cmd.Objects, RebuildObject{Key: key, Size: 10, Incarnation: inc, Replicas: rs})
	}
	for _, spec := range a.list("dels") {
		seg, ref, _ := strings.Cut(spec, "/")
		key, inc := d.parseRef(a, ref)
		cmd.Deletes = append(cmd.Deletes, RebuildDelete{Segment: api.SegmentID(seg), Key: key, Incarnation: inc})
	}
	r := d.h.apply(cmd).(*RebuildAdoptResult)
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	var b strings.Builder
	for i, x := range r.Objects {
		fmt.Fprintf(&b, "obj %s@%s: %s tasks=%d %s\n", cmd.Objects[i].Key, fmtInc(cmd.Objects[i].Incarnation), x.Outcome, x.Tasks, fmtErr(x.Err))
	}
	for i, x := range r.Deletes {
		fmt.Fprintf(&b, "del %s %s@%s: %s tasks=%d %s\n", cmd.Deletes[i].Segment, cmd.Deletes[i].Key, fmtInc(cmd.Deletes[i].Incarnation), x.Outcome, x.Tasks, fmtErr(x.Err))
	}
	return b.String()
}

func (d *ddRunner) rebuildClose(_ *testing.T, a ddArgs) string {
	r := d.h.apply(&RebuildClose{ClusterID: a.u64("cluster"), Now: d.h.now}).(*RebuildCloseResult)
	return fmt.Sprintf("%s already=%v", fmtErr(r.Err), r.Already)
}

func (d *ddRunner) rebuildMemoryBound(t *testing.T, a ddArgs) string {
	prev := maxRebuildRemoved
	maxRebuildRemoved = int(a.u64("n"))
	t.Cleanup(func() { maxRebuildRemoved = prev })
	return "ok"
}

func (d *ddRunner) rebuildStatus(*testing.T, ddArgs) string {
	s := d.h.f.Rebuild()
	return fmt.Sprintf("cluster=%d finished=%v closed=%v removed=%d overflowed=%v", s.Cluster, s.Finished, s.Closed, s.Removed, s.Overflowed)
}

// parseRef reads key@low (low 0: the legacy incarnation).
func (d *ddRunner) parseRef(a ddArgs, ref string) (string, api.ObjectIncarnation) {
	a.t.Helper()
	key, low, ok := strings.Cut(ref, "@")
	if !ok {
		a.fatalf("ref %q is not key@low", ref)
	}
	n, err := strconv.ParseUint(low, 10, 64)
	if err != nil {
		a.fatalf("ref %q: %v", ref, err)
	}
	if n == 0 {
		return key, api.ObjectIncarnation{}
	}
	return key, d.inc(n)
}

// rebuildDFSReplica parses dfs-U-OFF-SIZE: a bucket replica aligned to
// 4 KiB.
func rebuildDFSReplica(a ddArgs, s string) api.ReplicaDescriptor {
	a.t.Helper()
	parts := strings.Split(s, "-")
	if len(parts) != 4 {
		a.fatalf("DFS replica %q: want dfs-U-OFF-SIZE", s)
	}
	n := make([]int64, 3)
	for i, p := range parts[1:] {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			a.fatalf("DFS replica %q: %v", s, err)
		}
		n[i] = v
	}
	aligned := max((n[2]+4095)&^4095, 4096)
	d := api.DFSDescriptor{Allocator: dfsalloc.KindBucket, Path: dfsalloc.BucketPath(uint64(n[0])), UnitID: uint64(n[0]), Offset: n[1], Size: n[2], AlignedSize: aligned}
	return api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &d}
}

// splitSegs splits segments joined by "+".
func splitSegs(s string) []api.SegmentID {
	var out []api.SegmentID
	for _, x := range strings.Split(s, "+") {
		out = append(out, api.SegmentID(x))
	}
	return out
}
