package fsm

import (
	"bytes"
	"errors"
	"testing"

	"sexton/api"
	"sexton/snapshot"
)

// TestSnapshotFormat140: the FSM writes 1.4.0; a state under legacy
// settings carries them in it and a restore applies under them; a 1.3.0
// file with a job restores the job; and the legacy settings, 1.4.0's, are
// refused in a 1.3.0 stream rather than dropped.
func TestSnapshotFormat140(t *testing.T) {
	h := newMounted(t, DefaultRegistryCapacity)
	h.put("p/a", "s1")
	r := h.apply(&JobStart{Prefix: "p/", Now: h.now}).(*JobResult)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	hdr, _, err := snapshot.Inspect(bytes.NewReader(snapshotBytes(t, h.f)))
	if err != nil || hdr.Format != snapshot.Format140 {
		t.Fatalf("the FSM wrote format %q (%v), want %s", hdr.Format, err, snapshot.Format140)
	}

	v := h.f.Snapshot()
	var old bytes.Buffer
	_, err = v.writeFormat(&old, snapshot.Format130)
	v.Release()
	if err != nil {
		t.Fatalf("1.3.0 write: %v", err)
	}
	g := New(Config{})
	if err := g.Restore(bytes.NewReader(old.Bytes())); err != nil {
		t.Fatalf("restore of a 1.3.0 file: %v", err)
	}
	if jobs := g.Jobs(); len(jobs) != 1 || jobs[0].ID != r.Job.ID || jobs[0].Prefix != "p/" {
		t.Fatalf("jobs restored from 1.3.0: %+v, want job %d", jobs, r.Job.ID)
	}

	legacy := New(Config{Legacy: api.Settings{RegistryCapacity: 7}})
	back := New(Config{})
	if err := back.Restore(bytes.NewReader(snapshotBytes(t, legacy))); err != nil {
		t.Fatalf("restore of a state under legacy settings: %v", err)
	}
	if s, set := back.Settings(); s.RegistryCapacity != 7 || set {
		t.Fatalf("restored settings %+v (replicated %v), want the legacy capacity 7, not replicated", s, set)
	}
	v = legacy.Snapshot()
	defer v.Release()
	if _, err := v.writeFormat(&bytes.Buffer{}, snapshot.Format130); !errors.Is(err, snapshot.ErrWriterUsage) {
		t.Fatalf("legacy settings written as 1.3.0: %v, want %v", err, snapshot.ErrWriterUsage)
	}
}
