package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
)

func (d *ddRunner) epoch(_ *testing.T, a ddArgs) string {
	r := d.h.epoch(a.u64("cluster"))
	return fmt.Sprintf("master_epoch=%d cluster=%d", r.MasterEpoch, r.ClusterID)
}

func (d *ddRunner) mount(_ *testing.T, a ddArgs) string {
	h := d.h
	var caps []api.Capability
	switch a.str("caps") {
	case "tomb":
		caps = tombstoneCaps
	case "", "none":
	default:
		for _, c := range a.list("caps") {
			caps = append(caps, api.Capability(c))
		}
	}
	cmd := &MountLocalDisk{ClientID: a.str("client"), Segment: api.SegmentID(a.str("seg")), Pool: "p", Capacity: 100, Capabilities: caps, Endpoint: a.str("client") + ":9000", Now: h.now}
	if a.has("pool") {
		cmd.Pool = a.str("pool")
	}
	if a.has("ep") {
		cmd.Endpoint = a.str("ep")
	}
	cmd.Process = a.str("process")
	if a.has("marker") {
		m := a.u64("marker")
		cmd.MarkerCluster = &m
	}
	r := h.apply(cmd).(*MountResult)
	if r.Err != nil {
		return fmt.Sprintf("%s epoch=%d", fmtErr(r.Err), r.MountEpoch)
	}
	return fmt.Sprintf("epoch=%d", r.MountEpoch)
}

func (d *ddRunner) unmount(_ *testing.T, a ddArgs) string {
	r := d.h.apply(&UnmountLocalDisk{Segment: api.SegmentID(a.str("seg")), Epoch: a.u64("epoch"), Now: d.h.now}).(*UnmountResult)
	return fmtErr(r.Err)
}

func (d *ddRunner) putstart(_ *testing.T, a ddArgs) string {
	h := d.h
	r := h.apply(&PutStart{PutStartItem: PutStartItem{Key: a.str("key"), Size: 10, Replicas: localReplicas(a.segs("segs")...),
		PutID: "put-" + a.str("key"), IfAbsent: a.has("ifabsent")}, Session: a.session(), Now: h.now}).(*PutStartResult)
	if r.Err != nil {
		return fmtErr(r.Err) + fmtDup(r.Duplicate)
	}
	if !a.has("sess") {
		return "inc=" + fmtInc(r.Incarnation)
	}
	// A sessioned answer shows the replicas too: a repeat must hand back
	// the same placement.
	var segs []string
	for _, x := range r.Replicas {
		segs = append(segs, string(x.Segment))
	}
	return fmt.Sprintf("inc=%s replicas=%s%s", fmtInc(r.Incarnation), strings.Join(segs, ","), fmtDup(r.Duplicate))
}

func (d *ddRunner) put(_ *testing.T, a ddArgs) string {
	r := d.h.putStart(a.str("key"), a.has("ifabsent"), a.segs("segs")...)
	if r.Err != nil {
		return "start " + fmtErr(r.Err)
	}
	e := d.h.putEnd(a.str("key"), r.Incarnation)
	return fmt.Sprintf("inc=%s end %s tasks=%d", fmtInc(r.Incarnation), fmtErr(e.Err), e.TasksCreated)
}

func (d *ddRunner) putend(_ *testing.T, a ddArgs) string {
	return d.endPut(&PutEnd{Key: a.str("key"), Incarnation: d.inc(a.u64("inc")), Session: a.session(), Now: d.h.now})
}

func (d *ddRunner) revoke(_ *testing.T, a ddArgs) string {
	return d.endPut(&PutRevoke{Key: a.str("key"), Incarnation: d.inc(a.u64("inc")), Session: a.session(), Now: d.h.now})
}

// endPut applies a PutEnd, a PutRevoke or a PutCommit.
func (d *ddRunner) endPut(cmd Command) string {
	r := d.h.apply(cmd).(*PutEndResult)
	return fmt.Sprintf("%s tasks=%d%s", fmtErr(r.Err), r.TasksCreated, fmtDup(r.Duplicate))
}

// remove: if=low,... gives one expected incarnation per key (0:
// unconditional); spans=sess/n;... splits the keys into the requests of a
// group commit ("-" for no session).
func (d *ddRunner) remove(_ *testing.T, a ddArgs) string {
	cmd := &Remove{Keys: a.list("keys"), Session: a.session(), Now: d.h.now}
	for _, low := range a.list("if") {
		n, err := strconv.ParseUint(low, 10, 64)
		if err != nil {
			a.fatalf("if=%q: %v", a.str("if"), err)
		}
		var inc api.ObjectIncarnation
		if n != 0 {
			inc = d.inc(n)
		}
		cmd.IfInc = append(cmd.IfInc, inc)
	}
	if a.has("spans") {
		for _, sp := range strings.Split(a.str("spans"), ";") {
			sess, n, _ := strings.Cut(sp, "/")
			k, err := strconv.Atoi(n)
			if err != nil {
				a.fatalf("spans=%q: %v", a.str("spans"), err)
			}
			var s api.Session
			if sess = strings.TrimPrefix(sess, "-"); sess != "" {
				s = parseSession(a, sess)
			}
			cmd.Spans = append(cmd.Spans, RemoveSpan{Session: s, N: k})
		}
	}
	r := d.h.apply(cmd).(*RemoveResult)
	var b strings.Builder
	for _, kr := range r.Results {
		fmt.Fprintf(&b, "%s: %s\n", kr.Key, fmtErr(kr.Err))
	}
	fmt.Fprintf(&b, "tasks=%d%s", r.TasksCreated, fmtDup(r.Duplicate))
	if r.SpanDuplicate != nil {
		fmt.Fprintf(&b, " span_dup=%v", r.SpanDuplicate)
	}
	return b.String()
}

func (d *ddRunner) wokeVerb(*testing.T, ddArgs) string { return d.h.woke }

func (d *ddRunner) tick(_ *testing.T, a ddArgs) string {
	d.h.now += a.i64("ms") * 1e6
	return "ok"
}

func (d *ddRunner) sessions(*testing.T, ddArgs) string {
	s := d.h.f.SessionStats()
	return fmt.Sprintf("clients=%d results=%d", s.Clients, s.Results)
}

var outcomes = map[string]api.AckOutcome{
	"removed": api.AckRemoved, "already": api.AckAlreadyRemoved, "stale": api.AckStaleVersion,
	"retry": api.AckRetryableFailure, "bad": 9,
}

func (d *ddRunner) ackVerb(_ *testing.T, a ddArgs) string {
	var rs []api.TaskResult
	for _, spec := range a.list("results") {
		ref, oc, _ := strings.Cut(spec, ":")
		parts := strings.Split(ref, "/")
		id, _ := strconv.ParseUint(parts[0], 10, 64)
		tr := api.TaskResult{TaskID: id, Outcome: outcomes[oc]}
		if len(parts) == 3 {
			low, _ := strconv.ParseUint(parts[2], 10, 64)
			tr.Key, tr.Incarnation = parts[1], d.inc(low)
		} else if task, ok := d.findTask(id); ok {
			tr.Key, tr.Incarnation = task.Key, task.Incarnation
		}
		rs = append(rs, tr)
	}
	r := d.h.ack(api.SegmentID(a.str("seg")), a.u64("epoch"), rs...)
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	return fmt.Sprintf("dropped=%d kept=%d unknown=%d", r.Dropped, r.Kept, r.Unknown)
}

func (d *ddRunner) fetchVerb(_ *testing.T, a ddArgs) string {
	ts, more, err := d.h.f.FetchTasks(api.SegmentID(a.str("seg")), a.u64("epoch"), a.limit())
	if err != nil {
		return fmtErr(api.AsError(err))
	}
	return fmtTasks(ts) + fmt.Sprintf("more=%v", more)
}

func (d *ddRunner) drop(_ *testing.T, a ddArgs) string {
	r := d.h.apply(&DropReplicas{Segment: api.SegmentID(a.str("seg")), Epoch: a.u64("epoch"), Refs: d.refs(a.list("refs")), Now: d.h.now}).(*DropResult)
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	return "dropped=" + fmtRefs(r.Dropped)
}

func (d *ddRunner) droptomb(_ *testing.T, a ddArgs) string {
	r := d.h.apply(&DropTombstoned{Segment: api.SegmentID(a.str("seg")), Epoch: a.u64("epoch"), Refs: d.refs(a.list("refs")), Now: d.h.now}).(*DropTombstonedResult)
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	return fmt.Sprintf("dropped=%s objects=%d", fmtRefs(r.Dropped), r.Objects)
}

// replicas: the COMPLETE incarnations the table places on seg
// (ReplicasOn).
func (d *ddRunner) replicas(_ *testing.T, a ddArgs) string {
	out, next, more, err := d.h.f.ReplicasOn(api.SegmentID(a.str("seg")), a.u64("epoch"), a.str("after"), a.limit())
	if err != nil {
		return fmtErr(api.AsError(err))
	}
	return fmt.Sprintf("refs=%s next=%s more=%v", fmtRefs(out), next, more)
}

func (d *ddRunner) notlive(_ *testing.T, a ddArgs) string {
	out, err := d.h.f.NotLive(api.SegmentID(a.str("seg")), a.u64("epoch"), d.refs(a.list("refs")))
	if err != nil {
		return fmtErr(api.AsError(err))
	}
	return "not_live=" + fmtRefs(out)
}

func (d *ddRunner) get(_ *testing.T, a ddArgs) string {
	v, err := d.h.f.Get(a.str("key"))
	if err != nil {
		return fmtErr(api.AsError(err))
	}
	if a.has("putid") {
		return fmtObject(v) + " put_id=" + v.PutID
	}
	return fmtObject(v)
}

func (d *ddRunner) stat(_ *testing.T, a ddArgs) string {
	v, pending, deletes, err := d.h.f.Stat(a.str("key"))
	p := "none"
	if pending != nil {
		p = fmtInc(*pending)
	}
	obj := fmtErr(api.AsError(err))
	if err == nil {
		obj = fmtObject(v)
	}
	return fmt.Sprintf("%s pending=%s pending_deletes=%d", obj, p, deletes)
}

func (d *ddRunner) tasks(_ *testing.T, a ddArgs) string {
	ts, total := d.h.f.ListTasks(api.SegmentID(a.str("seg")), 0)
	return fmtTasks(ts) + fmt.Sprintf("total=%d", total)
}

func (d *ddRunner) segments(*testing.T, ddArgs) string {
	var b strings.Builder
	for _, s := range d.h.f.Segments() {
		fmt.Fprintf(&b, "%s client=%q epoch=%d mounted=%v retired=%v caps=%v pending=%d\n", s.ID, s.ClientID, s.MountEpoch, s.Mounted, s.Retired, s.Capabilities, s.PendingTasks)
	}
	return b.String()
}

func (d *ddRunner) retire(_ *testing.T, a ddArgs) string {
	r := d.h.apply(&RetireStorage{Segment: api.SegmentID(a.str("seg")), By: a.str("by"), Reason: a.str("reason"), Now: d.h.now}).(*RetireResult)
	return fmt.Sprintf("%s dropped=%d", fmtErr(r.Err), r.Dropped)
}

func (d *ddRunner) restoreVerb(t *testing.T, _ ddArgs) string {
	d.h.f = restored(t, d.h.f)
	return "ok"
}

// reserve: a ReserveIncarnations entry living ms milliseconds past the
// harness clock (count=0: only the entry's time).
func (d *ddRunner) reserve(_ *testing.T, a ddArgs) string {
	h := d.h
	r := h.apply(&ReserveIncarnations{Count: a.u64("count"), Expires: h.now + 1 + a.i64("ms")*1e6, Now: h.now + 1}).(*ReserveResult)
	if r.Err != nil {
		return fmtErr(r.Err)
	}
	if r.Lo > r.Hi {
		return "block=none"
	}
	return fmt.Sprintf("block=%d..%d", r.Lo, r.Hi)
}

// commitbatch: items=key:inc:seg,... in order.
func (d *ddRunner) commitbatch(_ *testing.T, a ddArgs) string {
	cmd := &PutCommitBatch{Session: a.session(), Now: d.h.now + 1}
	for _, it := range a.list("items") {
		parts := strings.Split(it, ":")
		if len(parts) != 3 {
			a.fatalf("item %q: want key:inc:seg", it)
		}
		low, err := strconv.ParseUint(parts[1], 10, 64)
		if err != nil {
			a.fatalf("item %q: want key:inc:seg", it)
		}
		cmd.Items = append(cmd.Items, PutCommitItem{Key: parts[0], Incarnation: d.inc(low), Size: 10, Replicas: localReplicas(api.SegmentID(parts[2])), PutID: "put-" + parts[0]})
	}
	r := d.h.apply(cmd).(*PutEndBatchResult)
	if r.Err != nil {
		return fmtErr(r.Err) + fmtDup(r.Duplicate)
	}
	var b strings.Builder
	for i, x := range r.Items {
		fmt.Fprintf(&b, "%s: %s tasks=%d\n", cmd.Items[i].Key, fmtErr(x.Err), x.TasksCreated)
	}
	b.WriteString("dup=" + fmt.Sprint(r.Duplicate))
	return b.String()
}

func (d *ddRunner) commit(_ *testing.T, a ddArgs) string {
	return d.endPut(&PutCommit{PutCommitItem: PutCommitItem{Key: a.str("key"), Incarnation: d.inc(a.u64("inc")), Size: 10, Replicas: localReplicas(a.segs("segs")...),
		PutID: "put-" + a.str("key"), IfAbsent: a.has("ifabsent")}, Session: a.session(), Now: d.h.now + 1})
}

func (d *ddRunner) stats(*testing.T, ddArgs) string {
	s := d.h.f.Stats()
	return fmt.Sprintf("objects=%d pending_puts=%d tasks=%d/%d", s.Objects, s.PendingPuts, s.PendingTasks, s.RegistryCapacity)
}

// settings: a Settings entry; no argument: the effective settings.
func (d *ddRunner) settings(_ *testing.T, a ddArgs) string {
	if a.empty() {
		cur, set := d.h.f.Settings()
		return fmt.Sprintf("%s set=%v", fmtSettings(cur), set)
	}
	r := d.h.apply(&Settings{Settings: api.Settings{
		RegistryCapacity: int(a.i64("capacity")), SessionTTLMillis: a.i64("ttl_ms"),
		MaxSessions: int(a.i64("max_sessions")), MaxSessionResults: int(a.i64("max_results")),
	}, Session: a.session(), Now: d.h.now}).(*SettingsResult)
	return fmt.Sprintf("%s %s%s", fmtErr(r.Err), fmtSettings(r.Settings), fmtDup(r.Duplicate))
}

func (d *ddRunner) findTask(id uint64) (api.LocalDeleteTask, bool) {
	ts, _ := d.h.f.ListTasks("", MaxAckResults)
	for _, x := range ts {
		if x.ID == id {
			return x, true
		}
	}
	return api.LocalDeleteTask{}, false
}

// refs parses "key@low" items; "key@0" or "key" names the legacy
// incarnation.
func (d *ddRunner) refs(items []string) []api.ObjectRef {
	var refs []api.ObjectRef
	for _, s := range items {
		k, low, _ := strings.Cut(s, "@")
		n, _ := strconv.ParseUint(low, 10, 64)
		ref := api.ObjectRef{Key: k}
		if n != 0 {
			ref.Incarnation = d.inc(n)
		}
		refs = append(refs, ref)
	}
	return refs
}

func fmtSettings(s api.Settings) string {
	return fmt.Sprintf("capacity=%d ttl_ms=%d max_sessions=%d max_results=%d", s.RegistryCapacity, s.SessionTTLMillis, s.MaxSessions, s.MaxSessionResults)
}

func fmtErr(e *api.Error) string {
	if e == nil {
		return "ok"
	}
	return "err=" + string(e.Code)
}

func fmtInc(i api.ObjectIncarnation) string {
	if i.IsZero() {
		return "0"
	}
	return strconv.FormatUint(i.Low, 10)
}

func fmtDup(dup bool) string {
	if dup {
		return " dup"
	}
	return ""
}

// fmtRefs renders refs as [key@low ...].
func fmtRefs(refs []api.ObjectRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.Key + "@" + fmtInc(r.Incarnation)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// fmtWake renders a Wake: "all", "dfs", then the segments, or "none".
func fmtWake(w Wake) string {
	var parts []string
	if w.All {
		parts = append(parts, "all")
	}
	if w.DFS {
		parts = append(parts, "dfs")
	}
	for _, s := range w.Segments {
		parts = append(parts, string(s))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// fmtTasks renders one line per task.
func fmtTasks(ts []api.LocalDeleteTask) string {
	var b strings.Builder
	for _, x := range ts {
		fmt.Fprintf(&b, "task %d %s %s@%s\n", x.ID, x.Segment, x.Key, fmtInc(x.Incarnation))
	}
	return b.String()
}

func fmtObject(v ObjectView) string {
	var segs []string
	for _, r := range v.Replicas {
		if r.DFS != nil {
			segs = append(segs, "dfs:"+fmtDesc(*r.DFS))
			continue
		}
		segs = append(segs, string(r.Segment))
	}
	return fmt.Sprintf("%s@%s size=%d tenant=%s replicas=%s", v.Key, fmtInc(v.Incarnation), v.Size, v.Tenant, strings.Join(segs, ","))
}
