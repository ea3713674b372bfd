package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// Sink receives a snapshot's contents as Read decodes them, in stream
// order: Header first, then the records of each section. Every pointer is
// freshly allocated and the raw bytes are a copy, so the sink may keep
// them. A sink error stops Read, which returns it wrapped.
//
// Read calls the sink before it has seen the trailer: a sink must build a
// fresh state and adopt it only if Read returns nil.
type Sink interface {
	Header(h Header) error
	Object(o *Object) error
	Segment(s *Segment) error
	Task(t *Task) error
	State(s *State) error
	Session(s *SessionRecord) error
	Job(j *Job) error
	DFSRecord(raw []byte) error
}

// Read decodes a snapshot of format 1.4.0, 1.3.0, 1.2.0, 1.1.0 or 1.0.0
// from r, handing its contents to sink. It returns nil only if the whole
// stream, trailer included, is intact and nothing follows it; any damage
// is an error wrapping one of the package's sentinels, with the section and
// the byte offset. A record of an older format carrying a field a later
// format added is refused, never read with the field dropped. A 1.2.0
// snapshot has no job records; a 1.1.0 one no session records. A
// 1.0.0 snapshot reaches the sink converted to 1.1.0 records (incarnation
// zero, COMPLETE, LOCAL_DISK replicas, mount epoch zero, no capabilities)
// and without tasks, state, session or DFS records.
func Read(r io.Reader, sink Sink) (Header, error) {
	sr := newStreamReader(r)
	h, err := readHead(sr)
	if err != nil {
		return Header{}, err
	}
	if err := sink.Header(h); err != nil {
		return h, fmt.Errorf("snapshot: sink refused the header: %w", err)
	}
	sec := &sectionReader{sr: sr, sink: sink, format: h.Format}
	spec := formatSpecs[h.Format]
	next := 0
	for {
		at := sr.off
		tag, err := sr.readByte("a frame tag")
		if err != nil {
			return h, err
		}
		switch tag {
		case tagSection:
			idx, err := readSectionName(sr, spec, next, h.Format, at)
			if err != nil {
				return h, err
			}
			if err := sec.read(spec[idx]); err != nil {
				return h, err
			}
			next = idx + 1
		case tagEnd:
			want := sr.crc
			var b [4]byte
			if err := sr.readFull(b[:], "the trailer"); err != nil {
				return h, err
			}
			if got := binary.BigEndian.Uint32(b[:]); got != want {
				return h, fmt.Errorf("%w: trailer at offset %d: stored CRC %08x, stream CRC %08x", ErrChecksum, at, got, want)
			}
			if err := missingBetween(spec, next, len(spec), "the trailer", at); err != nil {
				return h, err
			}
			return h, sr.expectEOF()
		default:
			return h, fmt.Errorf("%w: frame tag 0x%02x at offset %d is neither a section nor the trailer", ErrCorrupt, tag, at)
		}
	}
}

// readHead reads the magic and the header frame.
func readHead(sr *streamReader) (Header, error) {
	var magic [len(Magic)]byte
	if err := sr.readFull(magic[:], "the magic"); err != nil {
		return Header{}, err
	}
	if string(magic[:]) != Magic {
		return Header{}, fmt.Errorf("%w: stream starts with %q, want %q", ErrBadMagic, magic[:], Magic)
	}
	var frame [headerFrameLen]byte
	if err := sr.readFull(frame[:], "the header frame"); err != nil {
		return Header{}, err
	}
	n := binary.BigEndian.Uint32(frame[0:4])
	if n == 0 {
		return Header{}, fmt.Errorf("%w: empty header at offset %d", ErrCorrupt, len(Magic))
	}
	if n > MaxHeaderLen {
		return Header{}, fmt.Errorf("%w: header claims %d bytes, at most %d", ErrTooLarge, n, MaxHeaderLen)
	}
	body := make([]byte, n)
	if err := sr.readFull(body, "the header"); err != nil {
		return Header{}, err
	}
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(frame[4:8]); got != want {
		return Header{}, fmt.Errorf("%w: header: stored CRC %08x, computed %08x", ErrChecksum, want, got)
	}
	h, err := decodeHeader(body)
	if err != nil {
		return Header{}, fmt.Errorf("snapshot: header at offset %d: %w", len(Magic)+headerFrameLen, err)
	}
	return h, nil
}

// readSectionName reads a section's name and checks it may come next.
func readSectionName(sr *streamReader, spec []sectionSpec, next int, format string, at int64) (int, error) {
	n, err := sr.readByte("a section name length")
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: empty section name at offset %d", ErrCorrupt, at)
	}
	if n > MaxSectionNameLen {
		return 0, fmt.Errorf("%w: section name at offset %d claims %d bytes, at most %d", ErrTooLarge, at, n, MaxSectionNameLen)
	}
	var buf [MaxSectionNameLen]byte
	name := buf[:n]
	if err := sr.readFull(name, "a section name"); err != nil {
		return 0, err
	}
	idx := sectionIndex(spec, string(name))
	switch {
	case idx < 0:
		return 0, fmt.Errorf("%w: section %q at offset %d is not part of format %s", ErrUnknownSection, name, at, format)
	case idx < next:
		return 0, fmt.Errorf("%w: section %q at offset %d comes after section %q (repeated or out of order)", ErrSectionOrder, name, at, spec[next-1].name)
	}
	if err := missingBetween(spec, next, idx, fmt.Sprintf("section %q", name), at); err != nil {
		return 0, err
	}
	return idx, nil
}

// missingBetween refuses a required section in spec[from:to] (skipped).
func missingBetween(spec []sectionSpec, from, to int, reached string, at int64) error {
	for i := from; i < to; i++ {
		if spec[i].required {
			return fmt.Errorf("%w: required section %q is absent (reached %s at offset %d)", ErrMissingSection, spec[i].name, reached, at)
		}
	}
	return nil
}

// sectionReader reads one section's chunks into a reused buffer and
// decodes their records.
type sectionReader struct {
	sr     *streamReader
	sink   Sink
	format string
	buf    []byte
	in     interner
}

func (s *sectionReader) read(spec sectionSpec) error {
	decode := recordDecoder(s.format, spec.name)
	var count uint64
	for {
		at := s.sr.off
		var frame [chunkFrameLen]byte
		if err := s.sr.readFull(frame[:], fmt.Sprintf("a chunk frame of section %q", spec.name)); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(frame[0:4])
		stored := binary.BigEndian.Uint32(frame[4:8])
		if n == 0 {
			return s.terminate(spec, count, stored, at)
		}
		if n > MaxChunkLen {
			return fmt.Errorf("%w: section %q chunk at offset %d claims %d bytes, at most %d", ErrTooLarge, spec.name, at, n, MaxChunkLen)
		}
		if cap(s.buf) < int(n) {
			s.buf = make([]byte, n)
		}
		payload := s.buf[:n]
		if err := s.sr.readFull(payload, fmt.Sprintf("a chunk of section %q", spec.name)); err != nil {
			return err
		}
		if got := crc32.Checksum(payload, castagnoli); got != stored {
			return fmt.Errorf("%w: section %q chunk at offset %d: stored CRC %08x, computed %08x", ErrChecksum, spec.name, at, stored, got)
		}
		mr := &mpReader{b: payload, in: &s.in}
		for mr.remaining() > 0 {
			if spec.singleton && count > 0 {
				return fmt.Errorf("%w: section %q chunk at offset %d: a second record; the section holds exactly one", ErrCorrupt, spec.name, at)
			}
			recAt := mr.off
			if err := decode(mr, s.sink); err != nil {
				return fmt.Errorf("snapshot: section %q record %d (chunk at offset %d, byte %d): %w", spec.name, count, at, recAt, err)
			}
			count++
		}
	}
}

// terminate checks a section's terminator: the count's CRC, then that it
// matches the records read, so a dropped or added chunk is caught here.
func (s *sectionReader) terminate(spec sectionSpec, count uint64, stored uint32, at int64) error {
	var b [terminatorCountLen]byte
	if err := s.sr.readFull(b[:], fmt.Sprintf("the terminator of section %q", spec.name)); err != nil {
		return err
	}
	if got := crc32.Checksum(b[:], castagnoli); got != stored {
		return fmt.Errorf("%w: section %q terminator at offset %d: stored CRC %08x, computed %08x", ErrChecksum, spec.name, at, stored, got)
	}
	claimed := binary.BigEndian.Uint64(b[:])
	if claimed > MaxSectionRecords {
		return fmt.Errorf("%w: section %q terminator at offset %d claims %d records, at most %d", ErrTooLarge, spec.name, at, claimed, uint64(MaxSectionRecords))
	}
	if claimed != count {
		return fmt.Errorf("%w: section %q terminator at offset %d claims %d records, the chunks held %d", ErrCorrupt, spec.name, at, claimed, count)
	}
	if spec.singleton && count != 1 {
		return fmt.Errorf("%w: section %q holds %d records, exactly one is required", ErrCorrupt, spec.name, count)
	}
	return nil
}

// recordDecode decodes one record from mr and hands it to sink.
type recordDecode func(mr *mpReader, sink Sink) error

func recordDecoder(format, section string) recordDecode {
	if format == Format100 {
		switch section {
		case SectionMetadata:
			return decodeObject100Record
		default:
			return decodeSegment100Record
		}
	}
	switch section {
	case SectionMetadata:
		return decodeObjectRecord
	case SectionSegments:
		return func(mr *mpReader, sink Sink) error { return decodeSegmentRecord(mr, sink, format) }
	case SectionTasks:
		return decodeTaskRecord
	case SectionState:
		return func(mr *mpReader, sink Sink) error { return decodeStateRecord(mr, sink, format) }
	case SectionSessions:
		return decodeSessionRec
	case SectionJobs:
		return func(mr *mpReader, sink Sink) error { return decodeJobRec(mr, sink, format) }
	default:
		return decodeDFSRecord
	}
}

func corrupt(err error) error { return fmt.Errorf("%w: %v", ErrCorrupt, err) }

// objectBlock allocates an object and its single replica in one go.
type objectBlock struct {
	o   Object
	rep [1]api.ReplicaDescriptor
}

func decodeObjectRecord(mr *mpReader, sink Sink) error {
	blk := new(objectBlock)
	o := &blk.o
	if err := decodeObject(mr, o, &blk.rep); err != nil {
		return err
	}
	if err := validateObject(o); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Object(o))
}

func decodeObject100Record(mr *mpReader, sink Sink) error {
	o := new(Object)
	if err := decodeObject100(mr, o); err != nil {
		return err
	}
	if err := validateObject(o); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Object(o))
}

func decodeSegmentRecord(mr *mpReader, sink Sink, format string) error {
	s := new(Segment)
	if err := decodeSegment(mr, s, format); err != nil {
		return err
	}
	if err := validateSegment(s); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Segment(s))
}

func decodeSegment100Record(mr *mpReader, sink Sink) error {
	s := new(Segment)
	if err := decodeSegment100(mr, s); err != nil {
		return err
	}
	if err := validateSegment(s); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Segment(s))
}

func decodeTaskRecord(mr *mpReader, sink Sink) error {
	t := new(Task)
	if err := decodeTask(mr, t); err != nil {
		return err
	}
	if err := validateTask(t); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Task(t))
}

func decodeStateRecord(mr *mpReader, sink Sink, format string) error {
	s := new(State)
	if err := decodeState(mr, s, format); err != nil {
		return err
	}
	if err := validateState(s); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.State(s))
}

func decodeSessionRec(mr *mpReader, sink Sink) error {
	s := new(SessionRecord)
	if err := decodeSessionRecord(mr, s); err != nil {
		return err
	}
	if err := validateSession(s); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Session(s))
}

// decodeJobRec decodes a job record of format strictly: the bounded walk
// first (no claimed length beyond the bytes at hand), then the fields,
// refusing any this build or the format does not know, then the job's own
// bounds.
func decodeJobRec(mr *mpReader, sink Sink, format string) error {
	start := mr.off
	if err := mr.skip(); err != nil {
		return err
	}
	raw := mr.b[start:mr.off]
	if !atLeast140(format) {
		if err := refuseJobField(raw, "kept", format, Format140); err != nil {
			return err
		}
	}
	j := new(Job)
	dec := msgpack.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(j); err != nil {
		return corrupt(err)
	}
	if err := validateJob(j); err != nil {
		return corrupt(err)
	}
	return sinkErr(sink.Job(j))
}

// refuseJobField refuses a job record (already walked by skip) that names
// the field a later format (since) added: the reflection decoder would
// take it whatever the stream's format.
func refuseJobField(raw []byte, field, format, since string) error {
	r := &mpReader{b: raw}
	n, err := r.recordMap("job")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := r.strBytes("job field name")
		if err != nil {
			return err
		}
		if string(name) == field {
			return errNewerField("job", name, format, since)
		}
		if err := r.skip(); err != nil {
			return err
		}
	}
	return nil
}

func decodeDFSRecord(mr *mpReader, sink Sink) error {
	start := mr.off
	if err := mr.skip(); err != nil {
		return err
	}
	raw := bytes.Clone(mr.b[start:mr.off])
	return sinkErr(sink.DFSRecord(raw))
}

func sinkErr(err error) error {
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// DecodeDFSRecord unmarshals a raw dfs_buckets record handed to
// Sink.DFSRecord into v, refusing fields v does not have. The record is
// first walked by the bounded reader: msgpack's reflection decoder
// allocates a claimed array length whole, so every claim must first be
// shown to fit the bytes at hand.
func DecodeDFSRecord(raw []byte, v any) error {
	mr := &mpReader{b: raw}
	if err := mr.skip(); err != nil {
		return err
	}
	if mr.remaining() != 0 {
		return fmt.Errorf("%w: %d bytes after the dfs record", ErrCorrupt, mr.remaining())
	}
	dec := msgpack.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(v); err != nil {
		return corrupt(err)
	}
	return nil
}
