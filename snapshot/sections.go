package snapshot

import (
	"errors"
	"fmt"
)

// sectionSpec is one row of the section table: everything the codec knows
// of one section. Each row lives in its own file (section_*.go) with the
// section's name and the glue between its record type and the codec.
type sectionSpec struct {
	name string
	// since is the first format with the section.
	since    string
	required bool
	// singleton sections hold exactly one record.
	singleton bool
	// put checks v, the value handed to Writer.WriteRecord, against the
	// writer's format and the reader's bounds, and appends its encoding to
	// the chunk buffer.
	put func(w *Writer, v any) error
	// get decodes and checks one record of format; the record goes to the
	// sink's function for the section (Sink.Section).
	get func(mr *mpReader, format string) (any, error)
	// count counts one record in an Inspect's Counts.
	count func(c *Counts)
}

// sectionTable is every section, in the stream order of the newest
// format. A new section is one row here and one file beside this one.
var sectionTable = []*sectionSpec{
	&metadataSection,
	&segmentsSection,
	&stateSection,
	&tasksSection,
	&sessionsSection,
	&jobsSection,
	&dfsBucketsSection,
}

// formatOrder lists the formats from the oldest.
var formatOrder = []string{Format100, Format110, Format120, Format130, Format140}

// formatSpecs lists, per readable format, its sections in the only order
// they may appear: from 1.2.0 on, the table's sections a format has, in
// the table's order (1.2.0 moved the state before the tasks, so a reader
// knows the snapshot's settings, its registry capacity, before the first
// task); 1.1.0 wrote the tasks before the state.
var formatSpecs = map[string][]*sectionSpec{
	Format140: sectionsOf(Format140),
	Format130: sectionsOf(Format130),
	Format120: sectionsOf(Format120),
	Format110: {&metadataSection, &segmentsSection, &tasksSection, &stateSection, &dfsBucketsSection},
	Format100: {&metadataSection, &segmentsSection},
}

// sectionsOf is the table's sections that format has, in table order.
func sectionsOf(format string) []*sectionSpec {
	var out []*sectionSpec
	for _, s := range sectionTable {
		if formatAtLeast(format, s.since) {
			out = append(out, s)
		}
	}
	return out
}

// formatAtLeast reports whether format is since or a later one.
func formatAtLeast(format, since string) bool {
	for _, f := range formatOrder {
		switch f {
		case since:
			return true
		case format:
			return false
		}
	}
	return false
}

// Sections returns the names of format's sections in stream order (nil
// for a format this build does not read).
func Sections(format string) []string {
	var names []string
	for _, s := range formatSpecs[format] {
		names = append(names, s.name)
	}
	return names
}

// sectionIndex returns the position of name in spec, or -1.
func sectionIndex(spec []*sectionSpec, name string) int {
	for i, s := range spec {
		if s.name == name {
			return i
		}
	}
	return -1
}

// sectionNamed is the table's row for name, or nil.
func sectionNamed(name string) *sectionSpec {
	if i := sectionIndex(sectionTable, name); i >= 0 {
		return sectionTable[i]
	}
	return nil
}

// recordArg is v as a *T (WriteRecord takes a record by value or
// pointer), or the writer's refusal naming what the section takes.
func recordArg[T any](section, what string, v any) (*T, error) {
	switch x := v.(type) {
	case *T:
		if x != nil {
			return x, nil
		}
	case T:
		return &x, nil
	}
	return nil, fmt.Errorf("%w: %s takes %s, not %T", ErrWriterUsage, section, what, v)
}

// putTyped is the put of a section of T records (what names them for
// the refusal of another type): check refuses what the
// writer's format cannot carry or the reader would refuse (a writer
// usage error), add appends the checked record.
func putTyped[T any](section, what string, check func(w *Writer, r *T) error, add func(w *Writer, r *T) error) func(w *Writer, v any) error {
	return func(w *Writer, v any) error {
		r, err := recordArg[T](section, what, v)
		if err != nil {
			return err
		}
		if err := check(w, r); err != nil {
			if !errors.Is(err, ErrWriterUsage) {
				err = fmt.Errorf("%w: %v", ErrWriterUsage, err)
			}
			return err
		}
		return add(w, r)
	}
}

// putFast is the put of a section of T records appended by hand (their
// bytes are msgpack's reflection encoding with compact ints): validate
// refuses what the reader would.
func putFast[T any](section, what string, validate func(r *T) error, appendRec func(b []byte, r *T) []byte) func(w *Writer, v any) error {
	return putTyped(section, what,
		func(_ *Writer, r *T) error { return validate(r) },
		func(w *Writer, r *T) error { w.buf = appendRec(w.buf, r); return nil })
}

// addReflect appends r through the msgpack encoder.
func addReflect[T any](w *Writer, r *T) error { return w.appendReflect(r) }

// getTyped is the get of a section of T records: decode reads a fresh
// record, validate checks it (a refusal is corruption).
func getTyped[T any](decode func(mr *mpReader, r *T, format string) error, validate func(r *T) error) func(mr *mpReader, format string) (any, error) {
	return func(mr *mpReader, format string) (any, error) {
		r := new(T)
		if err := decode(mr, r, format); err != nil {
			return nil, err
		}
		if err := validate(r); err != nil {
			return nil, corrupt(err)
		}
		return r, nil
	}
}
