package snapshot

import "io"

// Counts is what a snapshot holds, per section.
type Counts struct {
	Objects, Segments, Tasks, DFSRecords int
	HasState                             bool
	// Sessions counts session records (1.2.0): one per stored result,
	// or one for a session that keeps none.
	Sessions int
	// Jobs counts bulk-delete job records (1.3.0).
	Jobs int
}

// Inspect validates a whole snapshot exactly as Read does and counts its
// records, for `sexton operator snapshot inspect`. The counts are those
// read before any error, so with an error they are only a lower bound.
func Inspect(r io.Reader) (Header, Counts, error) {
	var c countingSink
	h, err := Read(r, &c)
	return h, c.Counts, err
}

type countingSink struct{ Counts }

func (c *countingSink) Header(Header) error { return nil }

func (c *countingSink) Section(name string) (func(any) error, error) {
	sec := sectionNamed(name)
	return func(any) error { sec.count(&c.Counts); return nil }, nil
}
