package snapshot

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/msgpackscan"
)

// newTestWriter returns a 1.1.0 writer (the section order most of these
// tests spell out); TestWriterRefusesMisuse120 covers 1.2.0's.
func newTestWriter(t *testing.T) (*Writer, *bytes.Buffer) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Format: Format110, ClusterID: 1})
	must(t, err)
	return w, &buf
}

// beginDFSSection writes the 1.1.0 sections, empty but for a valid
// state, and begins the DFS section.
// emptySections writes each named section with no record.
func emptySections(t *testing.T, w *Writer, names ...string) {
	t.Helper()
	for _, s := range names {
		must(t, w.BeginSection(s))
		must(t, w.EndSection())
	}
}

func beginDFSSection(t *testing.T, w *Writer) {
	t.Helper()
	for _, s := range []string{SectionMetadata, SectionSegments, SectionTasks, SectionState} {
		must(t, w.BeginSection(s))
		if s == SectionState {
			must(t, w.WriteRecord(validState()))
		}
		must(t, w.EndSection())
	}
	must(t, w.BeginSection(SectionDFSBuckets))
}

func TestWriterForcesFormat140UnlessAskedForAnOlderOne(t *testing.T) {
	for in, want := range map[string]string{"1.0.0": Format140, "9.9.9": Format140, "": Format140, Format140: Format140,
		Format130: Format130, Format120: Format120, Format110: Format110} {
		data := writeContents(t, &contents{header: Header{Format: in}, state: validState()})
		h, _, err := Inspect(bytes.NewReader(data))
		must(t, err)
		if h.Format != want {
			t.Fatalf("asked for %q, wrote format %q, want %q", in, h.Format, want)
		}
	}
}

// TestWriterRefusesMisuse120: 1.2.0 wants state before the tasks and a
// sessions section; 1.1.0 refuses every record that needs 1.2.0.
func TestWriterRefusesMisuse120(t *testing.T) {
	begin := func(w *Writer, upto string) {
		for _, s := range []string{SectionMetadata, SectionSegments, SectionState, SectionTasks, SectionSessions} {
			if s == upto {
				return
			}
			must(t, w.BeginSection(s))
			if s == SectionState {
				must(t, w.WriteRecord(validState()))
			}
			must(t, w.EndSection())
		}
	}
	cases := map[string]struct {
		format string
		run    func(w *Writer) error
		want   error
	}{
		"tasks before state": {Format120, func(w *Writer) error {
			begin(w, SectionState)
			return w.BeginSection(SectionTasks)
		}, ErrMissingSection},
		"close without sessions": {Format120, func(w *Writer) error {
			begin(w, SectionSessions)
			return w.Close()
		}, ErrMissingSection},
		"wrong record in sessions": {Format120, func(w *Writer) error {
			begin(w, SectionSessions)
			must(t, w.BeginSection(SectionSessions))
			return w.WriteRecord(validTask())
		}, ErrWriterUsage},
		"session without client": {Format120, func(w *Writer) error {
			begin(w, SectionSessions)
			must(t, w.BeginSection(SectionSessions))
			return w.WriteRecord(&SessionRecord{})
		}, ErrWriterUsage},
		"session result error without code": {Format120, func(w *Writer) error {
			begin(w, SectionSessions)
			must(t, w.BeginSection(SectionSessions))
			return w.WriteRecord(&SessionRecord{ClientID: "c", Result: &SessionResult{Seq: 1, Err: &api.Error{}}})
		}, ErrWriterUsage},
		"grant key of the wrong length": {Format120, func(w *Writer) error {
			begin(w, SectionState)
			must(t, w.BeginSection(SectionState))
			return w.WriteRecord(&State{GrantKey: []byte{1, 2, 3}})
		}, ErrWriterUsage},
		"sessions in 1.1.0": {Format110, func(w *Writer) error {
			return w.BeginSection(SectionSessions)
		}, ErrUnknownSection},
		"settings in 1.1.0": {Format110, func(w *Writer) error {
			emptySections(t, w, SectionMetadata, SectionSegments, SectionTasks)
			must(t, w.BeginSection(SectionState))
			return w.WriteRecord(&State{Settings: &api.Settings{RegistryCapacity: 1}})
		}, ErrWriterUsage},
		"process in 1.1.0": {Format110, func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			must(t, w.EndSection())
			must(t, w.BeginSection(SectionSegments))
			seg := validSegment()
			seg.Process = "p"
			return w.WriteRecord(&seg)
		}, ErrWriterUsage},
	}
	for name, c := range cases {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Header{Format: c.format, ClusterID: 1})
		must(t, err)
		err = c.run(w)
		if err == nil {
			err = w.EndSection()
		}
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func TestWriterRefusesMisuse(t *testing.T) {
	cases := map[string]struct {
		run  func(w *Writer) error
		want error
	}{
		"record outside a section": {func(w *Writer) error { return w.WriteRecord(validObject()) }, ErrWriterUsage},
		"unknown section":          {func(w *Writer) error { return w.BeginSection("extra") }, ErrUnknownSection},
		"skipped required section": {func(w *Writer) error { return w.BeginSection(SectionTasks) }, ErrMissingSection},
		"wrong record type": {func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			return w.WriteRecord(validSegment())
		}, ErrWriterUsage},
		"invalid record": {func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			o := validObject()
			o.Key = ""
			return w.WriteRecord(&o)
		}, ErrWriterUsage},
		"section opened twice": {func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			return w.BeginSection(SectionSegments)
		}, ErrWriterUsage},
		"repeated section": {func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			must(t, w.EndSection())
			return w.BeginSection(SectionMetadata)
		}, ErrSectionOrder},
		"close with section open": {func(w *Writer) error {
			must(t, w.BeginSection(SectionMetadata))
			return w.Close()
		}, ErrWriterUsage},
		"close before state": {func(w *Writer) error {
			emptySections(t, w, SectionMetadata, SectionSegments, SectionTasks)
			return w.Close()
		}, ErrMissingSection},
		"two state records": {func(w *Writer) error {
			emptySections(t, w, SectionMetadata, SectionSegments, SectionTasks)
			must(t, w.BeginSection(SectionState))
			must(t, w.WriteRecord(validState()))
			return w.WriteRecord(validState())
		}, ErrWriterUsage},
		"no state record": {func(w *Writer) error {
			emptySections(t, w, SectionMetadata, SectionSegments, SectionTasks)
			return w.BeginSection(SectionState) // EndSection follows
		}, ErrWriterUsage},
		"malformed raw dfs record": {func(w *Writer) error {
			beginDFSSection(t, w)
			return w.WriteRecord(msgpack.RawMessage{0x92, 0x01})
		}, ErrWriterUsage},
	}
	for name, c := range cases {
		w, _ := newTestWriter(t)
		err := c.run(w)
		if err == nil {
			err = w.EndSection()
		}
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func TestWriterErrorIsSticky(t *testing.T) {
	w, buf := newTestWriter(t)
	must(t, w.BeginSection(SectionMetadata))
	bad := validObject()
	bad.State = 0
	first := w.WriteRecord(&bad)
	wantErr(t, first, ErrWriterUsage)
	before := buf.Len()
	// Later calls, valid or not, return the first error and write nothing:
	// a snapshot that lost a record can never be completed.
	if err := w.WriteRecord(validObject()); err != first {
		t.Fatalf("WriteRecord after failure: %v", err)
	}
	if err := w.EndSection(); err != first {
		t.Fatalf("EndSection after failure: %v", err)
	}
	if err := w.Close(); err != first {
		t.Fatalf("Close after failure: %v", err)
	}
	if buf.Len() != before {
		t.Fatalf("wrote %d bytes after the failure", buf.Len()-before)
	}
	if _, err := readAll(buf.Bytes()); err == nil {
		t.Fatal("the abandoned stream reads as a snapshot")
	}
}

func TestWriterRefusesRecordLargerThanChunk(t *testing.T) {
	w, _ := newTestWriter(t)
	emptySections(t, w, SectionMetadata, SectionSegments, SectionTasks)
	must(t, w.BeginSection(SectionState))
	st := validState()
	for i := 0; i < 400; i++ {
		st.Audit = append(st.Audit, AuditEntry{Segment: "s", Reason: strings.Repeat("r", maxReasonLen)})
	}
	wantErr(t, w.WriteRecord(&st), ErrTooLarge)
}

type failingWriter struct{ n, limit int }

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

func TestWriterReportsUnderlyingWriteError(t *testing.T) {
	w, err := NewWriter(&failingWriter{limit: 200}, fixtureHeader)
	must(t, err)
	must(t, w.BeginSection(SectionMetadata))
	for i := 0; i < 10; i++ {
		must(t, w.WriteRecord(validObject())) // buffered, not yet written
	}
	wantErr(t, w.EndSection(), errDiskFull)
	wantErr(t, w.Close(), errDiskFull)
}

func TestWriterAcceptsRecordsByValueAndPointer(t *testing.T) {
	o := validObject()
	s, task, st := validSegment(), validTask(), validState()
	data := writeSections(t, Header{Format: Format110, ClusterID: 1},
		section(SectionMetadata, []any{o, &o}),
		section(SectionSegments, []any{s, &s}),
		section(SectionTasks, []any{task, &task}),
		section(SectionState, []any{st}),
		section(SectionDFSBuckets, []any{map[string]any{"b": 1}, msgpack.RawMessage{0x01}}))
	_, c, err := Inspect(bytes.NewReader(data))
	must(t, err)
	if c != (Counts{Objects: 2, Segments: 2, Tasks: 2, DFSRecords: 2, HasState: true}) {
		t.Fatalf("counts %+v", c)
	}
}

func TestWriterRefusesDFSRecordsTheReaderWouldRefuse(t *testing.T) {
	deep := any(1)
	for i := 0; i < msgpackscan.MaxDepth+2; i++ {
		deep = []any{deep}
	}
	for name, rec := range map[string]any{
		"two values":   msgpack.RawMessage{0x01, 0x02},
		"empty":        msgpack.RawMessage{},
		"too deep":     deep,
		"short string": msgpack.RawMessage{0xa5, 'x'},
	} {
		w, _ := newTestWriter(t)
		beginDFSSection(t, w)
		if err := w.WriteRecord(rec); !errors.Is(err, ErrWriterUsage) {
			t.Fatalf("%s: got %v, want ErrWriterUsage", name, err)
		}
	}
}
