package snapshot

import "fmt"

// SectionState holds exactly one State: the FSM's scalar state and
// counters.
const SectionState = "state"

var stateSection = sectionSpec{
	name: SectionState, since: Format110, required: true, singleton: true,
	put:   putTyped(SectionState, "one snapshot.State record", checkState, addReflect[State]),
	get:   getTyped(decodeState, validateState),
	count: func(c *Counts) { c.HasState = true },
}

// checkState refuses a state carrying a field the writer's format lacks.
func checkState(w *Writer, s *State) error {
	if !atLeast140(w.format) && s.hasV140Fields() {
		return fmt.Errorf("%w: legacy settings and the rebuild window (closed, removed, overflow) need format %s, not %s", ErrWriterUsage, Format140, w.format)
	}
	if !atLeast120(w.format) && s.hasV120Fields() {
		return fmt.Errorf("%w: settings, grant key, session clock and the rebuild's incarnation base and cluster need format %s, not %s", ErrWriterUsage, Format120, w.format)
	}
	return validateState(s)
}
