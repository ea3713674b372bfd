package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"sexton/api"
	"sexton/snapshot"
)

// harness drives an FSM the way a leader would: it numbers entries, encodes
// commands and fails the test on a decode error.
type harness struct {
	t       testing.TB
	f       *FSM
	index   uint64
	term    uint64
	now     int64
	cluster uint64
	// woke renders the Wake of the last entry applied (fmtWake).
	woke string
}

func newHarness(t testing.TB, capacity int) *harness {
	return &harness{t: t, f: newWithCapacity(capacity), term: 1, now: 1000}
}

// newMounted is a harness whose FSM has begun an epoch of cluster 7 and
// mounted segment s1 for client c1, with tombstones: where most tests
// start.
func newMounted(t testing.TB, capacity int) *harness {
	h, _ := newMountedEpoch(t, capacity)
	return h
}

// newMountedEpoch is newMounted with the mount epoch of s1.
func newMountedEpoch(t testing.TB, capacity int) (*harness, uint64) {
	h := newHarness(t, capacity)
	h.epoch(7)
	return h, h.mustMount("c1", "s1", tombstoneCaps...)
}

// next encodes cmd for the next index and moves the index and the
// leader's clock on.
func (h *harness) next(cmd Command) []byte {
	h.t.Helper()
	data, err := Encode(cmd)
	if err != nil {
		h.t.Fatalf("encode %T: %v", cmd, err)
	}
	h.index++
	h.now++
	return data
}

// apply encodes and applies cmd at the next index.
func (h *harness) apply(cmd Command) any {
	h.t.Helper()
	data := h.next(cmd)
	res, wake, err := h.f.ApplyWake(h.index, h.term, data)
	if err != nil {
		h.t.Fatalf("apply %T: %v", cmd, err)
	}
	h.woke = fmtWake(wake)
	return res
}

func (h *harness) epoch(cluster uint64) *EpochBeginResult {
	h.t.Helper()
	if h.cluster == 0 {
		h.cluster = cluster
	}
	return h.apply(&EpochBegin{Term: h.term, LeaderID: "m1", LeaderAddr: "m1:7000", ClusterID: cluster, Now: h.now}).(*EpochBeginResult)
}

var tombstoneCaps = []api.Capability{api.CapObjectTombstoneV1}

func (h *harness) mount(client string, seg api.SegmentID, caps ...api.Capability) *MountResult {
	h.t.Helper()
	return h.apply(&MountLocalDisk{ClientID: client, Segment: seg, Pool: "p", Capacity: 1 << 30, Capabilities: caps, Endpoint: client + ":9000", Now: h.now}).(*MountResult)
}

// mustMount mounts and returns the epoch, failing on any error.
func (h *harness) mustMount(client string, seg api.SegmentID, caps ...api.Capability) uint64 {
	h.t.Helper()
	r := h.mount(client, seg, caps...)
	if r.Err != nil {
		h.t.Fatalf("mount %s on %s: %v", client, seg, r.Err)
	}
	return r.MountEpoch
}

func localReplicas(segs ...api.SegmentID) []api.ReplicaDescriptor {
	rs := make([]api.ReplicaDescriptor, len(segs))
	for i, s := range segs {
		rs[i] = api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: s, Pool: "p"}
	}
	return rs
}

func (h *harness) putStart(key string, ifAbsent bool, segs ...api.SegmentID) *PutStartResult {
	h.t.Helper()
	return h.apply(&PutStart{PutStartItem: PutStartItem{Key: key, Size: 10, Replicas: localReplicas(segs...), PutID: "put-" + key, IfAbsent: ifAbsent}, Now: h.now}).(*PutStartResult)
}

// put writes a COMPLETE incarnation and returns it.
func (h *harness) put(key string, segs ...api.SegmentID) api.ObjectIncarnation {
	h.t.Helper()
	s := h.putStart(key, false, segs...)
	if s.Err != nil {
		h.t.Fatalf("put start %q: %v", key, s.Err)
	}
	e := h.putEnd(key, s.Incarnation)
	if e.Err != nil {
		h.t.Fatalf("put end %q: %v", key, e.Err)
	}
	return s.Incarnation
}

func (h *harness) putEnd(key string, inc api.ObjectIncarnation) *PutEndResult {
	h.t.Helper()
	return h.apply(&PutEnd{Key: key, Incarnation: inc, Now: h.now}).(*PutEndResult)
}

func (h *harness) revoke(key string, inc api.ObjectIncarnation) *PutEndResult {
	h.t.Helper()
	return h.apply(&PutRevoke{Key: key, Incarnation: inc, Now: h.now}).(*PutEndResult)
}

func (h *harness) remove(keys ...string) *RemoveResult {
	h.t.Helper()
	return h.apply(&Remove{Keys: keys, Now: h.now}).(*RemoveResult)
}

func (h *harness) ack(seg api.SegmentID, epoch uint64, results ...api.TaskResult) *AckResult {
	h.t.Helper()
	return h.apply(&LocalDeleteAck{Segment: seg, Epoch: epoch, Results: results, Now: h.now}).(*AckResult)
}

// ackAll acks tasks with one outcome.
func (h *harness) ackAll(seg api.SegmentID, epoch uint64, o api.AckOutcome, tasks []api.LocalDeleteTask) *AckResult {
	h.t.Helper()
	rs := make([]api.TaskResult, len(tasks))
	for i, t := range tasks {
		rs[i] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: o}
	}
	return h.ack(seg, epoch, rs...)
}

func (h *harness) fetch(seg api.SegmentID, epoch uint64) []api.LocalDeleteTask {
	h.t.Helper()
	ts, _, err := h.f.FetchTasks(seg, epoch, 0)
	if err != nil {
		h.t.Fatalf("fetch %s@%d: %v", seg, epoch, err)
	}
	return ts
}

// snapshotBytes writes a snapshot of f.
func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	v := f.Snapshot()
	defer v.Release()
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatalf("snapshot write: %v", err)
	}
	return buf.Bytes()
}

// snapshot110 writes f's state as a 1.1.0 snapshot, as a master before
// 1.2.0 would have (f must hold nothing 1.1.0 cannot carry).
func snapshot110(t testing.TB, f *FSM) []byte {
	t.Helper()
	v := f.Snapshot()
	defer v.Release()
	v.state.Settings, v.state.Legacy, v.state.GrantKey, v.state.SessionClock = nil, nil, nil, 0
	var buf bytes.Buffer
	if _, err := v.writeFormat(&buf, snapshot.Format110); err != nil {
		t.Fatalf("1.1.0 snapshot write: %v", err)
	}
	return buf.Bytes()
}

// newWithCapacity returns an FSM whose replicated registry capacity is n
// (≤ 0 or the default: a fresh FSM), as if a Settings entry had set it
// before the first entry of the test's log. Production sets it only
// through the log.
func newWithCapacity(n int) *FSM {
	f := New(Config{})
	if n > 0 && n != DefaultRegistryCapacity {
		f.st.settings.RegistryCapacity, f.st.settingsSet = n, true
		f.st.reg.capacity = n
	}
	return f
}

// restored returns a new FSM restored from f's snapshot, checking that it
// writes the same bytes back.
func restored(t testing.TB, f *FSM) *FSM {
	t.Helper()
	b := snapshotBytes(t, f)
	g := New(Config{})
	if err := g.Restore(bytes.NewReader(b)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if b2 := snapshotBytes(t, g); !bytes.Equal(b, b2) {
		t.Fatalf("restored state writes different bytes (%d vs %d)", len(b), len(b2))
	}
	return g
}

func taskKeys(ts []api.LocalDeleteTask) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s/%s@%d", t.Segment, t.Key, t.Incarnation.Low))
	}
	return strings.Join(parts, " ")
}

func codeOf(e *api.Error) api.Code {
	if e == nil {
		return ""
	}
	return e.Code
}

func writeView(t testing.TB, v *View) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatalf("snapshot write: %v", err)
	}
	return buf.Bytes()
}

// putRemoved puts n keys (k000, k001, ...) on seg and removes them in one
// entry: n delete tasks for seg.
func (h *harness) putRemoved(seg api.SegmentID, n int) {
	h.t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
		h.put(keys[i], seg)
	}
	h.remove(keys...)
}
