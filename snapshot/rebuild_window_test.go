package snapshot

import (
	"bytes"
	"testing"
)

// TestRebuildWindowFieldsRoundTripAndRefuse: the rebuild window's state
// fields and a segment's membership read back in 1.4.0, and a
// removal memory that is not whole, ascending digests of an open window is
// refused.
func TestRebuildWindowFieldsRoundTripAndRefuse(t *testing.T) {
	d1 := bytes.Repeat([]byte{1}, RebuildRemovedDigestLen)
	d2 := bytes.Repeat([]byte{2}, RebuildRemovedDigestLen)
	seg := map[string]any{"id": "s", "rebuild_member": true}
	state := map[string]any{"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": append(append([]byte{}, d1...), d2...)}
	b := newStream(t, header140)
	b.section(SectionMetadata, 0).section(SectionSegments, 1, b.records(seg)).section(SectionState, 1, b.records(state)).
		section(SectionTasks, 0).section(SectionSessions, 0).section(SectionJobs, 0)
	got, err := readAll(b.done())
	must(t, err)
	if !got.segments[0].RebuildMember || len(got.states[0].RebuildRemoved) != 2*RebuildRemovedDigestLen || got.states[0].RebuildCluster != 7 {
		t.Fatalf("read back %s %s", dump(got.segments), dump(got.states))
	}
	closed := map[string]any{"master_epoch": 1, "rebuild_cluster": 7, "rebuild_closed": true, "rebuild_overflow": true}
	b = newStream(t, header140)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionState, 1, b.records(closed)).
		section(SectionTasks, 0).section(SectionSessions, 0).section(SectionJobs, 0)
	got, err = readAll(b.done())
	must(t, err)
	if !got.states[0].RebuildClosed || !got.states[0].RebuildOverflow {
		t.Fatalf("read back %s", dump(got.states))
	}

	for name, st := range map[string]map[string]any{
		"descending": {"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": append(append([]byte{}, d2...), d1...)},
		"duplicate":  {"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": append(append([]byte{}, d1...), d1...)},
		"partial":    {"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": d1[:5]},
		"no rebuild": {"master_epoch": 1, "rebuild_removed": d1},
		"closed":     {"master_epoch": 1, "rebuild_cluster": 7, "rebuild_closed": true, "rebuild_removed": d1},
		"too many":   {"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": make([]byte, (MaxRebuildRemoved+1)*RebuildRemovedDigestLen)},
	} {
		b = newStream(t, header140)
		b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionState, 1, b.records(st)).
			section(SectionTasks, 0).section(SectionSessions, 0).section(SectionJobs, 0)
		if _, err := readAll(b.done()); err == nil {
			t.Errorf("%s: a bad removal memory was accepted", name)
		}
	}
	b = newStream(t, fixtureHeader)
	b.section(SectionMetadata, 0).section(SectionSegments, 1, b.records(seg))
	_, err = readAll(b.done())
	wantErr(t, err, ErrCorrupt)
}
