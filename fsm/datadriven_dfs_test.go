package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// The data-driven verbs of the batch and DFS commands (datadriven_test.go
// has the language):
//
//	startbatch items=key:place[:size],... [sess=c:seq]   PutStartBatch; place is
//	                                        "dfs" or segments joined by "+"
//	endbatch items=key@inc,... [sess=]     PutEndBatch
//	dfsconfigure alloc=bucket|shard [max_buckets=N] [high=0.9 low=0.7] [noevict]
//	dfsput key=k size=N                    PutStart+PutEnd of a DFS-only object
//	dfstouch keys=a,b                      DFSTouch of the objects' DFS entries
//	dfsevict                               DFSEvict with the plan the leader would make now
//	dfsfileops                             the file work the state waits for
//	dfsfileop kind=create|delete unit=N [fail]   DFSFileOp
//	dfsmaxbuckets max=N                    DFSSetMaxBuckets
//	dfsmarklost unit=N                     DFSMarkLost
//	dfsstats                               the allocator's counters
//	dfsstart key=k size=N                  PutStart of a DFS-only object (no PutEnd)
//	dfsmarks                               the removal records the leader owes the journal
//	dfsmarked [n=N]                        DFSMarked of the first N queued marks (all)
//	dfsmarkbound n=N                       lowers the queue's bound to N marks for this file
func (d *ddRunner) runBatchOrDFS(t *testing.T, verb string, a ddArgs) (string, bool) {
	h := d.h
	switch verb {
	case "startbatch":
		var items []PutStartItem
		for _, spec := range a.list("items") {
			parts := strings.Split(spec, ":")
			it := PutStartItem{Key: parts[0], Size: 10, PutID: "put-" + parts[0]}
			if len(parts) > 1 && parts[1] == "dfs" {
				it.Replicas = dfsReplica()
			} else if len(parts) > 1 {
				var segs []api.SegmentID
				for _, s := range strings.Split(parts[1], "+") {
					segs = append(segs, api.SegmentID(s))
				}
				it.Replicas = localReplicas(segs...)
			}
			if len(parts) > 2 {
				n, err := strconv.ParseInt(parts[2], 10, 64)
				if err != nil {
					t.Fatalf("items=%q: %v", a["items"], err)
				}
				it.Size = n
			}
			items = append(items, it)
		}
		r := h.apply(&PutStartBatch{Items: items, Session: d.session(t, a["sess"]), Now: h.now}).(*PutStartBatchResult)
		if r.Err != nil {
			return fmtErr(r.Err) + fmtDup(r.Duplicate), true
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
		return b.String(), true
	case "endbatch":
		var items []PutEndItem
		for _, spec := range a.list("items") {
			k, low, _ := strings.Cut(spec, "@")
			n, err := strconv.ParseUint(low, 10, 64)
			if err != nil {
				t.Fatalf("items=%q: %v", a["items"], err)
			}
			items = append(items, PutEndItem{Key: k, Incarnation: d.inc(n)})
		}
		r := h.apply(&PutEndBatch{Items: items, Session: d.session(t, a["sess"]), Now: h.now}).(*PutEndBatchResult)
		if r.Err != nil {
			return fmtErr(r.Err) + fmtDup(r.Duplicate), true
		}
		var b strings.Builder
		for i, it := range r.Items {
			fmt.Fprintf(&b, "%s: %s tasks=%d\n", items[i].Key, fmtErr(it.Err), it.TasksCreated)
		}
		b.WriteString("ok" + fmtDup(r.Duplicate))
		return b.String(), true
	case "dfsconfigure":
		s := dfsSettings(a["alloc"])
		if a.has("max_buckets") {
			s.MaxBucketCount = int(a.i64(t, "max_buckets"))
		}
		if a.has("high") {
			s.HighWatermark = a.f64(t, "high")
		}
		if a.has("low") {
			s.LowWatermark = a.f64(t, "low")
		}
		if a.has("noevict") {
			s.EvictionEnabled = false
		}
		return fmtDFSResult(h.apply(&DFSConfigure{Settings: s, Now: h.now}).(*DFSResult)), true
	case "dfsput":
		s := h.apply(&PutStart{Key: a["key"], Size: a.i64(t, "size"), Replicas: dfsReplica(), PutID: "put-" + a["key"], Now: h.now}).(*PutStartResult)
		if s.Err != nil {
			return "start " + fmtErr(s.Err), true
		}
		e := h.putEnd(a["key"], s.Incarnation)
		return fmt.Sprintf("inc=%s%s end %s", fmtInc(s.Incarnation), fmtReplicas(s.Replicas), fmtErr(e.Err)), true
	case "dfstouch":
		var refs []dfsalloc.EntryRef
		for _, k := range a.list("keys") {
			ref, err := d.dfsRef(k)
			if err != nil {
				return err.Error(), true
			}
			refs = append(refs, ref)
		}
		return fmtDFSResult(h.apply(&DFSTouch{Refs: refs, Now: h.now}).(*DFSResult)), true
	case "dfsevict":
		plan, ok := h.f.DFSPlanEviction(h.now, nil)
		if !ok {
			return "dfs off", true
		}
		return fmt.Sprintf("candidates=%d %s", len(plan.Candidates), fmtDFSResult(h.apply(&DFSEvict{Plan: plan, Now: h.now}).(*DFSResult))), true
	case "dfsfileops":
		var b strings.Builder
		for _, op := range h.f.DFSPendingFileOps() {
			fmt.Fprintf(&b, "%s unit=%d path=%s size=%d failures=%d\n", op.Kind, op.Unit, op.Path, op.Size, op.Failures)
		}
		if b.Len() == 0 {
			return "none", true
		}
		return strings.TrimRight(b.String(), "\n"), true
	case "dfsfileop":
		kind := dfsalloc.FileCreate
		if a["kind"] == "delete" {
			kind = dfsalloc.FileDelete
		}
		return fmtDFSResult(h.apply(&DFSFileOp{Kind: kind, Unit: a.u64(t, "unit"), OK: !a.has("fail"), Now: h.now}).(*DFSResult)), true
	case "dfsmaxbuckets":
		return fmtDFSResult(h.apply(&DFSSetMaxBuckets{Max: int(a.i64(t, "max")), Now: h.now}).(*DFSResult)), true
	case "dfsmarklost":
		return fmtDFSResult(h.apply(&DFSMarkLost{Unit: a.u64(t, "unit"), Now: h.now}).(*DFSResult)), true
	case "dfsstart":
		s := h.apply(&PutStart{Key: a["key"], Size: a.i64(t, "size"), Replicas: dfsReplica(), PutID: "put-" + a["key"], Now: h.now}).(*PutStartResult)
		if s.Err != nil {
			return "start " + fmtErr(s.Err), true
		}
		return fmt.Sprintf("inc=%s%s", fmtInc(s.Incarnation), fmtReplicas(s.Replicas)), true
	case "dfsmarks":
		var b strings.Builder
		for _, m := range h.f.DFSPendingMarks(MaxDFSMarks) {
			fmt.Fprintf(&b, "%s@%s %s through=%v\n", m.Key, fmtInc(m.Inc), fmtDesc(m.Desc), m.Through)
		}
		if b.Len() == 0 {
			return "none", true
		}
		return strings.TrimRight(b.String(), "\n"), true
	case "dfsmarked":
		ms := h.f.DFSPendingMarks(MaxDFSMarks)
		if a.has("n") {
			ms = ms[:min(len(ms), int(a.i64(t, "n")))]
		}
		return fmtDFSResult(h.apply(&DFSMarked{Marks: ms, Now: h.now}).(*DFSResult)), true
	case "dfsmarkbound":
		old := maxDFSMarks
		maxDFSMarks = int(a.i64(t, "n"))
		t.Cleanup(func() { maxDFSMarks = old })
		return "ok", true
	case "dfsstats":
		s, ok := h.f.DFSStats()
		if !ok {
			return "dfs off", true
		}
		return fmt.Sprintf("alloc=%s live=%d/%dB dead=%dB units=%d max_buckets=%d pending_deletions=%d evicted=%d lost=%d",
			s.Allocator, s.LiveEntries, s.LiveBytes, s.DeadBytes, len(s.Units), s.MaxBuckets, s.PendingDeletions, s.Evicted, s.Lost), true
	}
	return "", false
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

func (a ddArgs) f64(t *testing.T, k string) float64 {
	v, err := strconv.ParseFloat(a[k], 64)
	if err != nil {
		t.Fatalf("arg %s=%q: %v", k, a[k], err)
	}
	return v
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
