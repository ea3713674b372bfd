package snapshot

import (
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// Writer streams a format 1.4.0 snapshot (or, asked for by name, 1.3.0,
// 1.2.0 or 1.1.0, each without the sections and fields later formats
// added). Records are encoded straight into
// one reused chunk buffer of at most MaxChunkLen bytes, which goes out in a
// single Write when the next record would not fit, so memory stays constant
// whatever the number of records.
//
// Call BeginSection, WriteRecord for each record, EndSection, for every
// section in format order, then Close. Any error is sticky: every later
// call returns it and Close writes no trailer, so a snapshot missing a
// record can never be completed by ignoring an error.
type Writer struct {
	f   frameWriter
	err error

	format string
	spec   []*sectionSpec
	next   int // index in spec of the first section that may still begin
	open   int // index in spec of the open section, -1 if none
	count  uint64
	closed bool

	buf []byte // chunkFrameLen reserved bytes, then the pending payload
	aw  appendWriter
	enc *msgpack.Encoder
}

// appendWriter lets msgpack.Encoder append into the chunk buffer.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }
func (a *appendWriter) WriteByte(c byte) error      { a.b = append(a.b, c); return nil }

// NewWriter writes the magic and the header to w. h.Format is forced to
// Format140, the format this build writes, unless it is Format130,
// Format120 or Format110: then that previous format is written (for
// compatibility tests and tools), and records or sections it cannot carry
// are refused.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	switch h.Format {
	case Format130, Format120, Format110:
	default:
		h.Format = Format140
	}
	sw := &Writer{
		f:      frameWriter{w: w},
		format: h.Format,
		spec:   formatSpecs[h.Format],
		open:   -1,
		buf:    make([]byte, chunkFrameLen, chunkFrameLen+64<<10),
	}
	sw.enc = msgpack.NewEncoder(&sw.aw)
	sw.enc.UseCompactInts(true)
	sw.enc.SetSortMapKeys(true)

	body, err := sw.encode(&h)
	if err != nil {
		return nil, err
	}
	if err := sw.f.magic(); err != nil {
		return nil, err
	}
	if err := sw.f.header(body); err != nil {
		return nil, err
	}
	return sw, nil
}

// encode reflection-encodes v into a fresh slice (used for the header).
func (w *Writer) encode(v any) ([]byte, error) {
	w.aw.b = nil
	if err := w.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("snapshot: encoding header: %w", err)
	}
	b := w.aw.b
	w.aw.b = nil
	return b, nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

func (w *Writer) usage(format string, args ...any) error {
	return w.fail(fmt.Errorf("%w: "+format, append([]any{ErrWriterUsage}, args...)...))
}

// BeginSection opens the named section. Sections must come in format order;
// only optional sections may be left out.
func (w *Writer) BeginSection(name string) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return w.usage("BeginSection(%q) after Close", name)
	}
	if w.open >= 0 {
		return w.usage("BeginSection(%q) while section %q is open", name, w.spec[w.open].name)
	}
	idx := sectionIndex(w.spec, name)
	if idx < 0 {
		return w.fail(fmt.Errorf("%w: %q is not a section of format %s", ErrUnknownSection, name, w.format))
	}
	if idx < w.next {
		return w.fail(fmt.Errorf("%w: section %q after %q", ErrSectionOrder, name, w.spec[w.next-1].name))
	}
	for i := w.next; i < idx; i++ {
		if w.spec[i].required {
			return w.fail(fmt.Errorf("%w: section %q before required section %q", ErrMissingSection, name, w.spec[i].name))
		}
	}
	if err := w.f.sectionStart(name); err != nil {
		return w.fail(err)
	}
	w.open, w.next, w.count = idx, idx+1, 0
	return nil
}

// WriteRecord encodes v as the next record of the open section. The type
// must match the section (its const's comment in section_*.go): Object in
// metadata, Segment in segments, Task in local_delete_tasks, exactly one
// State in state, SessionRecord in sessions, Job in jobs (each by value or
// pointer); any msgpack-encodable value in dfs_buckets, where a
// msgpack.RawMessage is written as is after checking it is exactly one
// well-formed value. Records are checked against the bounds the reader
// enforces and must encode to at most MaxChunkLen bytes.
func (w *Writer) WriteRecord(v any) error {
	if w.err != nil {
		return w.err
	}
	if w.open < 0 {
		return w.usage("WriteRecord outside a section")
	}
	sec := w.spec[w.open]
	if sec.singleton && w.count > 0 {
		return w.usage("second record in section %q", sec.name)
	}
	start := len(w.buf)
	err := sec.put(w, v)
	if err != nil {
		w.buf = w.buf[:start]
		return w.fail(fmt.Errorf("snapshot: section %q record %d: %w", sec.name, w.count, err))
	}
	return w.placeRecord(start)
}

// placeRecord keeps the record that starts at start in the chunk, flushing
// the records before it first if together they would exceed MaxChunkLen.
func (w *Writer) placeRecord(start int) error {
	recLen := len(w.buf) - start
	if recLen > MaxChunkLen {
		w.buf = w.buf[:start]
		return w.fail(fmt.Errorf("%w: section %q record %d encodes to %d bytes, more than a chunk's %d",
			ErrTooLarge, w.spec[w.open].name, w.count, recLen, MaxChunkLen))
	}
	if len(w.buf)-chunkFrameLen > MaxChunkLen {
		if err := w.f.chunk(w.buf[:start]); err != nil {
			return w.fail(err)
		}
		n := copy(w.buf[chunkFrameLen:], w.buf[start:])
		w.buf = w.buf[:chunkFrameLen+n]
	}
	w.count++
	return nil
}

func (w *Writer) appendReflect(v any) error {
	w.aw.b = w.buf
	err := w.enc.Encode(v)
	w.buf = w.aw.b
	w.aw.b = nil
	return err
}

// EndSection flushes the open section's last chunk and writes its
// terminator, which carries the record count.
func (w *Writer) EndSection() error {
	if w.err != nil {
		return w.err
	}
	if w.open < 0 {
		return w.usage("EndSection with no open section")
	}
	sec := w.spec[w.open]
	if sec.singleton && w.count != 1 {
		return w.usage("section %q needs exactly one record, has %d", sec.name, w.count)
	}
	if len(w.buf) > chunkFrameLen {
		if err := w.f.chunk(w.buf); err != nil {
			return w.fail(err)
		}
		w.buf = w.buf[:chunkFrameLen]
	}
	if err := w.f.terminator(w.count); err != nil {
		return w.fail(err)
	}
	w.open = -1
	return nil
}

// Close writes the trailer. Every required section must have been written.
// It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return w.usage("Close called twice")
	}
	if w.open >= 0 {
		return w.usage("Close while section %q is open", w.spec[w.open].name)
	}
	for i := w.next; i < len(w.spec); i++ {
		if w.spec[i].required {
			return w.fail(fmt.Errorf("%w: Close before required section %q", ErrMissingSection, w.spec[i].name))
		}
	}
	if err := w.f.trailer(); err != nil {
		return w.fail(err)
	}
	w.closed = true
	return nil
}

// Written returns the number of bytes written so far.
func (w *Writer) Written() int64 { return w.f.off }
