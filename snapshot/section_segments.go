package snapshot

import "fmt"

// SectionSegments holds the LOCAL_DISK segments: one Segment each, by id.
const SectionSegments = "segments"

var segmentsSection = sectionSpec{
	name: SectionSegments, since: Format100, required: true,
	put: putTyped(SectionSegments, "snapshot.Segment records", checkSegment, addReflect[Segment]),
	get: func(mr *mpReader, format string) (any, error) {
		if format == Format100 {
			return getTyped(func(mr *mpReader, s *Segment, _ string) error { return decodeSegment100(mr, s) }, validateSegment)(mr, format)
		}
		return getTyped(decodeSegment, validateSegment)(mr, format)
	},
	count: func(c *Counts) { c.Segments++ },
}

// checkSegment refuses a segment carrying a field the writer's format
// lacks.
func checkSegment(w *Writer, s *Segment) error {
	if !atLeast140(w.format) && s.RebuildMember {
		return fmt.Errorf("%w: segment %q: rebuild membership needs format %s, not %s", ErrWriterUsage, s.ID, Format140, w.format)
	}
	if !atLeast120(w.format) && s.Process != "" {
		return fmt.Errorf("%w: segment %q: a process id needs format %s, not %s", ErrWriterUsage, s.ID, Format120, w.format)
	}
	return validateSegment(s)
}
