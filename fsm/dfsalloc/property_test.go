package dfsalloc

import (
	"bytes"
	"cmp"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"sexton/api"
)

type placeKey struct {
	unit uint64
	off  int64
}

type liveEntry struct {
	key     string
	desc    api.DFSDescriptor
	pending bool
}

type freedRange struct {
	unit           uint64
	off, len, till int64
}

// allocModel drives an allocator and a twin with the same calls and keeps
// what the caller knows: which entries are live, which shard ranges are
// still deferred, which bucket ranges were ever handed out.
type allocModel struct {
	cfg       Config
	a, twin   Allocator
	now       int64
	live      map[placeKey]liveEntry
	freed     []freedRange        // shard: not reusable before till
	handed    map[uint64][]extent // bucket: every range ever handed out
	maxBucket uint64              // highest bucket id seen
	gone      map[uint64]bool     // buckets confirmed deleted
	keys      []string
}

func newAllocModel(t *rapid.T) *allocModel {
	kind := rapid.SampledFrom([]string{KindShard, KindBucket}).Draw(t, "kind")
	var cfg Config
	if kind == KindBucket {
		cfg = bucketConfig(int64(rapid.IntRange(1, 8).Draw(t, "units"))*unit4k, rapid.IntRange(1, 4).Draw(t, "max"))
	} else {
		cfg = shardConfig(rapid.IntRange(1, 3).Draw(t, "shards"), int64(rapid.IntRange(1, 12).Draw(t, "units"))*unit4k)
	}
	cfg.EvictionEnabled = rapid.IntRange(0, 3).Draw(t, "evict") > 0
	m := &allocModel{
		cfg: cfg, now: t0, live: map[placeKey]liveEntry{}, handed: map[uint64][]extent{}, gone: map[uint64]bool{},
		keys: []string{"k0", "k1", "k2", "k3", "k4", "k5"},
	}
	var err error
	if m.a, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	m.twin, _ = New(cfg)
	return m
}

func (m *allocModel) liveKeys() []placeKey {
	ks := make([]placeKey, 0, len(m.live))
	for k := range m.live {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(x, y placeKey) int {
		if c := cmp.Compare(x.unit, y.unit); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	})
	return ks
}

func overlaps(aOff, aLen, bOff, bLen int64) bool { return aOff < bOff+bLen && bOff < aOff+aLen }

func (m *allocModel) allocate(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "n")
	capacity := m.cfg.UnitCapacity()
	batch := make([]Request, n)
	for i := range batch {
		// Mostly small values, so units fill up and eviction has work;
		// sometimes anything up to a whole unit.
		small := rapid.SampledFrom([]int64{0, 1, unit4k - 1, unit4k, unit4k + 1, 3 * unit4k})
		size := rapid.OneOf(small, small, small, rapid.Int64Range(0, capacity)).Draw(t, "size")
		batch[i] = Request{Key: rapid.SampledFrom(m.keys).Draw(t, "key"), Size: size}
	}
	m.allocateBatch(t, batch)
}

func (m *allocModel) allocateOne(t *rapid.T, size int64) {
	m.allocateBatch(t, []Request{{Key: rapid.SampledFrom(m.keys).Draw(t, "key"), Size: size}})
}

func (m *allocModel) allocateBatch(t *rapid.T, batch []Request) {
	capacity := m.cfg.UnitCapacity()
	cursors := map[uint64]int64{}
	if m.cfg.Allocator == KindBucket {
		for _, u := range m.a.Stats().Units {
			cursors[u.Unit] = u.Used
		}
	}
	ds, err := m.a.Allocate(batch, m.now)
	ds2, err2 := m.twin.Allocate(batch, m.now)
	if (err == nil) != (err2 == nil) || !reflect.DeepEqual(ds, ds2) {
		t.Fatalf("twins diverge: %v %v / %v %v", ds, err, ds2, err2)
	}
	if err != nil {
		if ds != nil {
			t.Fatalf("failed batch returned %v", ds)
		}
		return
	}
	for _, f := range m.freed {
		if f.till <= m.now {
			continue
		}
		for _, d := range ds {
			if d.UnitID == f.unit && overlaps(d.Offset, d.AlignedSize, f.off, f.len) {
				t.Fatalf("%+v reuses a range freed until %d at %d", d, f.till, m.now)
			}
		}
	}
	for i, d := range ds {
		if d.AlignedSize%m.cfg.Alignment != 0 || d.Offset%m.cfg.Alignment != 0 || d.AlignedSize < d.Size || d.Offset+d.AlignedSize > capacity {
			t.Fatalf("bad descriptor %+v", d)
		}
		for _, l := range m.live {
			if l.desc.UnitID == d.UnitID && overlaps(d.Offset, d.AlignedSize, l.desc.Offset, l.desc.AlignedSize) {
				t.Fatalf("%+v overlaps live %+v", d, l)
			}
		}
		if m.cfg.Allocator == KindBucket {
			if m.gone[d.UnitID] {
				t.Fatalf("%+v in a deleted bucket", d)
			}
			if cur, known := cursors[d.UnitID]; known && d.Offset < cur {
				t.Fatalf("%+v behind the cursor %d of its bucket", d, cur)
			} else if !known && d.UnitID <= m.maxBucket && len(m.handed[d.UnitID]) == 0 {
				t.Fatalf("new bucket %d not above every earlier id %d", d.UnitID, m.maxBucket)
			}
			for _, h := range m.handed[d.UnitID] {
				if overlaps(d.Offset, d.AlignedSize, h.off, h.len) {
					t.Fatalf("%+v reuses bucket range %+v", d, h)
				}
			}
			m.handed[d.UnitID] = append(m.handed[d.UnitID], extent{d.Offset, d.AlignedSize})
			m.maxBucket = max(m.maxBucket, d.UnitID)
		}
		m.live[placeKey{d.UnitID, d.Offset}] = liveEntry{key: batch[i].Key, desc: d, pending: true}
	}
}

// put is a whole put: allocate, then commit everything still pending, as a
// PutStart followed by its PutEnd; it keeps the state full enough for
// eviction to have work.
func (m *allocModel) put(t *rapid.T) {
	for n := rapid.IntRange(1, 6).Draw(t, "puts"); n > 0; n-- {
		m.allocate(t)
	}
	for _, k := range m.liveKeys() {
		if l := m.live[k]; l.pending {
			m.both(t, "commit", func(a Allocator) error { return a.Commit(l.key, l.desc, m.now) })
			l.pending = false
			m.live[k] = l
		}
	}
}

func (m *allocModel) pick(t *rapid.T, want func(liveEntry) bool) (placeKey, liveEntry, bool) {
	var ks []placeKey
	for _, k := range m.liveKeys() {
		if want(m.live[k]) {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return placeKey{}, liveEntry{}, false
	}
	k := rapid.SampledFrom(ks).Draw(t, "entry")
	return k, m.live[k], true
}

func (m *allocModel) both(t *rapid.T, what string, f func(Allocator) error) {
	err, err2 := f(m.a), f(m.twin)
	if err != nil || err2 != nil {
		t.Fatalf("%s: %v / %v", what, err, err2)
	}
}

func (m *allocModel) commit(t *rapid.T) {
	k, l, ok := m.pick(t, func(l liveEntry) bool { return l.pending })
	if !ok {
		return
	}
	m.both(t, "commit", func(a Allocator) error { return a.Commit(l.key, l.desc, m.now) })
	l.pending = false
	m.live[k] = l
}

func (m *allocModel) free(t *rapid.T) {
	k, l, ok := m.pick(t, func(liveEntry) bool { return true })
	if !ok {
		return
	}
	m.both(t, "free", func(a Allocator) error { return a.Free(l.key, l.desc, m.now) })
	m.drop(k, l)
}

// drop forgets a live entry; a shard range stays protected for the deferral.
func (m *allocModel) drop(k placeKey, l liveEntry) {
	delete(m.live, k)
	if m.cfg.Allocator == KindShard {
		m.freed = append(m.freed, freedRange{unit: k.unit, off: k.off, len: l.desc.AlignedSize, till: m.now + m.cfg.deferNanos()})
	}
}

func (m *allocModel) touch(t *rapid.T) {
	_, l, ok := m.pick(t, func(liveEntry) bool { return true })
	if !ok {
		return
	}
	m.both(t, "touch", func(a Allocator) error { return a.Touch(l.key, l.desc, m.now) })
}

func (m *allocModel) evict(t *rapid.T) {
	pickKey := func(label string) string {
		if rapid.Bool().Draw(t, label+"Any") {
			return rapid.SampledFrom(m.keys).Draw(t, label)
		}
		return "none"
	}
	leasedKey, refusedKey := pickKey("leased"), pickKey("refused")
	leased := func(k string) bool { return k == leasedKey }
	check := func(r EntryRef) bool { return r.Key != refusedKey }
	plan := m.a.PlanEviction(m.now, leased)
	if plan2 := m.twin.PlanEviction(m.now, leased); !reflect.DeepEqual(plan, plan2) {
		t.Fatalf("twins plan differently: %+v / %+v", plan, plan2)
	}
	// A change between planning and applying, which the apply must notice.
	switch rapid.IntRange(0, 4).Draw(t, "interleave") {
	case 1:
		m.allocate(t)
	case 2:
		m.allocateOne(t, rapid.Int64Range(0, unit4k).Draw(t, "size")) // most likely into the open bucket
	case 3:
		m.touch(t)
	case 4:
		m.free(t)
	}
	ev, err := m.a.ApplyEviction(plan, m.now, check)
	ev2, err2 := m.twin.ApplyEviction(plan, m.now, check)
	if err != nil || err2 != nil || !reflect.DeepEqual(ev, ev2) {
		t.Fatalf("twins evict differently: %v %v / %v %v", ev, err, ev2, err2)
	}
	units := map[uint64]bool{}
	for _, r := range ev {
		k := placeKey{r.Desc.UnitID, r.Desc.Offset}
		l, ok := m.live[k]
		switch {
		case !ok || l.desc != r.Desc || l.key != r.Key:
			t.Fatalf("evicted %+v is not a live entry", r)
		case l.pending:
			t.Fatalf("evicted pending %+v", r)
		case r.Key == leasedKey || r.Key == refusedKey:
			t.Fatalf("evicted leased or refused %+v", r)
		}
		m.drop(k, l)
		units[r.Desc.UnitID] = true
	}
	if m.cfg.Allocator == KindBucket {
		for _, l := range m.live {
			if units[l.desc.UnitID] {
				t.Fatalf("bucket %d partly evicted: %+v left", l.desc.UnitID, l)
			}
		}
	}
}

func (m *allocModel) fileOp(t *rapid.T) {
	ops := m.a.PendingFileOps()
	if !reflect.DeepEqual(ops, m.twin.PendingFileOps()) {
		t.Fatal("twins disagree on file ops")
	}
	if len(ops) == 0 {
		return
	}
	op := rapid.SampledFrom(ops).Draw(t, "op")
	switch {
	case op.Kind == FileCreate:
		m.both(t, "created", func(a Allocator) error { return a.ConfirmFileCreated(op.Unit) })
	case rapid.Bool().Draw(t, "deleteOK"):
		m.both(t, "deleted", func(a Allocator) error { return a.ConfirmFileDeleted(op.Unit) })
		m.gone[op.Unit] = true
	default:
		m.both(t, "delete failed", func(a Allocator) error { return a.FileDeleteFailed(op.Unit, m.now) })
	}
}

func (m *allocModel) lost(t *rapid.T) {
	units := m.a.Stats().Units
	if len(units) == 0 {
		return
	}
	u := rapid.SampledFrom(units).Draw(t, "unit").Unit
	lost, err := m.a.MarkLost(u, m.now)
	lost2, err2 := m.twin.MarkLost(u, m.now)
	if err != nil || err2 != nil || !reflect.DeepEqual(lost, lost2) {
		t.Fatalf("MarkLost twins: %v %v / %v %v", lost, err, lost2, err2)
	}
	var want []EntryRef
	for _, k := range m.liveKeys() {
		if k.unit == u {
			want = append(want, EntryRef{Key: m.live[k].key, Desc: m.live[k].desc})
		}
	}
	if len(lost)+len(want) > 0 && !reflect.DeepEqual(lost, want) {
		t.Fatalf("MarkLost(%d) = %+v, want every live entry %+v", u, lost, want)
	}
	for _, r := range lost {
		k := placeKey{r.Desc.UnitID, r.Desc.Offset}
		m.drop(k, m.live[k])
	}
}

func (m *allocModel) setMax(t *rapid.T) {
	if m.cfg.Allocator != KindBucket {
		return
	}
	n := rapid.IntRange(1, 4).Draw(t, "max")
	m.both(t, "set max", func(a Allocator) error { return a.SetMaxBuckets(n) })
}

// check runs after every action: the twins write the same bytes, the
// records restore to an allocator writing the same bytes again (which then
// replaces the original, so later actions run on restored state), and the
// allocator's live set is the model's.
func (m *allocModel) check(t *rapid.T) {
	got, twin := encodeAll(t, m.a), encodeAll(t, m.twin)
	if !bytes.Equal(got, twin) {
		t.Fatal("twins' records differ")
	}
	var recs []Record
	for _, r := range m.a.Records() {
		raw, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(raw)
		if err != nil {
			t.Fatalf("DecodeRecord of our own record: %v", err)
		}
		recs = append(recs, back)
	}
	restored, _ := New(m.cfg)
	if err := restored.Restore(recs); err != nil {
		t.Fatalf("Restore of our own records: %v", err)
	}
	if !bytes.Equal(encodeAll(t, restored), got) {
		t.Fatal("Records→Restore→Records is not byte-identical")
	}
	m.a = restored
	s := m.a.Stats()
	if s.LiveEntries != len(m.live) {
		t.Fatalf("allocator has %d live entries, model %d", s.LiveEntries, len(m.live))
	}
	if m.cfg.Allocator == KindBucket && s.ChargedBuckets > 4 {
		t.Fatalf("%d buckets charged, above any maximum used", s.ChargedBuckets)
	}
}

func encodeAll(t *rapid.T, a Allocator) []byte {
	var buf bytes.Buffer
	for _, r := range a.Records() {
		raw, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(raw)
	}
	return buf.Bytes()
}

// TestPropertyNoOverlapNoReuseDeterministicRecords runs random sequences of
// puts, commits, frees (revoke, remove, overwrite), touches, eviction plans
// applied after interleaved changes, file confirmations and failures, lost
// units, maximum changes and time steps against both allocators, checking
// after every step: no descriptor overlaps a live entry or a shard range
// still deferred, no bucket range or id is handed out twice, two allocators
// given the same calls write the same record bytes, and Records → Restore →
// Records is byte-identical (the run continues on the restored allocator).
// Each sequence has 50–150 steps; -rapid.checks=500 explores deeper.
func TestPropertyNoOverlapNoReuseDeterministicRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newAllocModel(t)
		actions := map[string]func(*rapid.T){
			"allocate": m.allocate,
			"put":      m.put,
			"commit":   m.commit,
			"free":     m.free,
			"touch":    m.touch,
			"evict":    m.evict,
			"fileOp":   m.fileOp,
			"lost":     m.lost,
			"setMax":   m.setMax,
			"advance": func(t *rapid.T) {
				m.now += rapid.Int64Range(0, 40).Draw(t, "seconds") * sec
				kept := m.freed[:0]
				for _, f := range m.freed {
					if f.till > m.now {
						kept = append(kept, f)
					}
				}
				m.freed = kept
			},
		}
		names := make([]string, 0, len(actions)+1)
		for name := range actions {
			names = append(names, name)
		}
		slices.Sort(names)
		names = append(names, "put") // puts twice as often: units fill, eviction has work
		for steps := rapid.IntRange(50, 150).Draw(t, "steps"); steps > 0; steps-- {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			m.check(t)
		}
	})
}
