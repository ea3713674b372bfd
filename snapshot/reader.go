package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Sink receives a snapshot's contents as Read decodes them, in stream
// order: Header first, then each section: Section with its name as the
// section begins, then the function it returned with each of its records
// (*Object in metadata, *Segment in segments, *State in state, *Task in
// local_delete_tasks, *SessionRecord in sessions, *Job in jobs, the raw
// []byte of a dfs_buckets record). Every pointer is freshly allocated and
// the raw bytes are a copy, so the sink may keep them. A sink error stops
// Read, which returns it wrapped.
//
// Read calls the sink before it has seen the trailer: a sink must build a
// fresh state and adopt it only if Read returns nil.
type Sink interface {
	Header(h Header) error
	Section(name string) (func(rec any) error, error)
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
func readSectionName(sr *streamReader, spec []*sectionSpec, next int, format string, at int64) (int, error) {
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
func missingBetween(spec []*sectionSpec, from, to int, reached string, at int64) error {
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

func (s *sectionReader) read(spec *sectionSpec) error {
	deliver, err := s.sink.Section(spec.name)
	if err != nil {
		return fmt.Errorf("snapshot: section %q: %w", spec.name, sinkErr(err))
	}
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
			rec, err := spec.get(mr, s.format)
			if err == nil {
				err = sinkErr(deliver(rec))
			}
			if err != nil {
				return fmt.Errorf("snapshot: section %q record %d (chunk at offset %d, byte %d): %w", spec.name, count, at, recAt, err)
			}
			count++
		}
	}
}

// terminate checks a section's terminator: the count's CRC, then that it
// matches the records read, so a dropped or added chunk is caught here.
func (s *sectionReader) terminate(spec *sectionSpec, count uint64, stored uint32, at int64) error {
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

func corrupt(err error) error { return fmt.Errorf("%w: %v", ErrCorrupt, err) }

func sinkErr(err error) error {
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}
