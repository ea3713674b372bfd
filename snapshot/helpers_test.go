package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"sexton/internal/testutil"
)

// collectSink keeps everything Read hands it.
type collectSink struct {
	header   Header
	headers  int
	objects  []*Object
	segments []*Segment
	tasks    []*Task
	states   []*State
	sessions []*SessionRecord
	dfs      [][]byte
	jobs     []*Job
}

func (c *collectSink) Header(h Header) error { c.header = h; c.headers++; return nil }

// Section keeps each section's records; a record of another type than
// the section's fails the read.
func (c *collectSink) Section(name string) (func(any) error, error) {
	keep, ok := map[string]func(any) error{
		SectionMetadata: keepAs(name, &c.objects), SectionSegments: keepAs(name, &c.segments),
		SectionState: keepAs(name, &c.states), SectionTasks: keepAs(name, &c.tasks),
		SectionSessions: keepAs(name, &c.sessions), SectionJobs: keepAs(name, &c.jobs),
		SectionDFSBuckets: keepAs(name, &c.dfs),
	}[name]
	if !ok {
		return nil, fmt.Errorf("no section %q", name)
	}
	return keep, nil
}

// keepAs appends each record, a T, to dst.
func keepAs[T any](section string, dst *[]T) func(any) error {
	return func(rec any) error {
		r, ok := rec.(T)
		if !ok {
			return fmt.Errorf("section %s: a record of type %T", section, rec)
		}
		*dst = append(*dst, r)
		return nil
	}
}

// readAll reads data into a fresh collectSink.
func readAll(data []byte) (*collectSink, error) {
	c := &collectSink{}
	_, err := Read(bytes.NewReader(data), c)
	return c, err
}

// encodeRec reflection-encodes v the way the Writer does.
func encodeRec(t fataler, v any) []byte {
	t.Helper()
	return testutil.Msgpack(t, v)
}

// streamBuilder assembles streams frame by frame with correct checksums,
// including streams the Writer refuses to produce, so a refusal test
// fails for the reason it names and not for a checksum.
type streamBuilder struct {
	t   fataler
	buf bytes.Buffer
	f   frameWriter
}

func newStream(t fataler, header any) *streamBuilder {
	t.Helper()
	b := &streamBuilder{t: t}
	b.f.w = &b.buf
	must(t, b.f.magic())
	must(t, b.f.header(encodeRec(t, header)))
	return b
}

// section writes a section with one chunk per element of chunks (each the
// concatenated records it holds) and a terminator claiming count records.
func (b *streamBuilder) section(name string, count uint64, chunks ...[]byte) *streamBuilder {
	must(b.t, b.f.sectionStart(name))
	for _, c := range chunks {
		frame := append(make([]byte, chunkFrameLen), c...)
		must(b.t, b.f.chunk(frame))
	}
	must(b.t, b.f.terminator(count))
	return b
}

// records concatenates the encodings of vs into one chunk payload.
func (b *streamBuilder) records(vs ...any) []byte {
	var out []byte
	for _, v := range vs {
		out = append(out, encodeRec(b.t, v)...)
	}
	return out
}

func (b *streamBuilder) done() []byte {
	must(b.t, b.f.trailer())
	return b.buf.Bytes()
}

func must(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err wraps target.
func wantErr(t fataler, err, target error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", target)
	}
	if !errors.Is(err, target) {
		t.Fatalf("got error %q, want one wrapping %v", err, target)
	}
}

// dump renders pointers' targets for failure messages.
func dump(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return fmt.Sprintf("%+v", v)
	}
	var b strings.Builder
	for i := 0; i < rv.Len(); i++ {
		e := rv.Index(i)
		if e.Kind() == reflect.Pointer && !e.IsNil() {
			e = e.Elem()
		}
		fmt.Fprintf(&b, "\n  %+v", e.Interface())
	}
	return b.String()
}

// fataler is what the helpers need of *testing.T, *testing.B and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
