package holder

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
)

// A power cut at any rename of the full-disk sequence (tombstones with the
// reserve released, floors, GC intents and targets, the puts after the
// space came back) loses nothing and revives nothing: after the restart
// the directory opens with no problem, every incarnation answered REMOVED
// stays dead and refused, and every acknowledged put reads back identical.
// The cut is the power-loss model's: only what was fsynced survives.
func TestFullDiskPowerCutLosesNothing(t *testing.T) {
	renames := fullDiskPowerCut(t, 0)
	if renames < 10 {
		t.Fatalf("only %d renames in the sequence: it did not run", renames)
	}
	for cut := 1; cut <= renames; cut++ {
		t.Run(fmt.Sprintf("cut-at-rename-%d", cut), func(t *testing.T) { fullDiskPowerCut(t, cut) })
	}
}

// fullDiskPowerCut runs the sequence on a 1.5 MiB model filesystem and cuts
// the power before the cut-th rename (0: never); it returns how many
// renames the sequence issued.
func fullDiskPowerCut(t *testing.T, cut int) int {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	ff := errorfs.NewFaulty(pl)
	ff.SetSpace(3<<19, 3<<19)
	d := &fullDisk{t: t, logs: &syncBuffer{}, incs: map[string]api.ObjectIncarnation{}, vals: map[string][]byte{}}
	d.s = openT(t, dir, fullDiskOptions(ff, d.logs))
	defer d.s.Close()
	d.fill()
	ff.TakeSpace(ff.FreeSpace())

	var renames atomic.Int64
	ff.Inject(errorfs.Rule{Op: errorfs.OpRename, Hook: func(string) {
		if int(renames.Add(1)) == cut {
			pl.Cut()
		}
	}})
	var tasks []api.LocalDeleteTask
	for i, k := range d.keys {
		if i%2 == 0 {
			tasks = append(tasks, api.LocalDeleteTask{ID: uint64(i + 1), Segment: d.s.SegmentID(), Key: k, Incarnation: d.incs[k]})
		}
	}
	results := d.s.BatchMarkDeleted(tasks)
	gc := testGCOptions()
	gc.Capacity = fullCapacity
	w := newGCWorker(d.s, gc, nil)
	for range 4 {
		w.pass()
	}
	stored := len(d.keys)
	for range 2 {
		_ = d.put() // acknowledged ones join d.keys
	}
	if cut == 0 {
		for _, r := range results {
			if r.Outcome != api.AckRemoved {
				t.Fatalf("task %d: %s, want REMOVED", r.TaskID, r.Outcome)
			}
		}
		if u := d.s.Usage(); u.TombstonedObjects != 0 || len(d.keys) != stored+2 {
			t.Fatalf("the uncut sequence did not reclaim and take new puts: %+v, %d of 2 puts", u, len(d.keys)-stored)
		}
		return int(renames.Load())
	}
	powerCut(t, d.s, pl)

	if rep, err := Inspect(dir); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("after the cut the directory has problems: %v %v", err, rep.Problems)
	}
	s := openT(t, dir, StoreOptions{BucketKeysLimit: fullBucketKeys, BucketSizeLimit: fullBucketKeys * fullValueSize, MetadataReserve: fullReserve})
	defer s.Close()
	removed := map[string]bool{}
	for _, r := range results {
		if r.Outcome == api.AckRemoved {
			removed[r.Key] = true
			if _, err := s.Get(r.Key, r.Incarnation); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s answered REMOVED is readable after the cut: %v", r.Key, err)
			}
			wantRefused(t, s, r.Key, r.Incarnation)
		}
	}
	inBatch := map[string]bool{}
	for _, tk := range tasks {
		inBatch[tk.Key] = true
	}
	for _, k := range d.keys {
		if removed[k] {
			continue
		}
		got, err := s.Get(k, d.incs[k])
		if inBatch[k] && errors.Is(err, ErrNotFound) {
			continue // its tombstone was not answered: either state is allowed
		}
		if err != nil || string(got) != string(d.vals[k]) {
			t.Fatalf("acknowledged %s after the cut: %d bytes, %v; want its %d bytes", k, len(got), err, len(d.vals[k]))
		}
	}
	return int(renames.Load())
}
