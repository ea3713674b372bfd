package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/testutil"
)

// A minimal valid 1.1.0 body, for tests that change one thing.
func validObject() Object {
	return Object{Key: "k", State: ObjectComplete, Incarnation: api.ObjectIncarnation{High: 1, Low: 2},
		Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "s"}}}
}

func validSegment() Segment { return Segment{ID: "s"} }
func validTask() Task       { return Task{ID: 1, Segment: "s", Key: "k"} }
func validState() State     { return State{MasterEpoch: 1} }

// sections110 writes every required 1.1.0 section with one record each.
func sections110(b *streamBuilder) *streamBuilder {
	b.section(SectionMetadata, 1, b.records(validObject()))
	b.section(SectionSegments, 1, b.records(validSegment()))
	b.section(SectionTasks, 1, b.records(validTask()))
	return b.section(SectionState, 1, b.records(validState()))
}

func TestBuilderBaselineIsAccepted(t *testing.T) {
	// The refusal tests below differ from this stream in one respect each;
	// it must read cleanly or they would prove nothing.
	if _, err := readAll(sections110(newStream(t, fixtureHeader)).done()); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesBadMagic(t *testing.T) {
	data := writeFixture110(t)
	data[0] = 'X'
	_, err := readAll(data)
	wantErr(t, err, ErrBadMagic)
}

func TestRefusesUnknownFormat(t *testing.T) {
	for _, format := range []string{"1.5.0", "2.0.0", "", "1.1", "1.4"} {
		h := fixtureHeader
		h.Format = format
		_, err := readAll(sections110(newStream(t, h)).done())
		wantErr(t, err, ErrUnknownFormat)
	}
	// A future header with fields this build lacks still says "unknown
	// format", not "unknown field".
	future := map[string]any{"format": "1.5.0", "shiny": true}
	_, err := readAll(sections110(newStream(t, future)).done())
	wantErr(t, err, ErrUnknownFormat)
}

func TestRefusesUnknownHeaderField(t *testing.T) {
	h := map[string]any{"format": Format110, "cluster": 1, "extra": 2}
	_, err := readAll(sections110(newStream(t, h)).done())
	wantErr(t, err, ErrCorrupt)
}

func TestRefusesUnknownSection(t *testing.T) {
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 0)
	b.section("metadata_v2", 0)
	_, err := readAll(b.done())
	wantErr(t, err, ErrUnknownSection)

	// A 1.1.0 section inside a 1.0.0 snapshot is unknown to that format.
	b = newStream(t, fixtureHeader100)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0)
	_, err = readAll(b.done())
	wantErr(t, err, ErrUnknownSection)
}

func TestRefusesOutOfOrderSection(t *testing.T) {
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 0)
	b.section(SectionTasks, 0) // segments skipped
	b.section(SectionSegments, 0)
	_, err := readAll(b.done())
	wantErr(t, err, ErrMissingSection)

	b = newStream(t, fixtureHeader)
	sections110(b)
	b.section(SectionSegments, 0) // back to an earlier section
	_, err = readAll(b.done())
	wantErr(t, err, ErrSectionOrder)
}

func TestRefusesRepeatedSection(t *testing.T) {
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 1, b.records(validObject()))
	b.section(SectionMetadata, 1, b.records(validObject()))
	_, err := readAll(b.done())
	wantErr(t, err, ErrSectionOrder)
}

func TestRefusesMissingRequiredSection(t *testing.T) {
	for _, skip := range []string{SectionMetadata, SectionSegments, SectionTasks, SectionState} {
		b := newStream(t, fixtureHeader)
		for _, s := range formatSpecs[Format110] {
			if s.name == skip || !s.required {
				continue
			}
			if s.singleton {
				b.section(s.name, 1, b.records(validState()))
			} else {
				b.section(s.name, 0)
			}
		}
		_, err := readAll(b.done())
		wantErr(t, err, ErrMissingSection)
	}
}

func TestOptionalDFSSectionMayBeAbsent(t *testing.T) {
	got, err := readAll(sections110(newStream(t, fixtureHeader)).done())
	must(t, err)
	if len(got.dfs) != 0 || len(got.states) != 1 {
		t.Fatalf("dfs %d states %d", len(got.dfs), len(got.states))
	}
}

func TestRefusesSecondStateRecord(t *testing.T) {
	// In one chunk and across two chunks.
	for _, chunks := range [][][]byte{
		{encodeRec(t, validState()), encodeRec(t, validState())},
		{append(encodeRec(t, validState()), encodeRec(t, validState())...)},
	} {
		b := newStream(t, fixtureHeader)
		b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0)
		b.section(SectionState, 2, chunks...)
		_, err := readAll(b.done())
		wantErr(t, err, ErrCorrupt)
	}
}

func TestRefusesEmptyStateSection(t *testing.T) {
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 0)
	_, err := readAll(b.done())
	wantErr(t, err, ErrCorrupt)
}

func TestRefusesDroppedChunk(t *testing.T) {
	// Two chunks were written (count 2) but only one arrived; every CRC,
	// the trailer's included, is consistent with what arrived.
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 2, b.records(validObject()))
	b.section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 1, b.records(validState()))
	_, err := readAll(b.done())
	wantErr(t, err, ErrCorrupt)
}

func TestRefusesUnknownRecordField(t *testing.T) {
	type objectPlus struct {
		Object `msgpack:",inline"`
		Extra  int `msgpack:"extra"`
	}
	type segmentPlus struct {
		Segment `msgpack:",inline"`
		Extra   int `msgpack:"extra"`
	}
	type taskPlus struct {
		Task  `msgpack:",inline"`
		Extra int `msgpack:"extra"`
	}
	type statePlus struct {
		State `msgpack:",inline"`
		Extra int `msgpack:"extra"`
	}
	cases := map[string]func(b *streamBuilder){
		"object": func(b *streamBuilder) {
			b.section(SectionMetadata, 1, b.records(objectPlus{Object: validObject(), Extra: 1}))
			b.section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 1, b.records(validState()))
		},
		"segment": func(b *streamBuilder) {
			b.section(SectionMetadata, 0).section(SectionSegments, 1, b.records(segmentPlus{Segment: validSegment(), Extra: 1}))
			b.section(SectionTasks, 0).section(SectionState, 1, b.records(validState()))
		},
		"task": func(b *streamBuilder) {
			b.section(SectionMetadata, 0).section(SectionSegments, 0)
			b.section(SectionTasks, 1, b.records(taskPlus{Task: validTask(), Extra: 1}))
			b.section(SectionState, 1, b.records(validState()))
		},
		"state": func(b *streamBuilder) {
			b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0)
			b.section(SectionState, 1, b.records(statePlus{State: validState(), Extra: 1}))
		},
	}
	for name, build := range cases {
		b := newStream(t, fixtureHeader)
		build(b)
		_, err := readAll(b.done())
		wantErr(t, err, ErrCorrupt)
		if !bytes.Contains([]byte(err.Error()), []byte(`unknown field "extra"`)) {
			t.Fatalf("%s: error %q does not name the field", name, err)
		}
	}
	// A 1.1.0 field in a 1.0.0 record is unknown there.
	b := newStream(t, fixtureHeader100)
	b.section(SectionMetadata, 1, b.records(validObject())).section(SectionSegments, 0)
	_, err := readAll(b.done())
	wantErr(t, err, ErrCorrupt)
}

func TestRefusesRepeatedRecordField(t *testing.T) {
	rec := []byte{0x82, 0xa1, 'h', 0x01, 0xa1, 'h', 0x02} // {h:1, h:2}
	var inc api.ObjectIncarnation
	wantErr(t, decodeIncarnation(&mpReader{b: rec}, &inc), ErrCorrupt)
}

func TestRefusesInvalidRecordContents(t *testing.T) {
	bad := []Object{
		{Key: "", State: ObjectComplete},
		{Key: "k", State: 9},
		{Key: "k", State: ObjectComplete, Replicas: []api.ReplicaDescriptor{{Kind: 7, Segment: "s"}}},
		{Key: "k", State: ObjectComplete, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaDFS}}},
		{Key: "k", State: ObjectComplete, Size: -1},
	}
	for _, o := range bad {
		b := newStream(t, fixtureHeader)
		b.section(SectionMetadata, 1, b.records(o))
		b.section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 1, b.records(validState()))
		_, err := readAll(b.done())
		wantErr(t, err, ErrCorrupt)
	}
}

func TestRefusesRecordSplitAcrossChunks(t *testing.T) {
	rec := encodeRec(t, validObject())
	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 1, rec[:5], rec[5:])
	b.section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 1, b.records(validState()))
	_, err := readAll(b.done())
	wantErr(t, err, ErrCorrupt)
}

func TestRefusesTrailingData(t *testing.T) {
	data := append(writeFixture110(t), 0)
	_, err := readAll(data)
	wantErr(t, err, ErrCorrupt)
	data = append(writeFixture110(t), writeFixture110(t)...)
	_, err = readAll(data)
	wantErr(t, err, ErrCorrupt)
}

// goldens returns every checked-in golden file.
func goldens(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for _, p := range []string{golden140, golden140Closed, golden130, golden120, golden110, golden100} {
		data, err := os.ReadFile(p)
		must(t, err)
		out[p] = data
	}
	return out
}

func TestRefusesEveryTruncation(t *testing.T) {
	for name, data := range goldens(t) {
		if _, err := readAll(data); err != nil {
			t.Fatalf("%s whole: %v", name, err)
		}
		for n := 0; n < len(data); n++ {
			_, err := readAll(data[:n])
			if err == nil {
				t.Fatalf("%s: prefix of %d of %d bytes read without error", name, n, len(data))
			}
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: prefix of %d bytes: %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func TestRefusesEveryFlippedBit(t *testing.T) {
	for name, data := range goldens(t) {
		buf := bytes.Clone(data)
		for i := range buf {
			for bit := 0; bit < 8; bit++ {
				buf[i] ^= 1 << bit
				h, c, err := Inspect(bytes.NewReader(buf))
				if err == nil {
					t.Fatalf("%s: bit %d of byte %d flipped, read without error: %+v %+v", name, bit, i, h, c)
				}
				buf[i] ^= 1 << bit
			}
		}
	}
}

func TestRefusesChecksumMismatchByName(t *testing.T) {
	data := writeFixture110(t)
	// Flip a byte inside the first chunk's payload: the chunk CRC names it.
	i := bytes.Index(data, []byte("alpha/one"))
	data[i] ^= 0x20
	_, err := readAll(data)
	wantErr(t, err, ErrChecksum)
	if !bytes.Contains([]byte(err.Error()), []byte(`section "metadata"`)) {
		t.Fatalf("error %q does not name the section", err)
	}
}

func TestRefusesOversizedLengthsWithoutAllocating(t *testing.T) {
	const budget = 4 << 20 // far below any of the claims
	head := func() *streamBuilder { return newStream(t, fixtureHeader) }
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

	type refusal struct {
		data []byte
		want error
	}
	cases := map[string]refusal{}
	// Header claiming 4 GiB.
	hdr := append([]byte(Magic), be32(0xffffffff)...)
	cases["header length"] = refusal{append(hdr, 0, 0, 0, 0), ErrTooLarge}
	// Section name claiming 255 bytes.
	b := head()
	b.buf.Write([]byte{tagSection, 0xff})
	cases["section name length"] = refusal{b.buf.Bytes(), ErrTooLarge}
	// Chunk claiming 4 GiB.
	b = head()
	must(t, b.f.sectionStart(SectionMetadata))
	b.buf.Write(be32(0xffffffff))
	b.buf.Write(be32(0))
	cases["chunk length"] = refusal{b.buf.Bytes(), ErrTooLarge}
	// A record whose replicas array claims 2^32-1 elements, inside a valid
	// chunk: msgpack reflection would allocate them all.
	rec := encodeRec(t, validObject())
	i := bytes.Index(rec, []byte("replicas")) + len("replicas")
	huge := append(bytes.Clone(rec[:i]), 0xdd, 0xff, 0xff, 0xff, 0xff)
	b = head()
	b.section(SectionMetadata, 1, huge)
	cases["array claim"] = refusal{b.done(), ErrCorrupt}
	// A key string claiming 4 GiB.
	strRec := []byte{0x81, 0xa3, 'k', 'e', 'y', 0xdb, 0xff, 0xff, 0xff, 0xff}
	b = head()
	b.section(SectionMetadata, 1, strRec)
	cases["string claim"] = refusal{b.done(), ErrCorrupt}
	// A terminator claiming 2^63 records.
	b = head()
	must(t, b.f.sectionStart(SectionMetadata))
	must(t, b.f.terminator(1<<63))
	cases["record count"] = refusal{b.buf.Bytes(), ErrTooLarge}

	for name, c := range cases {
		var err error
		alloc := testutil.AllocatedDuring(func() { _, err = readAll(c.data) })
		if err == nil || !errors.Is(err, c.want) {
			t.Fatalf("%s: got %v, want %v", name, err, c.want)
		}
		if alloc > budget {
			t.Fatalf("%s: refusing allocated %d bytes", name, alloc)
		}
	}
}

type failingSink struct{ collectSink }

var errSinkFull = errors.New("sink full")

func (f *failingSink) Section(name string) (func(any) error, error) {
	if name == SectionSegments {
		return func(any) error { return errSinkFull }, nil
	}
	return f.collectSink.Section(name)
}

func TestSinkErrorStopsRead(t *testing.T) {
	s := &failingSink{}
	_, err := Read(bytes.NewReader(writeFixture110(t)), s)
	wantErr(t, err, errSinkFull)
	if len(s.tasks) != 0 || len(s.states) != 0 {
		t.Fatalf("Read went on after the sink failed: %d tasks, %d states", len(s.tasks), len(s.states))
	}
}

// sections120 writes every required 1.2.0 section, state before tasks,
// with the given session records.
func sections120(b *streamBuilder, sessions ...any) *streamBuilder {
	b.section(SectionMetadata, 1, b.records(validObject()))
	b.section(SectionSegments, 1, b.records(validSegment()))
	b.section(SectionState, 1, b.records(validState()))
	b.section(SectionTasks, 1, b.records(validTask()))
	if len(sessions) == 0 {
		return b.section(SectionSessions, 0)
	}
	return b.section(SectionSessions, uint64(len(sessions)), b.records(sessions...))
}

var (
	header120 = Header{Format: Format120, ClusterID: 1}
	header140 = Header{Format: Format140, ClusterID: 1}
)

func TestBuilderBaseline120IsAccepted(t *testing.T) {
	got, err := readAll(sections120(newStream(t, header120), SessionRecord{ClientID: "c", Floor: 1}).done())
	must(t, err)
	if len(got.sessions) != 1 || got.sessions[0].ClientID != "c" {
		t.Fatalf("sessions %s", dump(got.sessions))
	}
}

// TestRefuses120FieldsIn110: a 1.1.0 stream carrying anything 1.2.0 added
// is refused, never read with the field dropped.
func TestRefuses120FieldsIn110(t *testing.T) {
	withProcess := map[string]any{"id": "s", "process": "p"}
	withSettings := map[string]any{"master_epoch": 1, "settings": map[string]any{"registry_cap": 5}}
	withKey := map[string]any{"master_epoch": 1, "grant_key": make([]byte, api.GrantKeyLen)}
	withIncBase := map[string]any{"master_epoch": 1, "inc_base": 900}
	withRebuild := map[string]any{"master_epoch": 1, "rebuild_cluster": 7}
	withLegacy := map[string]any{"master_epoch": 1, "legacy_settings": map[string]any{"registry_cap": 60000}}

	b := newStream(t, fixtureHeader)
	b.section(SectionMetadata, 0).section(SectionSegments, 1, b.records(withProcess))
	_, err := readAll(b.done())
	wantErr(t, err, ErrCorrupt)

	for _, st := range []any{withSettings, withKey, withIncBase, withRebuild, withLegacy} {
		b = newStream(t, fixtureHeader)
		b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0).section(SectionState, 1, b.records(st))
		_, err = readAll(b.done())
		wantErr(t, err, ErrCorrupt)
	}

	b = sections110(newStream(t, fixtureHeader))
	b.section(SectionSessions, 0)
	_, err = readAll(b.done())
	wantErr(t, err, ErrUnknownSection)

	// The same fields read in 1.2.0 (legacy settings, a 1.4.0 field, in 1.4.0).
	b = newStream(t, header120)
	b.section(SectionMetadata, 0).section(SectionSegments, 1, b.records(withProcess)).section(SectionState, 1, b.records(withSettings)).
		section(SectionTasks, 0).section(SectionSessions, 0)
	_, err = readAll(b.done())
	must(t, err)
	b = newStream(t, header140)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionState, 1, b.records(withLegacy)).
		section(SectionTasks, 0).section(SectionSessions, 0).section(SectionJobs, 0)
	_, err = readAll(b.done())
	must(t, err)

	// A state is either in legacy settings or in replicated ones, never both.
	both := map[string]any{"master_epoch": 1, "settings": map[string]any{"registry_cap": 5}, "legacy_settings": map[string]any{"registry_cap": 6}}
	b = newStream(t, header140)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionState, 1, b.records(both)).
		section(SectionTasks, 0).section(SectionSessions, 0).section(SectionJobs, 0)
	_, err = readAll(b.done())
	wantErr(t, err, ErrCorrupt)
	if !strings.Contains(err.Error(), "both replicated and legacy settings") {
		t.Fatalf("refused for another reason: %v", err)
	}
}

func TestRefuses120SectionOrder(t *testing.T) {
	// 1.1.0's order (tasks, then state) is not 1.2.0's.
	b := newStream(t, header120)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionTasks, 0)
	_, err := readAll(b.done())
	wantErr(t, err, ErrMissingSection)
	// No sessions section.
	b = newStream(t, header120)
	b.section(SectionMetadata, 0).section(SectionSegments, 0).section(SectionState, 1, b.records(validState())).section(SectionTasks, 0)
	_, err = readAll(b.done())
	wantErr(t, err, ErrMissingSection)
}

func TestRefusesBadSessionRecords(t *testing.T) {
	bigItems := make([]any, maxSessionItems+1)
	for i := range bigItems {
		bigItems[i] = map[string]any{"i": i}
	}
	for name, rec := range map[string]any{
		"no client":          map[string]any{"floor": 1},
		"unknown field":      map[string]any{"client": "c", "extra": 1},
		"client too long":    map[string]any{"client": string(make([]byte, api.MaxIDLen+1))},
		"unknown in result":  map[string]any{"client": "c", "result": map[string]any{"seq": 1, "x": 1}},
		"error without code": map[string]any{"client": "c", "result": map[string]any{"seq": 1, "err": map[string]any{"msg": "m"}}},
		"message too long":   map[string]any{"client": "c", "result": map[string]any{"seq": 1, "err": map[string]any{"code": "X", "msg": string(make([]byte, maxErrMessageLen+1))}}},
		"too many items":     map[string]any{"client": "c", "result": map[string]any{"seq": 1, "items": bigItems}},
		"negative count":     map[string]any{"client": "c", "result": map[string]any{"seq": 1, "n": -1}},
		"too many replicas":  map[string]any{"client": "c", "result": map[string]any{"seq": 1, "reps": make([]any, api.MaxReplicas+1)}},
		"bad replica":        map[string]any{"client": "c", "result": map[string]any{"seq": 1, "reps": []any{map[string]any{"kind": 9}}}},
	} {
		_, err := readAll(sections120(newStream(t, header120), rec).done())
		if err == nil {
			t.Fatalf("%s: read without error", name)
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
