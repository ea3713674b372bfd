package fsm

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
)

// TestJobStartRefusedWhenPendingPutsOutgrowItsKeptBound: a job keeps the
// puts in progress at its start that complete after it, so it starts only
// if those under its prefix fit api.MaxJobKeptBytes; otherwise it is
// refused (UNAVAILABLE, naming the puts), and a job over another prefix,
// or over the same one once the puts are done, starts.
func TestJobStartRefusedWhenPendingPutsOutgrowItsKeptBound(t *testing.T) {
	h := newMounted(t, DefaultRegistryCapacity)
	long := strings.Repeat("x", api.MaxKeyLen-16)
	var keys []string
	var incs []api.ObjectIncarnation
	for bytes := 0; bytes <= api.MaxJobKeptBytes; {
		k := fmt.Sprintf("big/%s%08d", long, len(keys))
		r := h.apply(&PutStart{PutStartItem: PutStartItem{Key: k, Size: 10, Replicas: localReplicas("s1")}, Now: h.now}).(*PutStartResult)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		keys, incs = append(keys, k), append(incs, r.Incarnation)
		bytes += api.JobKeptCost(k)
	}
	r := h.apply(&JobStart{Prefix: "big/", Now: h.now}).(*JobResult)
	if codeOf(r.Err) != api.CodeUnavailable || !strings.Contains(r.Err.Message, fmt.Sprintf("%d puts are in progress", len(keys))) {
		t.Fatalf("job over %d puts in progress: %v, want UNAVAILABLE naming them", len(keys), r.Err)
	}
	if n := len(h.f.Jobs()); n != 0 {
		t.Fatalf("a refused start left %d jobs", n)
	}
	if r := h.apply(&JobStart{Prefix: "small/", Now: h.now}).(*JobResult); r.Err != nil {
		t.Fatalf("job over another prefix: %v", r.Err)
	}
	// One put done: the rest fit.
	if e := h.putEnd(keys[0], incs[0]); e.Err != nil {
		t.Fatal(e.Err)
	}
	r = h.apply(&JobStart{Prefix: "big/", Now: h.now}).(*JobResult)
	if r.Err != nil {
		t.Fatalf("job once the puts fit: %v", r.Err)
	}
	// Every put completes after the start, in one batch: the job keeps
	// them all, across a snapshot, and removes only keys[0].
	batch := &PutEndBatch{Now: h.now}
	for i := 1; i < len(keys); i++ {
		batch.Items = append(batch.Items, PutEndItem{Key: keys[i], Incarnation: incs[i]})
	}
	for _, it := range h.apply(batch).(*PutEndBatchResult).Items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
	h.f = restored(t, h.f)
	j, cands, last, _ := h.f.JobCandidates(r.Job.ID, 10)
	if len(cands) != 1 || cands[0].Key != keys[0] || cands[0].Tasks != 1 || !last {
		t.Fatalf("candidates %+v last=%v, want only %s", cands, last, keys[0])
	}
	step := h.apply(&JobAdvance{Job: j.ID, Keys: keys, Last: true, Now: h.now}).(*JobAdvanceResult)
	if step.Err != nil || step.Removed != 1 || step.Skipped != len(keys)-1 || step.Job.State != api.JobDone {
		t.Fatalf("step: %+v", step)
	}
	for _, k := range keys[1:] {
		if _, err := h.f.Get(k); err != nil {
			t.Fatalf("a put acknowledged after the job's start: %v", err)
		}
	}
}

// TestJobStartRepeatAnswersALegacyStoredResult: a JobStart result stored
// as the job's start incarnation (as snapshots written before results kept
// the id hold it) still answers the job's id on a rebuilt cluster, whose
// start incarnations add the rebuild's incarnation base to the index.
func TestJobStartRepeatAnswersALegacyStoredResult(t *testing.T) {
	h := newHarness(t, DefaultRegistryCapacity)
	h.epoch(5)
	h.mustMount("c1", "s1", tombstoneCaps...)
	for _, finish := range []bool{false, true} {
		if r := h.apply(&RebuildBegin{ClusterID: 7, IncFloor: 500, Finish: finish, Now: h.now}).(*RebuildBeginResult); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	sess := api.Session{ClientID: "op", Seq: 1}
	first := h.apply(&JobStart{Prefix: "p/", Session: sess, Now: h.now}).(*JobResult)
	if first.Err != nil || first.Job.Start.Low != 500+first.Job.ID {
		t.Fatalf("start: %+v", first)
	}
	stored := &h.f.st.sess.byID["op"].results[0]
	if stored.inc != (api.ObjectIncarnation{Low: first.Job.ID}) {
		t.Fatalf("stored answer %s, want the job id %d", stored.inc, first.Job.ID)
	}
	stored.inc = first.Job.Start
	if again := h.apply(&JobStart{Prefix: "p/", Session: sess, Now: h.now}).(*JobResult); again.Job.ID != first.Job.ID || !again.Duplicate {
		t.Fatalf("repeat answered job %d (dup %v), want %d", again.Job.ID, again.Duplicate, first.Job.ID)
	}
}

// TestJobRemovesATasklessKeyWhileClientsFillTheReserve: a key that needs
// no delete task (its replica's segment takes none) is removed by a job
// step even while clients' Removes hold the registry past the job's limit;
// a key that needs a task pauses the job.
func TestJobRemovesATasklessKeyWhileClientsFillTheReserve(t *testing.T) {
	h := newMounted(t, 10)
	h.mustMount("c2", "s2")
	h.put("a/1", "s2")
	h.put("a/2", "s1")
	var fill []string
	for i := range 10 {
		k := fmt.Sprintf("c/%d", i)
		h.put(k, "s1")
		fill = append(fill, k)
	}
	if r := h.remove(fill...); r.TasksCreated != 10 {
		t.Fatalf("client removes created %d tasks, want the registry's 10", r.TasksCreated)
	}
	j := h.apply(&JobStart{Prefix: "a/", Now: h.now}).(*JobResult)
	step := h.apply(&JobAdvance{Job: j.Job.ID, Keys: []string{"a/1", "a/2"}, Last: true, Now: h.now}).(*JobAdvanceResult)
	if step.Err != nil || step.Removed != 1 || step.Job.Cursor != "a/1" || step.Job.State != api.JobPausedRegistryFull {
		t.Fatalf("step: %+v", step)
	}
}
