package snapshot

import "fmt"

// SectionSegments holds the LOCAL_DISK segments: one Segment each, by id.
const SectionSegments = "segments"

var segmentsSection = sectionSpec{
	name: SectionSegments, since: Format100, required: true,
	put:   putTyped(SectionSegments, "snapshot.Segment records", checkSegment, addReflect[Segment]),
	get:   getTyped(decodeSegment, validateSegment),
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
