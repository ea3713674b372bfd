package fsm

import (
	"bytes"
	"os"
	"testing"

	"sexton/api"
	"sexton/snapshot"
)

// TestLegacy100SnapshotRestoresAsIncarnationZero restores the snapshot
// package's 1.0.0 golden file: objects come back with the legacy
// incarnation, segments with epoch zero and no capabilities, no tasks; the
// state then works like any other.
func TestLegacy100SnapshotRestoresAsIncarnationZero(t *testing.T) {
	data, err := os.ReadFile("../snapshot/testdata/v100.snap")
	if err != nil {
		t.Skipf("1.0.0 golden file not available: %v", err)
	}
	f := New(Config{})
	if err := f.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("restore 1.0.0: %v", err)
	}
	s := f.Stats()
	if s.AppliedIndex != 900 || s.AppliedTerm != 2 || s.PendingTasks != 0 || s.Objects != 2 || s.MasterEpoch != 0 {
		t.Fatalf("stats after 1.0.0 restore: %+v", s)
	}
	one, err := f.Get("old/one")
	if err != nil || !one.Incarnation.IsZero() || one.Tenant != "default" || len(one.Replicas) != 1 || one.Replicas[0].Segment != "seg-a" {
		t.Fatalf("old/one = %+v, %v", one, err)
	}
	multi, err := f.Get("old/multi")
	if err != nil || !multi.Incarnation.IsZero() || multi.Tenant != "tenant-b" || len(multi.Replicas) != 2 {
		t.Fatalf("old/multi = %+v, %v", multi, err)
	}
	segA, ok := f.Segment("seg-a")
	if !ok || segA.MountEpoch != 0 || len(segA.Capabilities) != 0 || !segA.Mounted {
		t.Fatalf("seg-a = %+v", segA)
	}

	// Without the capability a Remove is a logical delete with no task.
	h := &harness{t: t, f: f, index: s.AppliedIndex, term: 3, now: 2_000_000_000_000_000_000}
	if r := h.remove("old/multi"); codeOf(r.Results[0].Err) != "" || r.TasksCreated != 0 {
		t.Fatalf("remove old/multi = %+v", r)
	}
	// The holder remounts with the capability (same client: epoch stays 0);
	// legacy objects then get tasks naming incarnation zero.
	r := h.apply(&MountLocalDisk{ClientID: "holder-1", Segment: "seg-a", Pool: "ssd", Capacity: 1 << 40, Capabilities: tombstoneCaps, Endpoint: "10.0.0.1:7001"}).(*MountResult)
	if r.Err != nil || r.MountEpoch != 0 {
		t.Fatalf("remount = %+v", r)
	}
	h.remove("old/one")
	tasks := h.fetch("seg-a", 0)
	if len(tasks) != 1 || tasks[0].Key != "old/one" || !tasks[0].Incarnation.IsZero() {
		t.Fatalf("tasks = %+v", tasks)
	}
	restored(t, f)
}

// TestRestoreIsAllOrNothing: a damaged stream or an inconsistent one
// leaves the FSM exactly as it was.
func TestRestoreIsAllOrNothing(t *testing.T) {
	h := populated(t)
	good := snapshotBytes(t, h.f)
	other := newHarness(t, 100)
	other.epoch(9)
	other.mustMount("c9", "s9", tombstoneCaps...)
	other.put("zzz", "s9")
	otherBytes := snapshotBytes(t, other.f)

	for i := 0; i < len(otherBytes); i += max(1, len(otherBytes)/97) {
		for _, mutate := range []func([]byte) []byte{
			func(b []byte) []byte { return b[:i] },
			func(b []byte) []byte { c := bytes.Clone(b); c[i] ^= 0x10; return c },
		} {
			if err := h.f.Restore(bytes.NewReader(mutate(otherBytes))); err == nil {
				continue // a flip the codec cannot see is not this test's business
			}
			if got := snapshotBytes(t, h.f); !bytes.Equal(got, good) {
				t.Fatalf("failed restore at offset %d changed the state", i)
			}
		}
	}
	if err := h.f.Restore(bytes.NewReader(otherBytes)); err != nil {
		t.Fatal(err)
	}
	if !h.f.Exists("zzz") || h.f.Exists("b") {
		t.Fatal("restore did not replace the state")
	}
}

// TestRestoreRefusesInconsistentRecords: records that decode but could not
// come from Apply are refused by name.
func TestRestoreRefusesInconsistentRecords(t *testing.T) {
	b := &restoreSink{st: newState(api.Settings{RegistryCapacity: 10}, true), format: "1.1.0"}
	seg := segmentRecord("s1")
	if err := b.segment(&seg); err != nil {
		t.Fatal(err)
	}
	if err := b.segment(&seg); err == nil {
		t.Fatal("duplicate segment accepted")
	}
	task := api.LocalDeleteTask{ID: 1, Segment: "s1", Key: "k"}
	if err := b.task(&task); err != nil {
		t.Fatal(err)
	}
	dup := task
	dup.ID = 2
	if err := b.task(&dup); err == nil {
		t.Fatal("duplicate (segment, key, incarnation) accepted")
	}
	orphan := api.LocalDeleteTask{ID: 3, Segment: "nope", Key: "k"}
	if err := b.task(&orphan); err == nil {
		t.Fatal("task on an unknown segment accepted")
	}
}

func segmentRecord(id api.SegmentID) snapshot.Segment {
	return snapshot.Segment{ID: id, ClientID: "c", Mounted: true, MountEpoch: 1, Capabilities: tombstoneCaps}
}

// TestRestoreRefusesMoreTasksThanCapacity: a registry is never over
// capacity, not even after a restore. A 1.2.0 snapshot is judged by its
// own settings, whatever the restoring FSM had; an older one by the
// fallback settings given to RestoreWith.
func TestRestoreRefusesMoreTasksThanCapacity(t *testing.T) {
	h := populated(t) // one task
	h.put("d", "s1")
	h.remove("b", "d")
	// A 1.2.0 snapshot whose own settings say 2 holds 3 tasks.
	v := h.f.Snapshot()
	v.state.Settings = &api.Settings{RegistryCapacity: 2}
	var b bytes.Buffer
	if _, err := v.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	small := New(Config{})
	if err := small.RestoreWith(bytes.NewReader(b.Bytes()), api.Settings{RegistryCapacity: 100}); err == nil {
		t.Fatal("3 tasks restored under the snapshot's capacity of 2")
	}
	if small.Stats().PendingTasks != 0 || small.Stats().Objects != 0 {
		t.Fatal("refused restore left state behind")
	}
	// The same state written as 1.1.0 carries no settings: the fallback
	// decides, and becomes the restored FSM's replicated settings.
	old := snapshot110(t, h.f)
	if err := small.RestoreWith(bytes.NewReader(old), api.Settings{RegistryCapacity: 2}); err == nil {
		t.Fatal("3 tasks of a 1.1.0 snapshot restored under a fallback capacity of 2")
	}
	if err := small.RestoreWith(bytes.NewReader(old), api.Settings{RegistryCapacity: 3}); err != nil {
		t.Fatal(err)
	}
	if s, set := small.Settings(); s.RegistryCapacity != 3 || !set || small.Stats().PendingTasks != 3 {
		t.Fatalf("1.1.0 restored with fallback: settings %+v set=%v, %d tasks", s, set, small.Stats().PendingTasks)
	}
	// Restore (no fallback) takes a 1.1.0 file under the defaults.
	if err := small.Restore(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if s, set := small.Settings(); s != DefaultSettings() || set {
		t.Fatalf("1.1.0 restored without fallback: settings %+v set=%v", s, set)
	}
}
