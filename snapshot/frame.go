package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// castagnoli is CRC-32C, hardware-accelerated on amd64 and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameWriter writes the container framing (magic, header frame, section
// starts, chunks, terminators, trailer) and keeps the running CRC of every
// byte written, which the trailer carries. The Writer drives it in the
// order the format demands; tests drive it directly to build streams the
// Writer would refuse to produce.
type frameWriter struct {
	w       io.Writer
	crc     uint32
	off     int64
	scratch [2 + MaxSectionNameLen + chunkFrameLen + terminatorCountLen]byte
}

func (f *frameWriter) write(p []byte) error {
	n, err := f.w.Write(p)
	f.crc = crc32.Update(f.crc, castagnoli, p[:n])
	f.off += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

func (f *frameWriter) magic() error { return f.write([]byte(Magic)) }

// header writes [u32 len][u32 CRC-32C][msgpack header].
func (f *frameWriter) header(body []byte) error {
	b := f.scratch[:0]
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	if err := f.write(b); err != nil {
		return err
	}
	return f.write(body)
}

// sectionStart writes ['S'][u8 name length][name].
func (f *frameWriter) sectionStart(name string) error {
	b := append(f.scratch[:0], tagSection, byte(len(name)))
	return f.write(append(b, name...))
}

// chunk writes one chunk. frame holds chunkFrameLen reserved bytes followed
// by the payload, so the chunk goes out in a single Write.
func (f *frameWriter) chunk(frame []byte) error {
	payload := frame[chunkFrameLen:]
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(frame[4:8], crc32.Checksum(payload, castagnoli))
	return f.write(frame)
}

// terminator writes the zero-length chunk that ends a section:
// [u32 0][u32 CRC-32C of the count][u64 record count].
func (f *frameWriter) terminator(count uint64) error {
	b := f.scratch[:chunkFrameLen+terminatorCountLen]
	binary.BigEndian.PutUint32(b[0:4], 0)
	binary.BigEndian.PutUint64(b[8:16], count)
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(b[8:16], castagnoli))
	return f.write(b)
}

// trailer writes ['E'][u32 CRC-32C of every byte from the magic through
// the 'E'].
func (f *frameWriter) trailer() error {
	if err := f.write([]byte{tagEnd}); err != nil {
		return err
	}
	b := binary.BigEndian.AppendUint32(f.scratch[:0], f.crc)
	return f.write(b)
}

// streamReader reads the stream through a buffer, tracking the offset for
// error messages and the running CRC the trailer is checked against.
type streamReader struct {
	br  *bufio.Reader
	crc uint32
	off int64
}

func newStreamReader(r io.Reader) *streamReader {
	return &streamReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// readFull fills p; running out of input is ErrTruncated naming what was
// being read and where.
func (s *streamReader) readFull(p []byte, what string) error {
	n, err := io.ReadFull(s.br, p)
	s.crc = crc32.Update(s.crc, castagnoli, p[:n])
	s.off += int64(n)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: stream ends at offset %d inside %s", ErrTruncated, s.off, what)
	}
	return fmt.Errorf("snapshot: reading %s at offset %d: %w", what, s.off, err)
}

func (s *streamReader) readByte(what string) (byte, error) {
	var b [1]byte
	err := s.readFull(b[:], what)
	return b[0], err
}

// expectEOF refuses any byte after the trailer.
func (s *streamReader) expectEOF() error {
	_, err := s.br.ReadByte()
	switch {
	case err == nil:
		return fmt.Errorf("%w: data after the trailer at offset %d", ErrCorrupt, s.off)
	case errors.Is(err, io.EOF):
		return nil
	default:
		return fmt.Errorf("snapshot: reading after the trailer at offset %d: %w", s.off, err)
	}
}
