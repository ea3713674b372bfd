package dfsio_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
	"sexton/rebuild"
)

// plStep is one step of the DFS put and removal paths as the client and
// the leader run them against the root.
type plStep struct {
	name string
	run  func(p *dfsio.Posix) error
	// ack: the put of key@inc is acknowledged (PutEnd applied) once this
	// step returned; kill: a removal record of key@inc (through or exact)
	// is written once it returned, so its range may be freed (DFSMarked).
	ack, kill bool
	through   bool
	key       string
	inc       api.ObjectIncarnation
}

func plInc(low uint64) api.ObjectIncarnation { return api.ObjectIncarnation{High: 1, Low: low} }

func plDesc(off int64, size int) api.DFSDescriptor {
	return api.DFSDescriptor{Allocator: dfsalloc.KindBucket, Path: dfsalloc.BucketPath(1), UnitID: 1, Offset: off, Size: int64(size), AlignedSize: 4096}
}

func plValue(key string, low uint64, n int) []byte {
	unit := fmt.Sprintf("%s@%d;", key, low)
	b := bytes.Repeat([]byte(unit), n/len(unit)+1)
	return b[:n]
}

// plScenario is the put path (pwrite, fdatasync under MOONCAKE_DFS_FSYNC,
// record append, PutEnd) of four puts, an overwrite and a reuse of a
// freed range, and the removal path (removal record appended and
// fdatasynced, then DFSMarked frees the range) of an overwritten
// incarnation and two Removes. values holds every value written.
func plScenario(values map[string][]byte) []plStep {
	var steps []plStep
	put := func(key string, low uint64, off int64, n int) {
		v := plValue(key, low, n)
		values[fmt.Sprintf("%s@%d", key, low)] = v
		d := plDesc(off, n)
		steps = append(steps,
			plStep{name: fmt.Sprintf("pwrite %s@%d", key, low), run: func(p *dfsio.Posix) error { return p.WriteAt(d, v) }},
			plStep{name: fmt.Sprintf("put record %s@%d", key, low), run: func(p *dfsio.Posix) error {
				return p.AppendPutRecord(key, "", plInc(low), d, v)
			}},
			plStep{name: fmt.Sprintf("PutEnd %s@%d", key, low), run: func(*dfsio.Posix) error { return nil }, ack: true, key: key, inc: plInc(low)})
	}
	remove := func(key string, low uint64, off int64, n int, through bool) {
		d := plDesc(off, n)
		steps = append(steps,
			plStep{name: fmt.Sprintf("removal record %s@%d", key, low), run: func(p *dfsio.Posix) error {
				return p.AppendRecords([]dfsio.RangeRecord{dfsio.RemovedRecord(key, plInc(low), d, through)}, true)
			}, kill: true, through: through, key: key, inc: plInc(low)},
			plStep{name: fmt.Sprintf("DFSMarked %s@%d", key, low), run: func(*dfsio.Posix) error { return nil }})
	}
	put("a", 100, 0, 3000)
	put("b", 110, 4096, 2500)
	put("a", 120, 8192, 3500) // overwrite: a@100's exact removal record follows
	remove("a", 100, 0, 3000, false)
	remove("b", 110, 4096, 2500, true) // Remove(b)
	put("c", 130, 4096, 1000)          // reuses b's freed range
	put("d", 140, 0, 2000)             // reuses a@100's freed range
	remove("d", 140, 0, 2000, true)    // Remove(d)
	return steps
}

// plImages are the variants of a file a power cut can leave: the bytes an
// fdatasync made durable, with the unsynced changes since lost, kept,
// torn (the first half of each changed run written) or zeroed (blocks the
// filesystem allocated but never wrote).
func plImages(durable, now []byte) map[string][]byte {
	out := map[string][]byte{"lost": durable, "kept": now}
	torn := slicesClone(durable, len(now))
	zero := slicesClone(durable, len(now))
	for i := 0; i < len(now); {
		if i < len(durable) && durable[i] == now[i] {
			i++
			continue
		}
		j := i
		for j < len(now) && (j >= len(durable) || durable[j] != now[j]) {
			j++
		}
		copy(torn[i:i+(j-i)/2], now[i:])
		for k := i; k < j; k++ {
			zero[k] = 0
		}
		i = j
	}
	out["torn"], out["zeroed"] = torn, zero
	return out
}

func slicesClone(b []byte, n int) []byte {
	out := make([]byte, max(n, len(b)))
	copy(out, b)
	return out
}

// TestDFSPowerLossKeepsAcknowledgedPutsAndRemovals cuts the power after
// every step of the DFS put and removal paths, and in the middle of each
// (a step's writes done, its fdatasync not), with the root's journal and
// bucket file left as a cut leaves them (unsynced changes lost, kept, torn
// or zeroed, independently per file), and runs the rebuild's merge on what
// survives. A Remove whose record was written never comes back, nor does
// an incarnation whose exact removal record was written; an adopted
// object reads back as the value written for its incarnation; an
// acknowledged put is never replaced by an older value; with
// MOONCAKE_DFS_FSYNC=1 the newest acknowledged put of every key not
// removed is adopted.
func TestDFSPowerLossKeepsAcknowledgedPutsAndRemovals(t *testing.T) {
	for _, fsync := range []bool{true, false} {
		t.Run(fmt.Sprintf("fsync=%v", fsync), func(t *testing.T) { testPowerLoss(t, fsync) })
	}
}

func testPowerLoss(t *testing.T, fsync bool) {
	values := map[string][]byte{}
	steps := plScenario(values)
	cuts, stale := 0, 0
	for done := 0; done <= len(steps); done++ {
		for _, midStep := range []bool{false, true} {
			if midStep && done == len(steps) {
				continue
			}
			root := t.TempDir()
			p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix, Fsync: fsync})
			if err != nil {
				t.Fatal(err)
			}
			bucket := filepath.Join(root, dfsalloc.BucketPath(1))
			journal := filepath.Join(root, dfsio.RecordsName)
			if err := p.Create(dfsalloc.BucketPath(1), 65536); err != nil {
				t.Fatal(err)
			}
			durable := map[string][]byte{}
			durable[bucket], _ = os.ReadFile(bucket)
			live := true
			dfsio.SetOnSync(func(path string) {
				if live {
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					durable[path] = b
				}
			})
			n := done
			if midStep {
				n++
			}
			for i, s := range steps[:n] {
				// The step in flight writes; the cut comes before its fdatasync.
				live = i < done
				if err := s.run(p); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
			}
			dfsio.SetOnSync(nil)
			at := "after " + steps[max(done-1, 0)].name
			if done == 0 {
				at = "at the start"
			}
			if midStep {
				at = "during " + steps[done].name
			}
			nowB, _ := os.ReadFile(bucket)
			nowJ, _ := os.ReadFile(journal)
			for jv, jimg := range plImages(durable[journal], nowJ) {
				for bv, bimg := range plImages(durable[bucket], nowB) {
					cuts++
					var inFlight *plStep
					if midStep {
						inFlight = &steps[done]
					}
					checkCut(t, fmt.Sprintf("cut %s (journal %s, bucket %s)", at, jv, bv), steps[:done], inFlight, values, jimg, bimg, fsync, &stale)
				}
			}
		}
	}
	t.Logf("%d cuts checked; %d adopted an overwritten value whose newer put record the cut lost", cuts, stale)
	if fsync && stale != 0 {
		t.Fatalf("with MOONCAKE_DFS_FSYNC=1 an overwritten value came back")
	}
}

// checkCut runs the merge on one surviving image and checks it against
// what the steps that returned before the cut promised.
func checkCut(t *testing.T, name string, returned []plStep, inFlight *plStep, values map[string][]byte, journal, bucket []byte, fsync bool, stale *int) {
	t.Helper()
	recs, _ := dfsio.DecodeRecords(journal)
	read := func(d api.DFSDescriptor) []byte {
		if d.Offset+d.Size > int64(len(bucket)) {
			return nil
		}
		return bucket[d.Offset : d.Offset+d.Size]
	}
	plan, err := rebuild.MergeWith(nil, rebuild.Options{DFS: &rebuild.DFSOptions{ClusterID: 7, Records: recs, Verify: func(r dfsio.RangeRecord) bool {
		b := read(r.Desc())
		return b != nil && dfsio.Checksum(b) == r.CRC
	}}})
	if err != nil {
		t.Fatalf("%s: merge: %v", name, err)
	}
	acked := map[string]api.ObjectIncarnation{}
	through := map[string]api.ObjectIncarnation{}
	exact := map[string]bool{}
	for _, s := range returned {
		switch {
		case s.ack:
			acked[s.key] = s.inc
		case s.kill && s.through:
			through[s.key] = s.inc
		case s.kill:
			exact[fmt.Sprintf("%s@%d", s.key, s.inc.Low)] = true
		}
	}
	adopted := map[string]api.ObjectIncarnation{}
	for _, o := range plan.Objects {
		id := fmt.Sprintf("%s@%d", o.Key, o.Incarnation.Low)
		adopted[o.Key] = o.Incarnation
		if th, ok := through[o.Key]; ok && !th.Less(o.Incarnation) {
			t.Fatalf("%s: %s adopted, but a Remove of %s@%d had written its record", name, id, o.Key, th.Low)
		}
		if exact[id] {
			t.Fatalf("%s: %s adopted, but its removal record had been written", name, id)
		}
		for _, r := range o.Replicas {
			if r.DFS == nil {
				continue
			}
			if got := read(*r.DFS); !bytes.Equal(got, values[id]) {
				t.Fatalf("%s: %s adopted with %d bytes that are not its value", name, id, len(got))
			}
		}
		if a, ok := acked[o.Key]; ok && o.Incarnation.Less(a) {
			// Without MOONCAKE_DFS_FSYNC the newer put's record may be lost
			// until the leader's fdatasynced removal record of the
			// overwritten incarnation follows it: the older value is then
			// all the journal knows (dfsio/DESIGN.md "Range records").
			if fsync || hasPut(recs, o.Key, a) {
				t.Fatalf("%s: %s adopted, older than the acknowledged %s@%d", name, id, o.Key, a.Low)
			}
			*stale++
		}
	}
	if !fsync {
		return
	}
	for key, a := range acked {
		if th, ok := through[key]; ok && !th.Less(a) {
			continue
		}
		if inFlight != nil && inFlight.kill && inFlight.through && inFlight.key == key {
			continue // the Remove was committed before its record: either outcome is right
		}
		if got, ok := adopted[key]; !ok || got.Less(a) {
			t.Fatalf("%s: the acknowledged %s@%d is not adopted (adopted %v %v, rejected %+v, dropped %+v)", name, key, a.Low, ok, got, plan.DFSRejected, plan.Dropped)
		}
	}
}

func hasPut(recs []dfsio.RangeRecord, key string, inc api.ObjectIncarnation) bool {
	for _, r := range recs {
		if r.Op == dfsio.RecordPut && r.Key == key && r.Inc == inc {
			return true
		}
	}
	return false
}
