package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

func (d *ddRunner) startbatch(_ *testing.T, a ddArgs) string {
	var items []PutStartItem
	for _, spec := range a.list("items") {
		parts := strings.Split(spec, ":")
		it := PutStartItem{Key: parts[0], Size: 10, PutID: "put-" + parts[0]}
		if len(parts) > 1 && parts[1] == "dfs" {
			it.Replicas = dfsReplica()
		} else if len(parts) > 1 {
			it.Replicas = localReplicas(splitSegs(parts[1])...)
		}
		if len(parts) > 2 {
			n, err := strconv.ParseInt(parts[2], 10, 64)
			if err != nil {
				a.fatalf("items=%q: %v", a.str("items"), err)
			}
			it.Size = n
		}
		items = append(items, it)
	}
	r := d.h.apply(&PutStartBatch{Items: items, Session: a.session(), Now: d.h.now}).(*PutStartBatchResult)
	if r.Err != nil {
		return fmtErr(r.Err) + fmtDup(r.Duplicate)
	}
	var b strings.Builder
	for i, it := range r.Items {
		if it.Err != nil {
			fmt.Fprintf(&b, "%s: %s\n", items[i].Key, fmtErr(it.Err))
			continue
		}
		fmt.Fprintf(&b, "%s: inc=%s%s\n", items[i].Key, fmtInc(it.Incarnation), fmtReplicas(it.Replicas))
	}
	b.WriteString("ok" + fmtDup(r.Duplicate))
	return b.String()
}

func (d *ddRunner) endbatch(_ *testing.T, a ddArgs) string {
	var items []PutEndItem
	for _, spec := range a.list("items") {
		k, low, _ := strings.Cut(spec, "@")
		n, err := strconv.ParseUint(low, 10, 64)
		if err != nil {
			a.fatalf("items=%q: %v", a.str("items"), err)
		}
		items = append(items, PutEndItem{Key: k, Incarnation: d.inc(n)})
	}
	r := d.h.apply(&PutEndBatch{Items: items, Session: a.session(), Now: d.h.now}).(*PutEndBatchResult)
	if r.Err != nil {
		return fmtErr(r.Err) + fmtDup(r.Duplicate)
	}
	var b strings.Builder
	for i, it := range r.Items {
		fmt.Fprintf(&b, "%s: %s tasks=%d\n", items[i].Key, fmtErr(it.Err), it.TasksCreated)
	}
	b.WriteString("ok" + fmtDup(r.Duplicate))
	return b.String()
}

func (d *ddRunner) dfsconfigure(_ *testing.T, a ddArgs) string {
	s := dfsSettings(a.str("alloc"))
	if a.has("max_buckets") {
		s.MaxBucketCount = int(a.i64("max_buckets"))
	}
	if a.has("high") {
		s.HighWatermark = a.f64("high")
	}
	if a.has("low") {
		s.LowWatermark = a.f64("low")
	}
	if a.has("noevict") {
		s.EvictionEnabled = false
	}
	return d.applyDFS(&DFSConfigure{Settings: s, Now: d.h.now})
}

// applyDFS applies a DFS command and renders its DFSResult.
func (d *ddRunner) applyDFS(cmd Command) string {
	return fmtDFSResult(d.h.apply(cmd).(*DFSResult))
}

// startDFS applies the PutStart of a DFS-only object.
func (d *ddRunner) startDFS(a ddArgs) *PutStartResult {
	return d.h.apply(&PutStart{PutStartItem: PutStartItem{Key: a.str("key"), Size: a.i64("size"), Replicas: dfsReplica(), PutID: "put-" + a.str("key")},
		Now: d.h.now}).(*PutStartResult)
}

func (d *ddRunner) dfsput(_ *testing.T, a ddArgs) string {
	s := d.startDFS(a)
	if s.Err != nil {
		return "start " + fmtErr(s.Err)
	}
	e := d.h.putEnd(a.str("key"), s.Incarnation)
	return fmt.Sprintf("inc=%s%s end %s", fmtInc(s.Incarnation), fmtReplicas(s.Replicas), fmtErr(e.Err))
}

func (d *ddRunner) dfsstart(_ *testing.T, a ddArgs) string {
	s := d.startDFS(a)
	if s.Err != nil {
		return "start " + fmtErr(s.Err)
	}
	return fmt.Sprintf("inc=%s%s", fmtInc(s.Incarnation), fmtReplicas(s.Replicas))
}

func (d *ddRunner) dfstouch(_ *testing.T, a ddArgs) string {
	var refs []dfsalloc.EntryRef
	for _, k := range a.list("keys") {
		ref, err := d.dfsRef(k)
		if err != nil {
			return err.Error()
		}
		refs = append(refs, ref)
	}
	return d.applyDFS(&DFSTouch{Refs: refs, Now: d.h.now})
}

func (d *ddRunner) dfsevict(*testing.T, ddArgs) string {
	plan, ok := d.h.f.DFSPlanEviction(d.h.now, nil)
	if !ok {
		return "dfs off"
	}
	return fmt.Sprintf("candidates=%d %s", len(plan.Candidates), d.applyDFS(&DFSEvict{Plan: plan, Now: d.h.now}))
}

func (d *ddRunner) dfsfileops(*testing.T, ddArgs) string {
	var b strings.Builder
	for _, op := range d.h.f.DFSPendingFileOps() {
		fmt.Fprintf(&b, "%s unit=%d path=%s size=%d failures=%d\n", op.Kind, op.Unit, op.Path, op.Size, op.Failures)
	}
	return orNone(b.String())
}

func (d *ddRunner) dfsfileop(_ *testing.T, a ddArgs) string {
	kind := dfsalloc.FileCreate
	if a.str("kind") == "delete" {
		kind = dfsalloc.FileDelete
	}
	return d.applyDFS(&DFSFileOp{Kind: kind, Unit: a.u64("unit"), OK: !a.has("fail"), Now: d.h.now})
}

func (d *ddRunner) dfsmaxbuckets(_ *testing.T, a ddArgs) string {
	return d.applyDFS(&DFSSetMaxBuckets{Max: int(a.i64("max")), Now: d.h.now})
}

func (d *ddRunner) dfsmarklost(_ *testing.T, a ddArgs) string {
	return d.applyDFS(&DFSMarkLost{Unit: a.u64("unit"), Now: d.h.now})
}

func (d *ddRunner) dfsstats(*testing.T, ddArgs) string {
	s, ok := d.h.f.DFSStats()
	if !ok {
		return "dfs off"
	}
	return fmt.Sprintf("alloc=%s live=%d/%dB dead=%dB units=%d max_buckets=%d pending_deletions=%d evicted=%d lost=%d",
		s.Allocator, s.LiveEntries, s.LiveBytes, s.DeadBytes, len(s.Units), s.MaxBuckets, s.PendingDeletions, s.Evicted, s.Lost)
}

func (d *ddRunner) dfsmarks(*testing.T, ddArgs) string {
	var b strings.Builder
	for _, m := range d.h.f.DFSPendingMarks(MaxDFSMarks) {
		fmt.Fprintf(&b, "%s@%s %s through=%v\n", m.Key, fmtInc(m.Inc), fmtDesc(m.Desc), m.Through)
	}
	return orNone(b.String())
}

func (d *ddRunner) dfsmarked(_ *testing.T, a ddArgs) string {
	ms := d.h.f.DFSPendingMarks(MaxDFSMarks)
	if a.has("n") {
		ms = ms[:min(len(ms), int(a.i64("n")))]
	}
	return d.applyDFS(&DFSMarked{Marks: ms, Now: d.h.now})
}

func (d *ddRunner) dfsmarkbound(t *testing.T, a ddArgs) string {
	old := maxDFSMarks
	maxDFSMarks = int(a.i64("n"))
	t.Cleanup(func() { maxDFSMarks = old })
	return "ok"
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dfsRef is the entry of key's current DFS replica.
func (d *ddRunner) dfsRef(key string) (dfsalloc.EntryRef, error) {
	v, err := d.h.f.Get(key)
	if err != nil {
		return dfsalloc.EntryRef{}, fmt.Errorf("dfs ref %q: %v", key, err)
	}
	for _, r := range v.Replicas {
		if r.DFS != nil {
			return dfsalloc.EntryRef{Key: key, Desc: *r.DFS}, nil
		}
	}
	return dfsalloc.EntryRef{}, fmt.Errorf("dfs ref %q: no DFS replica", key)
}

// fmtReplicas shows DFS replicas as unit/offset/aligned size (LOCAL_DISK
// replicas are shown by the commands that place them).
func fmtReplicas(rs []api.ReplicaDescriptor) string {
	var parts []string
	for _, r := range rs {
		if r.DFS != nil {
			parts = append(parts, fmtDesc(*r.DFS))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " dfs=" + strings.Join(parts, ",")
}

func fmtDesc(d api.DFSDescriptor) string {
	return fmt.Sprintf("%d/%d/%d", d.UnitID, d.Offset, d.AlignedSize)
}

func fmtDFSResult(r *DFSResult) string {
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	if len(r.Dropped) == 0 && r.ObjectsLost == 0 {
		return "ok"
	}
	var parts []string
	for _, e := range r.Dropped {
		parts = append(parts, e.Key+"@"+fmtDesc(e.Desc))
	}
	return fmt.Sprintf("ok dropped=[%s] objects_lost=%d", strings.Join(parts, " "), r.ObjectsLost)
}
