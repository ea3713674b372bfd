package fsm

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"sexton/snapshot"
)

// snapshotSection is where the fsm writes and reads one section of
// package snapshot's section table.
type snapshotSection struct {
	// write writes the section of the view (an optional section the view
	// has nothing for is left out: write begins no section).
	write func(v *View, sw *snapshot.Writer) error
	// restore takes one of the section's records into the state being
	// restored.
	restore func(b *restoreSink, rec any) error
}

// snapshotSections has one row per section: a new section is a row here
// beside its row in package snapshot. The formats decide which sections a
// snapshot has and in what order (snapshot.Sections).
var snapshotSections = map[string]snapshotSection{
	snapshot.SectionMetadata:   {(*View).writeObjects, restoreAs((*restoreSink).object)},
	snapshot.SectionSegments:   {(*View).writeSegments, restoreAs((*restoreSink).segment)},
	snapshot.SectionState:      {(*View).writeState, restoreAs((*restoreSink).state)},
	snapshot.SectionTasks:      {(*View).writeTasks, restoreAs((*restoreSink).task)},
	snapshot.SectionSessions:   {(*View).writeSessions, restoreAs((*restoreSink).session)},
	snapshot.SectionJobs:       {(*View).writeJobs, restoreAs((*restoreSink).job)},
	snapshot.SectionDFSBuckets: {(*View).writeDFS, restoreAs((*restoreSink).dfsRecord)},
}

// restoreAs adapts a restore of T records to the sink's records, refusing
// a record of another type.
func restoreAs[T any](restore func(b *restoreSink, rec T) error) func(b *restoreSink, rec any) error {
	return func(b *restoreSink, rec any) error {
		r, ok := rec.(T)
		if !ok {
			return corrupt("a %T record where %T records belong", rec, r)
		}
		return restore(b, r)
	}
}

// Section is the snapshot.Sink's start of a section: the function that
// restores its records.
func (b *restoreSink) Section(name string) (func(rec any) error, error) {
	row, ok := snapshotSections[name]
	if !ok {
		return nil, corrupt("section %q holds nothing this build restores", name)
	}
	return func(rec any) error { return row.restore(b, rec) }, nil
}

// writeFormat writes the view in format (1.4.0, or 1.3.0, 1.2.0 or 1.1.0
// for tests of older snapshots: then the state must hold nothing that
// format cannot carry, which the snapshot writer refuses).
func (v *View) writeFormat(w io.Writer, format string) (int64, error) {
	if v.complete == nil {
		return 0, fmt.Errorf("fsm: write of a released snapshot view")
	}
	if !hasJobs(format) && len(v.jobs) > 0 {
		return 0, fmt.Errorf("fsm: a %s snapshot cannot carry %d bulk-delete jobs", format, len(v.jobs))
	}
	cw := &countingWriter{w: w}
	h := v.header
	h.Format = format
	sw, err := snapshot.NewWriter(cw, h)
	if err != nil {
		return cw.n, err
	}
	for _, name := range snapshot.Sections(format) {
		row, ok := snapshotSections[name]
		if !ok {
			return cw.n, fmt.Errorf("fsm: snapshot section %q has no writer", name)
		}
		if err := row.write(v, sw); err != nil {
			return cw.n, err
		}
	}
	if err := sw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

func (v *View) writeSegments(sw *snapshot.Writer) error {
	slices.SortFunc(v.segments, func(a, b snapshot.Segment) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return writeSection(sw, snapshot.SectionSegments, len(v.segments), func(i int) any { return &v.segments[i] })
}

func (v *View) writeState(sw *snapshot.Writer) error {
	return writeSection(sw, snapshot.SectionState, 1, func(int) any { return &v.state })
}

func (v *View) writeTasks(sw *snapshot.Writer) error {
	var rec snapshot.Task
	return writeSection(sw, snapshot.SectionTasks, len(v.tasks), func(i int) any { rec = v.tasks[i].view(); return &rec })
}

func (v *View) writeJobs(sw *snapshot.Writer) error {
	return writeSection(sw, snapshot.SectionJobs, len(v.jobs), func(i int) any { return &v.jobs[i] })
}

// writeDFS writes the DFS head, then the allocator's records; nothing
// when the cluster has no DFS.
func (v *View) writeDFS(sw *snapshot.Writer) error {
	if v.dfs == nil {
		return nil
	}
	return writeSection(sw, snapshot.SectionDFSBuckets, 1+len(v.dfsRecs), func(i int) any {
		if i == 0 {
			return v.dfs
		}
		return &v.dfsRecs[i-1]
	})
}

func writeSection(sw *snapshot.Writer, name string, n int, rec func(i int) any) error {
	if err := sw.BeginSection(name); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := sw.WriteRecord(rec(i)); err != nil {
			return fmt.Errorf("fsm: snapshot %s record %d: %w", name, i, err)
		}
	}
	return sw.EndSection()
}
