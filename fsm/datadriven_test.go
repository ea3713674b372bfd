package fsm

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
)

// The scenario tests are data-driven, after etcd-io/raft's testdata: each
// file is a sequence of blocks
//
//	command arg=value flag ...
//	----
//	expected output
//	<blank line>
//
// run against one FSM. `go test ./fsm -run X -rewrite` rewrites the
// expected outputs (review the diff before keeping it).
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests")

type ddCase struct {
	line     int
	cmd      string
	expected string
}

func parseDD(t *testing.T, path string) (cases []ddCase, comments map[int][]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	comments = map[int][]string{}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			comments[len(cases)] = append(comments[len(cases)], l)
			continue
		}
		c := ddCase{line: i + 1, cmd: strings.TrimSpace(l)}
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command without ---- separator", path, c.line)
		}
		var out []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.expected = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, comments
}

// runDataDriven runs the data-driven file at path.
func runDataDriven(t *testing.T, path string) {
	t.Helper()
	cases, comments := parseDD(t, path)
	d := &ddRunner{h: newHarness(t, DefaultRegistryCapacity)}
	var b strings.Builder
	for i, c := range cases {
		got := strings.TrimRight(d.run(t, c), "\n")
		if *rewrite {
			for _, cm := range comments[i] {
				b.WriteString(cm + "\n")
			}
			b.WriteString(c.cmd + "\n----\n" + got + "\n\n")
			continue
		}
		if got != c.expected {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, c.line, c.cmd, got, c.expected)
		}
	}
	if *rewrite {
		for _, cm := range comments[len(cases)] {
			b.WriteString(cm + "\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type ddRunner struct {
	h *harness
}

type ddArgs map[string]string

func parseArgs(fields []string) ddArgs {
	a := ddArgs{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a[k] = v
	}
	return a
}

func (a ddArgs) has(k string) bool { _, ok := a[k]; return ok }

func (a ddArgs) u64(t *testing.T, k string) uint64 {
	v, err := strconv.ParseUint(a[k], 10, 64)
	if err != nil {
		t.Fatalf("arg %s=%q: %v", k, a[k], err)
	}
	return v
}

// i64 is the integer argument k, 0 when absent.
func (a ddArgs) i64(t *testing.T, k string) int64 {
	if !a.has(k) {
		return 0
	}
	v, err := strconv.ParseInt(a[k], 10, 64)
	if err != nil {
		t.Fatalf("arg %s=%q: %v", k, a[k], err)
	}
	return v
}

func fmtSettings(s api.Settings) string {
	return fmt.Sprintf("capacity=%d ttl_ms=%d max_sessions=%d max_results=%d", s.RegistryCapacity, s.SessionTTLMillis, s.MaxSessions, s.MaxSessionResults)
}

func (a ddArgs) list(k string) []string {
	if a[k] == "" {
		return nil
	}
	return strings.Split(a[k], ",")
}

func (a ddArgs) segs(k string) []api.SegmentID {
	var out []api.SegmentID
	for _, s := range a.list(k) {
		out = append(out, api.SegmentID(s))
	}
	return out
}

func (d *ddRunner) inc(low uint64) api.ObjectIncarnation {
	return api.ObjectIncarnation{High: d.h.cluster, Low: low}
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

func fmtTask(t api.LocalDeleteTask) string {
	return fmt.Sprintf("task %d %s %s@%s", t.ID, t.Segment, t.Key, fmtInc(t.Incarnation))
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

var outcomes = map[string]api.AckOutcome{
	"removed": api.AckRemoved, "already": api.AckAlreadyRemoved, "stale": api.AckStaleVersion,
	"retry": api.AckRetryableFailure, "bad": 9,
}

func (d *ddRunner) run(t *testing.T, c ddCase) string {
	fields := strings.Fields(c.cmd)
	a := parseArgs(fields[1:])
	h := d.h
	switch fields[0] {
	case "epoch":
		r := h.epoch(a.u64(t, "cluster"))
		return fmt.Sprintf("master_epoch=%d cluster=%d", r.MasterEpoch, r.ClusterID)
	case "mount":
		var caps []api.Capability
		switch a["caps"] {
		case "tomb":
			caps = tombstoneCaps
		case "", "none":
		default:
			for _, c := range a.list("caps") {
				caps = append(caps, api.Capability(c))
			}
		}
		cmd := &MountLocalDisk{ClientID: a["client"], Segment: api.SegmentID(a["seg"]), Pool: "p", Capacity: 100, Capabilities: caps, Endpoint: a["client"] + ":9000", Now: h.now}
		if a.has("pool") {
			cmd.Pool = a["pool"]
		}
		if a.has("ep") {
			cmd.Endpoint = a["ep"]
		}
		cmd.Process = a["process"]
		if a.has("marker") {
			m := a.u64(t, "marker")
			cmd.MarkerCluster = &m
		}
		r := h.apply(cmd).(*MountResult)
		if r.Err != nil {
			return fmt.Sprintf("%s epoch=%d", fmtErr(r.Err), r.MountEpoch)
		}
		return fmt.Sprintf("epoch=%d", r.MountEpoch)
	case "unmount":
		r := h.apply(&UnmountLocalDisk{Segment: api.SegmentID(a["seg"]), Epoch: a.u64(t, "epoch"), Now: h.now}).(*UnmountResult)
		return fmtErr(r.Err)
	case "putstart":
		r := h.apply(&PutStart{Key: a["key"], Size: 10, Replicas: localReplicas(a.segs("segs")...), PutID: "put-" + a["key"],
			IfAbsent: a.has("ifabsent"), Session: d.session(t, a["sess"]), Now: h.now}).(*PutStartResult)
		if r.Err != nil {
			return fmtErr(r.Err) + fmtDup(r.Duplicate)
		}
		if !a.has("sess") {
			return "inc=" + fmtInc(r.Incarnation)
		}
		// A sessioned answer shows the replicas too: a repeat must hand
		// back the same placement.
		var segs []string
		for _, x := range r.Replicas {
			segs = append(segs, string(x.Segment))
		}
		return fmt.Sprintf("inc=%s replicas=%s%s", fmtInc(r.Incarnation), strings.Join(segs, ","), fmtDup(r.Duplicate))
	case "put":
		r := h.putStart(a["key"], a.has("ifabsent"), a.segs("segs")...)
		if r.Err != nil {
			return "start " + fmtErr(r.Err)
		}
		e := h.putEnd(a["key"], r.Incarnation)
		return fmt.Sprintf("inc=%s end %s tasks=%d", fmtInc(r.Incarnation), fmtErr(e.Err), e.TasksCreated)
	case "putend", "revoke":
		var cmd Command = &PutEnd{Key: a["key"], Incarnation: d.inc(a.u64(t, "inc")), Session: d.session(t, a["sess"]), Now: h.now}
		if fields[0] == "revoke" {
			cmd = &PutRevoke{Key: a["key"], Incarnation: d.inc(a.u64(t, "inc")), Session: d.session(t, a["sess"]), Now: h.now}
		}
		r := h.apply(cmd).(*PutEndResult)
		return fmt.Sprintf("%s tasks=%d%s", fmtErr(r.Err), r.TasksCreated, fmtDup(r.Duplicate))
	case "remove":
		// if=low,... gives one expected incarnation per key (0:
		// unconditional); spans=sess/n;... splits the keys into the
		// requests of a group commit ("-" for no session).
		cmd := &Remove{Keys: a.list("keys"), Session: d.session(t, a["sess"]), Now: h.now}
		for _, low := range a.list("if") {
			n, err := strconv.ParseUint(low, 10, 64)
			if err != nil {
				t.Fatalf("if=%q: %v", a["if"], err)
			}
			var inc api.ObjectIncarnation
			if n != 0 {
				inc = d.inc(n)
			}
			cmd.IfInc = append(cmd.IfInc, inc)
		}
		if a.has("spans") {
			for _, sp := range strings.Split(a["spans"], ";") {
				sess, n, _ := strings.Cut(sp, "/")
				k, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("spans=%q: %v", a["spans"], err)
				}
				cmd.Spans = append(cmd.Spans, RemoveSpan{Session: d.session(t, strings.TrimPrefix(sess, "-")), N: k})
			}
		}
		r := h.apply(cmd).(*RemoveResult)
		var b strings.Builder
		for _, kr := range r.Results {
			fmt.Fprintf(&b, "%s: %s\n", kr.Key, fmtErr(kr.Err))
		}
		fmt.Fprintf(&b, "tasks=%d%s", r.TasksCreated, fmtDup(r.Duplicate))
		if r.SpanDuplicate != nil {
			fmt.Fprintf(&b, " span_dup=%v", r.SpanDuplicate)
		}
		return b.String()
	case "woke":
		// Whose long polls the last entry concerns (FSM.ApplyWake).
		return h.woke
	case "tick":
		// Advance the leader's clock carried by the next entries.
		h.now += a.i64(t, "ms") * 1e6
		return "ok"
	case "sessions":
		s := h.f.SessionStats()
		return fmt.Sprintf("clients=%d results=%d", s.Clients, s.Results)
	case "ack":
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
		r := h.ack(api.SegmentID(a["seg"]), a.u64(t, "epoch"), rs...)
		if r.Err != nil {
			return fmtErr(r.Err)
		}
		return fmt.Sprintf("dropped=%d kept=%d unknown=%d", r.Dropped, r.Kept, r.Unknown)
	case "fetch":
		limit := 0
		if a.has("limit") {
			limit = int(a.u64(t, "limit"))
		}
		ts, more, err := h.f.FetchTasks(api.SegmentID(a["seg"]), a.u64(t, "epoch"), limit)
		if err != nil {
			return fmtErr(api.AsError(err))
		}
		var b strings.Builder
		for _, x := range ts {
			b.WriteString(fmtTask(x) + "\n")
		}
		fmt.Fprintf(&b, "more=%v", more)
		return b.String()
	case "drop":
		r := h.apply(&DropReplicas{Segment: api.SegmentID(a["seg"]), Epoch: a.u64(t, "epoch"), Refs: d.refs(a.list("refs")), Now: h.now}).(*DropResult)
		if r.Err != nil {
			return fmtErr(r.Err)
		}
		var parts []string
		for _, x := range r.Dropped {
			parts = append(parts, x.Key+"@"+fmtInc(x.Incarnation))
		}
		return "dropped=[" + strings.Join(parts, " ") + "]"
	case "droptomb":
		r := h.apply(&DropTombstoned{Segment: api.SegmentID(a["seg"]), Epoch: a.u64(t, "epoch"), Refs: d.refs(a.list("refs")), Now: h.now}).(*DropTombstonedResult)
		if r.Err != nil {
			return fmtErr(r.Err)
		}
		var parts []string
		for _, x := range r.Dropped {
			parts = append(parts, x.Key+"@"+fmtInc(x.Incarnation))
		}
		return fmt.Sprintf("dropped=[%s] objects=%d", strings.Join(parts, " "), r.Objects)
	case "replicas":
		// The COMPLETE incarnations the table places on seg (ReplicasOn).
		limit := 0
		if a.has("limit") {
			limit = int(a.u64(t, "limit"))
		}
		out, next, more, err := h.f.ReplicasOn(api.SegmentID(a["seg"]), a.u64(t, "epoch"), a["after"], limit)
		if err != nil {
			return fmtErr(api.AsError(err))
		}
		var parts []string
		for _, r := range out {
			parts = append(parts, r.Key+"@"+fmtInc(r.Incarnation))
		}
		return fmt.Sprintf("refs=[%s] next=%s more=%v", strings.Join(parts, " "), next, more)
	case "notlive":
		refs := d.refs(a.list("refs"))
		out, err := h.f.NotLive(api.SegmentID(a["seg"]), a.u64(t, "epoch"), refs)
		if err != nil {
			return fmtErr(api.AsError(err))
		}
		var parts []string
		for _, r := range out {
			parts = append(parts, r.Key+"@"+fmtInc(r.Incarnation))
		}
		return "not_live=[" + strings.Join(parts, " ") + "]"
	case "get":
		v, err := h.f.Get(a["key"])
		if err != nil {
			return fmtErr(api.AsError(err))
		}
		if a.has("putid") {
			return fmtObject(v) + " put_id=" + v.PutID
		}
		return fmtObject(v)
	case "stat":
		v, pending, deletes, err := h.f.Stat(a["key"])
		p := "none"
		if pending != nil {
			p = fmtInc(*pending)
		}
		obj := fmtErr(api.AsError(err))
		if err == nil {
			obj = fmtObject(v)
		}
		return fmt.Sprintf("%s pending=%s pending_deletes=%d", obj, p, deletes)
	case "tasks":
		ts, total := h.f.ListTasks(api.SegmentID(a["seg"]), 0)
		var b strings.Builder
		for _, x := range ts {
			b.WriteString(fmtTask(x) + "\n")
		}
		fmt.Fprintf(&b, "total=%d", total)
		return b.String()
	case "segments":
		var b strings.Builder
		for _, s := range h.f.Segments() {
			fmt.Fprintf(&b, "%s client=%q epoch=%d mounted=%v retired=%v caps=%v pending=%d\n", s.ID, s.ClientID, s.MountEpoch, s.Mounted, s.Retired, s.Capabilities, s.PendingTasks)
		}
		return strings.TrimRight(b.String(), "\n")
	case "retire":
		r := h.apply(&RetireStorage{Segment: api.SegmentID(a["seg"]), By: a["by"], Reason: a["reason"], Now: h.now}).(*RetireResult)
		return fmt.Sprintf("%s dropped=%d", fmtErr(r.Err), r.Dropped)
	case "restore":
		h.f = restored(t, h.f)
		return "ok"
	case "reserve":
		// A ReserveIncarnations entry living ms milliseconds past the
		// harness clock (count=0: only the entry's time).
		r := h.apply(&ReserveIncarnations{Count: a.u64(t, "count"), Expires: h.now + 1 + a.i64(t, "ms")*1e6, Now: h.now + 1}).(*ReserveResult)
		if r.Err != nil {
			return fmtErr(r.Err)
		}
		if r.Lo > r.Hi {
			return "block=none"
		}
		return fmt.Sprintf("block=%d..%d", r.Lo, r.Hi)
	case "commitbatch":
		// items=key:inc:seg,... in order.
		cmd := &PutCommitBatch{Session: d.session(t, a["sess"]), Now: h.now + 1}
		for _, it := range a.list("items") {
			parts := strings.Split(it, ":")
			low, err := strconv.ParseUint(parts[1], 10, 64)
			if err != nil || len(parts) != 3 {
				t.Fatalf("item %q: want key:inc:seg", it)
			}
			cmd.Items = append(cmd.Items, PutCommitItem{Key: parts[0], Incarnation: d.inc(low), Size: 10, Replicas: localReplicas(api.SegmentID(parts[2])), PutID: "put-" + parts[0]})
		}
		r := h.apply(cmd).(*PutEndBatchResult)
		if r.Err != nil {
			return fmtErr(r.Err) + fmtDup(r.Duplicate)
		}
		var b strings.Builder
		for i, x := range r.Items {
			fmt.Fprintf(&b, "%s: %s tasks=%d\n", cmd.Items[i].Key, fmtErr(x.Err), x.TasksCreated)
		}
		b.WriteString("dup=" + fmt.Sprint(r.Duplicate))
		return b.String()
	case "commit":
		r := h.apply(&PutCommit{Key: a["key"], Incarnation: d.inc(a.u64(t, "inc")), Size: 10, Replicas: localReplicas(a.segs("segs")...),
			PutID: "put-" + a["key"], IfAbsent: a.has("ifabsent"), Session: d.session(t, a["sess"]), Now: h.now + 1}).(*PutEndResult)
		return fmt.Sprintf("%s tasks=%d%s", fmtErr(r.Err), r.TasksCreated, fmtDup(r.Duplicate))
	case "stats":
		s := h.f.Stats()
		return fmt.Sprintf("objects=%d pending_puts=%d tasks=%d/%d", s.Objects, s.PendingPuts, s.PendingTasks, s.RegistryCapacity)
	case "settings":
		// A Settings entry; no argument: the effective settings.
		if len(a) == 0 {
			cur, set := h.f.Settings()
			return fmt.Sprintf("%s set=%v", fmtSettings(cur), set)
		}
		r := h.apply(&Settings{Settings: api.Settings{
			RegistryCapacity: int(a.i64(t, "capacity")), SessionTTLMillis: a.i64(t, "ttl_ms"),
			MaxSessions: int(a.i64(t, "max_sessions")), MaxSessionResults: int(a.i64(t, "max_results")),
		}, Session: d.session(t, a["sess"]), Now: h.now}).(*SettingsResult)
		return fmt.Sprintf("%s %s%s", fmtErr(r.Err), fmtSettings(r.Settings), fmtDup(r.Duplicate))
	}
	if out, ok := d.runJobs(t, fields[0], a); ok {
		return out
	}
	if out, ok := d.runRebuild(t, fields[0], a); ok {
		return out
	}
	if out, ok := d.runBatchOrDFS(t, fields[0], a); ok {
		return out
	}
	t.Fatalf("line %d: unknown command %q", c.line, fields[0])
	return ""
}

// session parses "client:seq[:floor]" ("" is no session).
func (d *ddRunner) session(t *testing.T, spec string) api.Session {
	if spec == "" {
		return api.Session{}
	}
	parts := strings.Split(spec, ":")
	s := api.Session{ClientID: parts[0]}
	var err error
	if len(parts) > 1 {
		s.Seq, err = strconv.ParseUint(parts[1], 10, 64)
	}
	if err == nil && len(parts) > 2 {
		s.Floor, err = strconv.ParseUint(parts[2], 10, 64)
	}
	if err != nil || len(parts) > 3 {
		t.Fatalf("session %q: want client:seq[:floor]", spec)
	}
	return s
}

func fmtDup(dup bool) string {
	if dup {
		return " dup"
	}
	return ""
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

// refs parses "key@low" items; "key@0" or "key" names the legacy incarnation.
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
