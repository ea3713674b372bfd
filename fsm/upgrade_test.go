package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"sexton/api"
)

// The old build here is a master from before replicated settings: it took
// its registry capacity from --registry-capacity, wrote 1.0.0 or 1.1.0
// snapshots without settings and v1 command bodies. Its Apply of a v1
// entry under capacity C is this build's Apply of it under a replicated
// capacity C, which is how oldBuild runs it.

// oldBuild is a harness for the old build's state machine under capacity.
func oldBuild(t *testing.T, capacity int) *harness {
	h := newHarness(t, capacity)
	h.term, h.now = 2, 1_700_000_000_000_000_000
	return h
}

// oldEntry is one entry of the old build's log: its index, bytes and the
// answer the old build gave.
type oldEntry struct {
	index uint64
	data  []byte
	res   any
}

// logOld applies cmd (a v1 body) on the old build and keeps the entry.
func logOld(h *harness, cmd Command) oldEntry {
	h.t.Helper()
	data := h.next(cmd)
	res, err := h.f.Apply(h.index, h.term, data)
	if err != nil {
		h.t.Fatalf("old build apply %T: %v", cmd, err)
	}
	return oldEntry{index: h.index, data: data, res: res}
}

// replay applies the old build's entries on f at their own indexes and
// returns f's answers.
func replay(t *testing.T, f *FSM, log []oldEntry) []any {
	t.Helper()
	var out []any
	for _, e := range log {
		res, err := f.Apply(e.index, 2, e.data)
		if err != nil {
			t.Fatalf("replay of entry %d: %v", e.index, err)
		}
		out = append(out, res)
	}
	return out
}

func answers(log []oldEntry) []any {
	var out []any
	for _, e := range log {
		out = append(out, e.res)
	}
	return out
}

// refusedKeys counts the keys of Remove answers refused for a full registry.
func refusedKeys(res []any) int {
	n := 0
	for _, r := range res {
		if rr, ok := r.(*RemoveResult); ok {
			for _, k := range rr.Results {
				if codeOf(k.Err) == api.CodeLocalDeleteRegistryFull {
					n++
				}
			}
		}
	}
	return n
}

// putOld writes keys as complete objects on seg with the old build's
// batches (v1 bodies), MaxBatchPutItems to an entry.
func putOld(h *harness, seg api.SegmentID, keys []string) {
	h.t.Helper()
	for len(keys) > 0 {
		n := min(len(keys), MaxBatchPutItems)
		items := make([]PutStartItem, n)
		for i, k := range keys[:n] {
			items[i] = PutStartItem{Key: k, Size: 1, Replicas: localReplicas(seg), PutID: "p-" + k}
		}
		sr := logOld(h, &PutStartBatch{V: PutStartBatchV1, Items: items, Now: h.now}).res.(*PutStartBatchResult)
		if sr.Err != nil {
			h.t.Fatal(sr.Err)
		}
		ends := make([]PutEndItem, n)
		for i, k := range keys[:n] {
			if sr.Items[i].Err != nil {
				h.t.Fatalf("put %s: %v", k, sr.Items[i].Err)
			}
			ends[i] = PutEndItem{Key: k, Incarnation: sr.Items[i].Incarnation}
		}
		logOld(h, &PutEndBatch{V: PutEndBatchV1, Items: ends, Now: h.now})
		keys = keys[n:]
	}
}

// removeOld removes keys with the old build's v1 Removes, api.MaxBatchKeys
// to an entry, and returns the entries.
func removeOld(h *harness, keys []string) []oldEntry {
	h.t.Helper()
	var log []oldEntry
	for len(keys) > 0 {
		n := min(len(keys), api.MaxBatchKeys)
		log = append(log, logOld(h, &Remove{V: RemoveV1, Keys: keys[:n], Now: h.now}))
		keys = keys[n:]
	}
	return log
}

func keyRange(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s/%06d", prefix, i))
	}
	return out
}

// TestUpgradeFrom110SnapshotAndOldLog: a cluster ran the old build with
// --registry-capacity 60000 and holds more tasks than the default
// capacity. Its 1.1.0 snapshot and the log after it, read by this build:
// without the old capacity the snapshot is refused by name and nothing
// changes; the snapshot's task count (all the file can tell) restores
// but replays differently; with the old capacity given once (Legacy)
// every replayed entry answers as the old build answered, the removes it
// acknowledged are applied, and the state is the old build's. A snapshot
// this build takes before its first Settings entry carries the capacity;
// the first Settings entry makes it replicated on every node, and a node
// given another value is told.
func TestUpgradeFrom110SnapshotAndOldLog(t *testing.T) {
	const oldCapacity = DefaultRegistryCapacity + 10_000
	gone := keyRange("gone", 0, DefaultRegistryCapacity+5_000)
	live := keyRange("live", 0, 6_000)

	old := oldBuild(t, oldCapacity)
	logOld(old, &EpochBegin{V: EpochBeginV1, Term: 2, LeaderID: "m1", LeaderAddr: "m1:7101", ClusterID: 0x01d, Now: old.now})
	logOld(old, &MountLocalDisk{V: MountLocalDiskV1, ClientID: "h1", Segment: "seg-a", Pool: "p", Capacity: 1 << 40, Capabilities: tombstoneCaps, Endpoint: "h1:7301", Now: old.now})
	putOld(old, "seg-a", append(append([]string(nil), gone...), live...))
	if n := refusedKeys(answers(removeOld(old, gone))); n != 0 {
		t.Fatalf("the old build refused %d removes under its capacity", n)
	}
	snap := snapshot110(t, old.f)
	// The log after the snapshot: 4,000 removes the old build acknowledged
	// (59,000 tasks), then 2,000 of which it acknowledged the first 1,000
	// and refused the rest for a full registry.
	tail := removeOld(old, live[:4_000])
	tail = append(tail, removeOld(old, live[4_000:6_000])...)
	if n := refusedKeys(answers(tail)); n != 1_000 {
		t.Fatalf("the old build refused %d removes of its log after the snapshot, want 1000", n)
	}
	want := snapshot110(t, old.f)

	// This build without the old capacity: refused, naming the tasks.
	f := New(Config{})
	err := f.Restore(bytes.NewReader(snap))
	var lc *LegacyCapacityError
	if !errors.As(err, &lc) || lc.Tasks != len(gone) || lc.Capacity != DefaultRegistryCapacity || lc.Format != "1.1.0" {
		t.Fatalf("restore of %d tasks under the default capacity: %v", len(gone), err)
	}
	if s := f.Stats(); s.Objects != 0 || s.PendingTasks != 0 || s.AppliedIndex != 0 {
		t.Fatalf("a refused restore changed the state: %+v", s)
	}

	// The file's task count is only a lower bound of the old capacity: it
	// restores, but the replay refuses removes the old build acknowledged.
	lower := New(Config{Legacy: api.Settings{RegistryCapacity: lc.Tasks}})
	if err := lower.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if n := refusedKeys(replay(t, lower, tail)); n == 1_000 {
		t.Fatal("a capacity of the snapshot's task count replayed the old log as the old build did")
	}

	// With the old build's capacity: every answer and the state are its.
	nb := New(Config{Legacy: api.Settings{RegistryCapacity: oldCapacity}})
	if err := nb.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("restore under the old build's capacity: %v", err)
	}
	if got := replay(t, nb, tail); !reflect.DeepEqual(got, answers(tail)) {
		t.Fatalf("the replay answered differently from the old build (%d refused, want 1000)", refusedKeys(got))
	}
	if got := snapshot110(t, nb); !bytes.Equal(got, want) {
		t.Fatal("the replayed state differs from the old build's")
	}
	if s, set := nb.Settings(); set || s.RegistryCapacity != oldCapacity {
		t.Fatalf("settings after the replay: %+v set=%v, want the legacy capacity %d, not replicated", s, set, oldCapacity)
	}

	// This build's own snapshot carries the legacy capacity: a node that
	// restores it (a restart, an InstallSnapshot) needs no flag.
	mid := snapshotBytes(t, nb)
	carried := New(Config{})
	if err := carried.Restore(bytes.NewReader(mid)); err != nil {
		t.Fatal(err)
	}
	if l, ok := carried.LegacySettings(); !ok || l.RegistryCapacity != oldCapacity {
		t.Fatalf("legacy settings restored from this build's snapshot: %+v %v", l, ok)
	}
	if !bytes.Equal(snapshotBytes(t, carried), mid) {
		t.Fatal("the restored snapshot writes different bytes")
	}

	// The leader's first Settings entry carries its legacy settings: they
	// become replicated, and a node that applied under others is told and
	// ends with the same settings.
	other := New(Config{Legacy: api.Settings{RegistryCapacity: oldCapacity - 500}})
	if err := other.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	replay(t, other, tail)
	leg, _ := nb.LegacySettings()
	first, err := Encode(&Settings{Settings: api.Settings{SessionTTLMillis: 60_000}, Legacy: &leg, Now: old.now + 10})
	if err != nil {
		t.Fatal(err)
	}
	index := old.index + 1
	for _, g := range []*FSM{nb, carried, other} {
		res, err := g.Apply(index, 3, first)
		if err != nil {
			t.Fatal(err)
		}
		r := res.(*SettingsResult)
		if r.Err != nil || r.Settings.RegistryCapacity != oldCapacity || r.Settings.SessionTTLMillis != 60_000 {
			t.Fatalf("first Settings entry: %+v", r)
		}
		if wantDiff := g == other; r.LegacyDiffers != wantDiff || (wantDiff && r.OwnLegacy.RegistryCapacity != oldCapacity-500) {
			t.Fatalf("first Settings entry on a node with legacy %v: differs=%v own=%+v", wantDiff, r.LegacyDiffers, r.OwnLegacy)
		}
		if s, set := g.Settings(); !set || s.RegistryCapacity != oldCapacity {
			t.Fatalf("settings after the first Settings entry: %+v set=%v", s, set)
		}
		if _, ok := g.LegacySettings(); ok {
			t.Fatal("legacy settings still in force after a Settings entry")
		}
	}
	if !bytes.Equal(snapshotBytes(t, nb), snapshotBytes(t, carried)) {
		t.Fatal("a node restored from this build's snapshot differs from one that replayed the old log")
	}
}

// TestUpgradeFrom100SnapshotAndOldLog: the 1.0.0 golden file, written by
// a build with --registry-capacity 3, and the old build's log after it:
// a remount with tombstones, four puts and one Remove of five keys, of
// which the old build acknowledged three and refused two. This build
// under the default capacity would acknowledge all five; given the old
// capacity it answers and ends as the old build did.
func TestUpgradeFrom100SnapshotAndOldLog(t *testing.T) {
	data, err := os.ReadFile("../snapshot/testdata/v100.snap")
	if err != nil {
		t.Fatal(err)
	}
	const oldCapacity = 3
	old := oldBuild(t, 0)
	if err := old.f.RestoreWith(bytes.NewReader(data), api.Settings{RegistryCapacity: oldCapacity}); err != nil {
		t.Fatal(err)
	}
	old.index = old.f.Stats().AppliedIndex
	log := []oldEntry{logOld(old, &MountLocalDisk{V: MountLocalDiskV1, ClientID: "holder-1", Segment: "seg-a", Pool: "ssd", Capacity: 1 << 40, Capabilities: tombstoneCaps, Endpoint: "10.0.0.1:7001", Now: old.now})}
	keys := keyRange("new", 0, 4)
	for _, k := range keys {
		s := logOld(old, &PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: k, Size: 1, Replicas: localReplicas("seg-a")}, Now: old.now})
		log = append(log, s, logOld(old, &PutEnd{V: PutEndV1, Key: k, Incarnation: s.res.(*PutStartResult).Incarnation, Now: old.now}))
	}
	log = append(log, removeOld(old, append([]string{"old/one"}, keys...))...)
	if n := refusedKeys(answers(log)); n != 2 {
		t.Fatalf("the old build refused %d of 5 removes under capacity 3, want 2", n)
	}
	want := snapshot110(t, old.f)

	for _, c := range []struct {
		legacy  int
		refused int
	}{{0, 0}, {oldCapacity, 2}} {
		f := New(Config{Legacy: api.Settings{RegistryCapacity: c.legacy}})
		if err := f.Restore(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		got := replay(t, f, log)
		if n := refusedKeys(got); n != c.refused {
			t.Fatalf("legacy capacity %d: %d removes refused, want %d", c.legacy, n, c.refused)
		}
		if c.legacy != oldCapacity {
			continue
		}
		if !reflect.DeepEqual(got, answers(log)) {
			t.Fatal("the replay answered differently from the old build")
		}
		if !bytes.Equal(snapshot110(t, f), want) {
			t.Fatal("the replayed state differs from the old build's")
		}
	}
}

// TestSettingsLegacyIsAV2Field: a v1 Settings body carrying legacy
// settings is refused, never read with them dropped, and legacy settings
// outside the bounds are refused by Apply with nothing changed.
func TestSettingsLegacyIsAV2Field(t *testing.T) {
	leg := api.Settings{RegistryCapacity: 7}
	if _, err := Encode(&Settings{V: SettingsV1, Legacy: &leg}); !errors.Is(err, ErrCorruptCommand) {
		t.Fatalf("v1 Settings with legacy encoded: %v", err)
	}
	h := newHarness(t, 0)
	bad := api.Settings{RegistryCapacity: -1}
	r := h.apply(&Settings{Settings: api.Settings{MaxSessions: 5}, Legacy: &bad, Now: h.now}).(*SettingsResult)
	if codeOf(r.Err) != api.CodeInvalidParams {
		t.Fatalf("legacy capacity -1: %+v", r)
	}
	if _, set := h.f.Settings(); set {
		t.Fatal("a refused Settings entry set the settings")
	}
}
