package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"sexton/api"
	"sexton/snapshot"
)

// TestConfigCannotChangeApply: fsm.Config has nothing that could make two
// nodes apply one log differently once it has settings (invariant 12;
// issue 9 fault 4: the registry capacity was a per-process flag). Its one
// field, Legacy, is for a state from before replicated settings and ends
// with the first Settings entry. The capacity is a Settings entry, so two
// FSMs applying the same log, changing it midway, agree on every result
// and write the same snapshot, whatever their Legacy.
func TestConfigCannotChangeApply(t *testing.T) {
	if rt := reflect.TypeOf(Config{}); rt.NumField() != 1 || rt.Field(0).Name != "Legacy" {
		t.Fatalf("fsm.Config has %d fields; a setting that changes Apply belongs in the replicated settings", rt.NumField())
	}
	a, b := newHarness(t, 0), newHarness(t, 0)
	b.f = New(Config{Legacy: api.Settings{RegistryCapacity: 7}})
	for _, h := range []*harness{a, b} {
		h.epoch(7)
		h.mustMount("c1", "s1", tombstoneCaps...)
		h.put("k1", "s1")
		h.put("k2", "s1")
		h.put("k3", "s1")
	}
	log := []Command{
		&Settings{Settings: api.Settings{RegistryCapacity: 2}, Now: 5000},
		&Remove{Keys: []string{"k1", "k2", "k3"}, Now: 5001},
		&Settings{Settings: api.Settings{RegistryCapacity: 1}, Now: 5002}, // below the 2 pending: refused
		&Settings{Settings: api.Settings{RegistryCapacity: 3}, Now: 5003},
		&Remove{Keys: []string{"k3"}, Now: 5004},
	}
	var results [2][]any
	for i, h := range []*harness{a, b} {
		for _, c := range log {
			results[i] = append(results[i], h.apply(c))
		}
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Fatalf("results differ: %v vs %v", results[0], results[1])
	}
	if r := results[0][1].(*RemoveResult); codeOf(r.Results[2].Err) != api.CodeLocalDeleteRegistryFull {
		t.Fatalf("k3 under capacity 2: %v", r.Results[2].Err)
	}
	if r := results[0][2].(*SettingsResult); codeOf(r.Err) != api.CodeInvalidParams || r.Settings.RegistryCapacity != 2 {
		t.Fatalf("capacity below the pending tasks: %+v", r)
	}
	if r := results[0][4].(*RemoveResult); r.Results[0].Err != nil {
		t.Fatalf("k3 under capacity 3: %v", r.Results[0].Err)
	}
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, b.f)) {
		t.Fatal("snapshots differ")
	}
}

func TestGrantKeyIsSetOnce(t *testing.T) {
	h := newHarness(t, 0)
	if h.f.GrantKey() != nil {
		t.Fatal("a fresh FSM has a grant key")
	}
	h.apply(&EpochBegin{V: EpochBeginV1, ClusterID: 7, Now: 1}) // an old leader: no key
	if h.f.GrantKey() != nil {
		t.Fatal("a v1 EpochBegin set a grant key")
	}
	k1, k2 := bytes.Repeat([]byte{1}, api.GrantKeyLen), bytes.Repeat([]byte{2}, api.GrantKeyLen)
	h.apply(&EpochBegin{ClusterID: 7, GrantKey: k1, Now: 2})
	h.apply(&EpochBegin{ClusterID: 7, GrantKey: k2, Now: 3})
	if got := h.f.GrantKey(); !bytes.Equal(got, k1) {
		t.Fatalf("grant key %x, want the first one %x", got, k1)
	}
	h.f.GrantKey()[0] = 9 // a copy: the state keeps its own
	g := restored(t, h.f)
	if got := g.GrantKey(); !bytes.Equal(got, k1) {
		t.Fatalf("restored grant key %x", got)
	}
	if _, err := Encode(&EpochBegin{GrantKey: []byte{1, 2, 3}}); !errors.Is(err, ErrCorruptCommand) {
		t.Fatalf("a short grant key encoded: %v", err)
	}
}

// TestFetchTasksFilteredDoesNotStarve: issue 9 — 256 tasks that keep
// failing starved every later task of the segment. A skipped task is not
// counted and does not end the scan.
func TestFetchTasksFilteredDoesNotStarve(t *testing.T) {
	h, epoch := newMountedEpoch(t, 0)
	h.putRemoved("s1", 300)
	all, more, err := h.f.FetchTasks("s1", epoch, 0)
	if err != nil || len(all) != api.MaxFetchLimit || !more {
		t.Fatalf("FetchTasks: %d tasks, more=%v, %v", len(all), more, err)
	}
	failing := map[uint64]bool{}
	for _, x := range all {
		failing[x.ID] = true
	}
	skip := func(x api.LocalDeleteTask) bool { return failing[x.ID] }
	got, more, err := h.f.FetchTasksFiltered("s1", epoch, 0, skip)
	if err != nil || len(got) != 300-api.MaxFetchLimit || more {
		t.Fatalf("filtered: %d tasks, more=%v, %v", len(got), more, err)
	}
	if got[0].ID != all[len(all)-1].ID+1 {
		t.Fatalf("filtered fetch starts at task %d", got[0].ID)
	}
	got, more, _ = h.f.FetchTasksFiltered("s1", epoch, 10, skip)
	if len(got) != 10 || !more {
		t.Fatalf("filtered with limit 10: %d tasks, more=%v", len(got), more)
	}
}

// TestV1BodiesApplyWithoutDedup: entries written before sessions existed
// still apply, and are never answered from the session table.
func TestV1BodiesApplyWithoutDedup(t *testing.T) {
	h := newMounted(t, 0)
	r1 := h.apply(&PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: "a", Size: 1, Replicas: localReplicas("s1")}, Now: 10}).(*PutStartResult)
	r2 := h.apply(&PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: "a", Size: 1, Replicas: localReplicas("s1")}, Now: 11}).(*PutStartResult)
	if r1.Err != nil || codeOf(r2.Err) != api.CodeObjectAlreadyExists || r2.Duplicate {
		t.Fatalf("v1 put starts: %+v %+v", r1, r2)
	}
	if e := h.apply(&PutEnd{V: PutEndV1, Key: "a", Incarnation: r1.Incarnation, Now: 12}).(*PutEndResult); e.Err != nil {
		t.Fatal(e.Err)
	}
	if r := h.apply(&Remove{V: RemoveV1, Keys: []string{"a"}, Now: 13}).(*RemoveResult); r.Results[0].Err != nil || r.Duplicate {
		t.Fatalf("v1 remove: %+v", r)
	}
	if s := h.f.SessionStats(); s.Clients != 0 {
		t.Fatalf("v1 entries made %d sessions", s.Clients)
	}
}

// TestSessionedBatchesAndSettingsRepeatExactly: every sessioned command's
// repeat is answered exactly as the first time, also after the session
// table went through a snapshot.
func TestSessionedBatchesAndSettingsRepeatExactly(t *testing.T) {
	h := newMounted(t, 0)
	h.mustMount("c2", "s2", tombstoneCaps...)
	h.put("old", "s1")
	h.put("prev", "s1")
	sess := func(seq uint64) api.Session { return api.Session{ClientID: "cl", Seq: seq, Floor: 1} }
	cmds := []Command{
		&PutStartBatch{Items: []PutStartItem{
			{Key: "a", Size: 1, Replicas: localReplicas("s1", "s2")},
			{Key: "b", Size: 1, Replicas: localReplicas("nosuch")},
			{Key: "old", Size: 1, Replicas: localReplicas("s2")},
			{Key: "prev", Size: 1, Replicas: localReplicas("s2")},
		}, Session: sess(1)},
		&PutStartBatch{Items: []PutStartItem{{Key: "d"}, {Key: "d"}}, Session: sess(2)}, // refused whole
		&Settings{Settings: api.Settings{MaxSessionResults: 50}, Session: sess(3)},
		&Remove{Keys: []string{"old", "zz", strings.Repeat("x", 300)}, IfInc: []api.ObjectIncarnation{{}, {}, {High: 1, Low: 1}}, Session: sess(4)},
	}
	var first []any
	for _, c := range cmds {
		first = append(first, h.apply(c))
	}
	pend := first[0].(*PutStartBatchResult)
	inc := pend.Items[0].Incarnation
	ends := &PutEndBatch{Items: []PutEndItem{{Key: "a", Incarnation: inc}, {Key: "old", Incarnation: inc}, {Key: "nokey", Incarnation: inc}, {Key: "prev", Incarnation: inc}}, Session: sess(5)}
	cmds = append(cmds, ends)
	first = append(first, h.apply(ends))
	if got := first[len(first)-1].(*PutEndBatchResult).Items[3].TasksCreated; got != 1 {
		t.Fatalf("superseding prev created %d tasks, want 1 (the repeat must answer it)", got)
	}
	h.apply(&Settings{Settings: api.Settings{MaxSessionResults: 60}, Now: h.now}) // changes what a fresh answer to seq 3 would say
	for round, f := range []*FSM{h.f, restored(t, h.f)} {
		h.f = f
		for i, c := range cmds {
			got := h.apply(c)
			want := reflect.ValueOf(first[i]).Elem()
			dup := reflect.ValueOf(got).Elem()
			if !dup.FieldByName("Duplicate").Bool() {
				t.Fatalf("round %d: %s repeat not answered from the table: %+v", round, c.Type(), got)
			}
			cp := reflect.New(want.Type()).Elem()
			cp.Set(dup)
			cp.FieldByName("Duplicate").SetBool(false)
			if r, ok := cp.Addr().Interface().(*RemoveResult); ok {
				// A Remove's TasksCreated counts this entry's new tasks.
				if r.TasksCreated != 0 {
					t.Fatalf("round %d: a repeated remove created %d tasks", round, r.TasksCreated)
				}
				r.TasksCreated = first[i].(*RemoveResult).TasksCreated
			}
			if !reflect.DeepEqual(cp.Interface(), want.Interface()) {
				t.Fatalf("round %d: %s repeat answered\n%+v\nfirst answer\n%+v", round, c.Type(), cp.Interface(), want.Interface())
			}
		}
	}
}

// TestSessionSweepIsBoundedAndExact: a mass expiry is swept a bounded
// number per entry, and an expired session still in the table is treated
// as gone.
func TestSessionSweepIsBoundedAndExact(t *testing.T) {
	h := newHarness(t, 0)
	h.epoch(7)
	h.apply(&Settings{Settings: api.Settings{SessionTTLMillis: 1000}, Now: h.now})
	for i := 0; i < 3*sweepBudget; i++ {
		h.apply(&Remove{Keys: []string{"x"}, Session: api.Session{ClientID: fmt.Sprintf("c%03d", i), Seq: 1}, Now: h.now})
	}
	h.now += 2e9
	h.apply(&Remove{Keys: []string{"x"}, Now: h.now})
	if n := h.f.SessionStats().Clients; n != 2*sweepBudget {
		t.Fatalf("one entry swept %d sessions, want %d", 3*sweepBudget-n, sweepBudget)
	}
	// c200 is expired but not swept yet: its repeat is not recognised.
	r := h.apply(&Remove{Keys: []string{"x"}, Session: api.Session{ClientID: fmt.Sprintf("c%03d", 3*sweepBudget-1), Seq: 1}, Now: h.now}).(*RemoveResult)
	if r.Duplicate {
		t.Fatal("an expired session answered a repeat")
	}
	h.apply(&Remove{Keys: []string{"x"}, Now: h.now})
	h.apply(&Remove{Keys: []string{"x"}, Now: h.now})
	if n := h.f.SessionStats().Clients; n != 1 {
		t.Fatalf("%d sessions left, want the one that came back", n)
	}
}

func TestTooLargeResultIsOutcomeUnknownOnRepeat(t *testing.T) {
	st := newState(api.Settings{}, false)
	s := api.Session{ClientID: "c", Seq: 1}
	g := st.sessionBegin(CmdPutStart, s, 1)
	long := api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Path: strings.Repeat("p", MaxDFSPathLen)}}
	var reps []api.ReplicaDescriptor
	for i := 0; i < 250; i++ {
		reps = append(reps, long)
	}
	st.sessionEnd(&g, sessResult{kind: CmdPutStart, reps: reps})
	g = st.sessionBegin(CmdPutStart, s, 2)
	if g.prev == nil || codeOf(g.prev.err) != api.CodeOutcomeUnknown || g.prev.reps != nil {
		t.Fatalf("stored %+v", g.prev)
	}
}

// TestRestoreRefusesInconsistentSessions: session records that decode but
// could not come from Apply are refused.
func TestRestoreRefusesInconsistentSessions(t *testing.T) {
	res := func(seq uint64, kind CommandType) *snapshot.SessionResult {
		return &snapshot.SessionResult{Seq: seq, Kind: uint8(kind)}
	}
	cases := map[string][]snapshot.SessionRecord{
		"seq below floor":     {{ClientID: "a", Floor: 5, Result: res(4, CmdPutEnd)}},
		"seq order":           {{ClientID: "a", Floor: 1, Result: res(4, CmdPutEnd)}, {ClientID: "a", Floor: 1, Result: res(3, CmdPutEnd)}},
		"client order":        {{ClientID: "b", Floor: 1}, {ClientID: "a", Floor: 1}},
		"floors disagree":     {{ClientID: "a", Floor: 1, Result: res(4, CmdPutEnd)}, {ClientID: "a", Floor: 2, Result: res(5, CmdPutEnd)}},
		"bare among results":  {{ClientID: "a", Floor: 1}, {ClientID: "a", Floor: 1, Result: res(5, CmdPutEnd)}},
		"unknown kind":        {{ClientID: "a", Result: res(1, CmdLocalDeleteAck)}},
		"settings no values":  {{ClientID: "a", Result: res(1, CmdSettings)}},
		"remove item no err":  {{ClientID: "a", Result: &snapshot.SessionResult{Seq: 1, Kind: uint8(CmdRemove), Count: 2, Items: []snapshot.SessionItem{{I: 1}}}}},
		"remove item outside": {{ClientID: "a", Result: &snapshot.SessionResult{Seq: 1, Kind: uint8(CmdRemove), Count: 1, Items: []snapshot.SessionItem{{I: 1, Err: api.Errorf(api.CodeObjectNotFound, "")}}}}},
		"batch items short":   {{ClientID: "a", Result: &snapshot.SessionResult{Seq: 1, Kind: uint8(CmdPutEndBatch), Count: 2}}},
		"active in future":    {{ClientID: "a", LastActive: 99, Result: res(1, CmdPutEnd)}},
		"replicas in remove":  {{ClientID: "a", Result: &snapshot.SessionResult{Seq: 1, Kind: uint8(CmdRemove), Replicas: localReplicas("s")}}},
	}
	for name, recs := range cases {
		b := &restoreSink{st: newState(api.Settings{}, false), format: snapshot.Format120, haveState: true}
		var err error
		for i := range recs {
			if err = b.session(&recs[i]); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
	b := &restoreSink{st: newState(api.Settings{}, false), format: snapshot.Format110}
	if err := b.session(&snapshot.SessionRecord{ClientID: "a"}); !errors.Is(err, ErrCorruptSnapshot) {
		t.Errorf("session in 1.1.0: %v", err)
	}
}

// BenchmarkSessionHeap measures what the session table costs on the heap:
// per client session (36-byte id, one stored result) and per stored
// result (one client, many results), for a result without an error (a
// successful Remove, PutEnd) and for a one-key Remove that failed (its
// per-key error kept). DESIGN.md quotes the numbers; sessionOverhead and
// resultOverhead follow them.
func BenchmarkSessionHeap(b *testing.B) {
	results := map[string]func() sessResult{
		"ok": func() sessResult { return sessResult{kind: CmdRemove, count: 1} },
		"key_err": func() sessResult {
			err := api.Errorf(api.CodeObjectNotFound, "key %q", "0123456789abcdef0123456789abcdef")
			return sessResult{kind: CmdRemove, count: 1, extra: &resultExtra{items: []itemResult{{err: storedItemErr(err)}}}}
		},
	}
	measure := func(clients, perClient int, result func() sessResult) (float64, *state) {
		st := newState(api.Settings{}, false)
		before := heapInUse()
		for c := 0; c < clients; c++ {
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", c, c) // a UUID's 36 bytes
			for s := 1; s <= perClient; s++ {
				g := st.sessionBegin(CmdRemove, api.Session{ClientID: id, Seq: uint64(s), Floor: 1}, 1)
				st.sessionEnd(&g, result())
			}
		}
		return float64(heapInUse()-before) / float64(clients*perClient), st
	}
	for _, name := range []string{"ok", "key_err"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				perSession, st := measure(20000, 1, results[name])
				perResult, st2 := measure(1, 1000, results[name])
				b.ReportMetric(perSession, "B/session")
				b.ReportMetric(perResult, "B/result")
				b.ReportMetric(float64(st.sess.bytes)/20000, "est-B/session")
				empty := len(snapshotBytes(b, New(Config{})))
				b.ReportMetric(float64(len(snapshotBytes(b, &FSM{st: st}))-empty)/20000, "snap-B/session")
				b.ReportMetric(float64(st2.sess.bytes-sessionCost("x"))/1000, "est-B/result")
				runtime.KeepAlive(st)
				runtime.KeepAlive(st2)
			}
		})
	}
}
