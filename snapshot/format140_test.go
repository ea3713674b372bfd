package snapshot

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

const (
	golden140       = "testdata/v140.snap"
	golden140Closed = "testdata/v140_closed.snap"
)

func TestGolden140ReadsBackEveryField(t *testing.T) {
	for _, c := range []struct {
		path  string
		state *State
	}{{golden140, fixtureState140()}, {golden140Closed, fixtureState140Closed()}} {
		got := readGolden(t, c.path, func(t fataler) []byte { return writeFixture140(t, c.state) }, &collectSink{
			header: fixtureHeader140, objects: fixtureObjects(), segments: fixtureSegments140(), tasks: fixtureTasks(),
			states: []*State{c.state}, sessions: fixtureSessions120(), jobs: fixtureJobs140(), dfs: fixtureDFS(t),
		}, Counts{Objects: 4, Segments: 2, Tasks: 3, DFSRecords: 2, HasState: true, Sessions: 4, Jobs: 4})
		if !got.segments[0].RebuildMember || len(got.jobs[0].Kept) != 2 {
			t.Fatalf("%s: the fixture's rebuild member or kept keys are missing", c.path)
		}
	}
	// Between them the two states set every 1.4.0 state field.
	open, closed := fixtureState140(), fixtureState140Closed()
	if open.Legacy == nil || len(open.RebuildRemoved) == 0 || !closed.RebuildClosed || !closed.RebuildOverflow {
		t.Fatal("the 1.4.0 fixtures leave a 1.4.0 state field unset")
	}
}

// field140 is one record carrying one field 1.4.0 added, in the section
// it belongs to.
type field140 struct {
	name    string
	section string
	rec     any
}

func fields140(t *testing.T) []field140 {
	digest := bytes.Repeat([]byte{1}, RebuildRemovedDigestLen)
	// A job record as the writer encodes it, with the kept field present
	// but empty: the field's name alone needs 1.4.0.
	var job map[string]any
	must(t, msgpack.Unmarshal(encodeRec(t, fixtureJobs130()[0]), &job))
	job["kept"] = []any{}
	return []field140{
		{"segment rebuild_member", SectionSegments, map[string]any{"id": "s", "rebuild_member": true}},
		{"state legacy_settings", SectionState, map[string]any{"master_epoch": 1, "legacy_settings": map[string]any{"registry_cap": 60000}}},
		{"state rebuild_closed", SectionState, map[string]any{"master_epoch": 1, "rebuild_cluster": 7, "rebuild_closed": true}},
		{"state rebuild_removed", SectionState, map[string]any{"master_epoch": 1, "rebuild_cluster": 7, "rebuild_removed": digest}},
		{"state rebuild_overflow", SectionState, map[string]any{"master_epoch": 1, "rebuild_cluster": 7, "rebuild_overflow": true}},
		{"state rebuild_closed false", SectionState, map[string]any{"master_epoch": 1, "rebuild_closed": false}},
		{"state inc_blocks", SectionState, map[string]any{"master_epoch": 1, "inc_blocks": []any{map[string]any{"lo": 5, "hi": 9, "exp": 100}}}},
		{"job kept", SectionJobs, encodeRec(t, fixtureJobs140()[0])},
		{"job kept empty", SectionJobs, job},
	}
}

// stream140 builds a stream of format (1.2.0 or later) whose section f.section
// holds f's record and every other section is empty or minimal.
func stream140(t *testing.T, format string, f field140) []byte {
	b := newStream(t, Header{Format: format, ClusterID: 1})
	for _, s := range formatSpecs[format] {
		switch {
		case s.name == f.section:
			rec := f.rec
			if raw, ok := rec.([]byte); ok {
				b.section(s.name, 1, raw)
				continue
			}
			b.section(s.name, 1, b.records(rec))
		case s.name == SectionState:
			b.section(s.name, 1, b.records(validState()))
		case s.required:
			b.section(s.name, 0)
		}
	}
	return b.done()
}

// TestRefuses140FieldsInOlderFormats: a 1.3.0 or 1.2.0 stream carrying a
// field 1.4.0 added is refused as an unknown field of that format, never
// read with the field dropped; the same record in a 1.4.0 stream reads.
func TestRefuses140FieldsInOlderFormats(t *testing.T) {
	for _, f := range fields140(t) {
		got, err := readAll(stream140(t, Format140, f))
		if err != nil {
			t.Fatalf("%s in 1.4.0: %v", f.name, err)
		}
		if len(got.states) != 1 {
			t.Fatalf("%s in 1.4.0: %d states", f.name, len(got.states))
		}
		for _, format := range []string{Format130, Format120} {
			if f.section == SectionJobs && format == Format120 {
				continue // 1.2.0 has no jobs section at all
			}
			_, err := readAll(stream140(t, format, f))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s in %s: got %v, want %v", f.name, format, err, ErrCorrupt)
			}
			if !strings.Contains(err.Error(), "unknown field") || !strings.Contains(err.Error(), "format "+format+" snapshot") {
				t.Fatalf("%s in %s: the refusal %q does not name the field as unknown to the format", f.name, format, err)
			}
		}
	}
}

// TestWriterRefuses140FieldsInOlderFormats: asked for 1.3.0 or an older
// format, the writer refuses a record carrying a field 1.4.0 added, so no
// older build is handed a stream it must refuse; 1.4.0 takes it.
func TestWriterRefuses140FieldsInOlderFormats(t *testing.T) {
	d := bytes.Repeat([]byte{1}, RebuildRemovedDigestLen)
	seg := validSegment()
	seg.RebuildMember = true
	for _, f := range []field140{
		{"segment rebuild_member", SectionSegments, &seg},
		{"state legacy_settings", SectionState, &State{MasterEpoch: 1, Legacy: &api.Settings{RegistryCapacity: 60000}}},
		{"state rebuild_closed", SectionState, &State{MasterEpoch: 1, RebuildCluster: 7, RebuildClosed: true}},
		{"state rebuild_removed", SectionState, &State{MasterEpoch: 1, RebuildCluster: 7, RebuildRemoved: d}},
		{"state rebuild_overflow", SectionState, &State{MasterEpoch: 1, RebuildCluster: 7, RebuildOverflow: true}},
		{"state inc_blocks", SectionState, &State{MasterEpoch: 1, IncBlocks: []IncBlock{{Lo: 5, Hi: 9, Expires: 100}}}},
		{"job kept", SectionJobs, fixtureJobs140()[0]},
	} {
		data, err := writeOne(Format140, f)
		if err != nil {
			t.Fatalf("%s in 1.4.0: %v", f.name, err)
		}
		if _, err := readAll(data); err != nil {
			t.Fatalf("%s in 1.4.0 reads back: %v", f.name, err)
		}
		for _, format := range []string{Format130, Format120, Format110} {
			if sectionIndex(formatSpecs[format], f.section) < 0 {
				continue // the format has no such section at all
			}
			_, err := writeOne(format, f)
			if !errors.Is(err, ErrWriterUsage) || !strings.Contains(err.Error(), "need format "+Format140) && !strings.Contains(err.Error(), "needs format "+Format140) {
				t.Fatalf("%s in %s: got %v, want %v naming %s", f.name, format, err, ErrWriterUsage, Format140)
			}
		}
	}
}

// writeOne writes a stream of format whose section f.section holds f's
// record, every other section empty or minimal, and returns the first
// error.
func writeOne(format string, f field140) ([]byte, error) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Format: format, ClusterID: 1})
	if err != nil {
		return nil, err
	}
	for _, s := range formatSpecs[format] {
		if !s.required && s.name != f.section {
			continue
		}
		if err := w.BeginSection(s.name); err != nil {
			return nil, err
		}
		switch {
		case s.name == f.section:
			err = w.WriteRecord(f.rec)
		case s.name == SectionState:
			err = w.WriteRecord(validState())
		}
		if err != nil {
			return nil, err
		}
		if err := w.EndSection(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestRefusesBadIncBlocks: live incarnation blocks that are empty, not
// ascending or overlapping, or more than MaxIncBlocks, are refused by the
// reader and the writer alike; ascending disjoint blocks read back.
func TestRefusesBadIncBlocks(t *testing.T) {
	many := make([]IncBlock, MaxIncBlocks+1)
	for i := range many {
		many[i] = IncBlock{Lo: uint64(10*i + 1), Hi: uint64(10*i + 5), Expires: 1}
	}
	for name, bs := range map[string][]IncBlock{
		"empty":       {{Lo: 9, Hi: 5, Expires: 1}},
		"zero":        {{Lo: 0, Hi: 5, Expires: 1}},
		"overlapping": {{Lo: 1, Hi: 5, Expires: 1}, {Lo: 5, Hi: 9, Expires: 1}},
		"descending":  {{Lo: 10, Hi: 15, Expires: 1}, {Lo: 1, Hi: 5, Expires: 1}},
		"too many":    many,
	} {
		f := field140{"state inc_blocks " + name, SectionState, &State{MasterEpoch: 1, IncBlocks: bs}}
		if _, err := writeOne(Format140, f); err == nil {
			t.Fatalf("%s: the writer took it", name)
		}
		var recs []map[string]any
		for _, b := range bs {
			recs = append(recs, map[string]any{"lo": b.Lo, "hi": b.Hi, "exp": b.Expires})
		}
		raw := field140{f.name, SectionState, map[string]any{"master_epoch": 1, "inc_blocks": recs}}
		if _, err := readAll(stream140(t, Format140, raw)); err == nil {
			t.Fatalf("%s: the reader took it", name)
		}
	}
	ok := field140{"state inc_blocks", SectionState, &State{MasterEpoch: 1, IncBlocks: []IncBlock{{Lo: 1, Hi: 5, Expires: 1}, {Lo: 6, Hi: 9, Expires: 2}}}}
	data, err := writeOne(Format140, ok)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(data)
	if err != nil || len(got.states) != 1 || len(got.states[0].IncBlocks) != 2 || got.states[0].IncBlocks[1] != (IncBlock{Lo: 6, Hi: 9, Expires: 2}) {
		t.Fatalf("ascending blocks read back: %+v %v", got.states, err)
	}
}
