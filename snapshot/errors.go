package snapshot

import "errors"

// Sentinel errors. Every error Read, Inspect or the Writer returns wraps one
// of them (or an error of the Sink or the underlying io.Reader/io.Writer),
// with detail naming the section and the byte offset. Test with errors.Is.
var (
	// ErrBadMagic: the stream does not start with the snapshot magic.
	ErrBadMagic = errors.New("snapshot: bad magic")
	// ErrUnknownFormat: the header names a format this build cannot read.
	ErrUnknownFormat = errors.New("snapshot: unknown format")
	// ErrUnknownSection: a section name that is not part of the format.
	ErrUnknownSection = errors.New("snapshot: unknown section")
	// ErrSectionOrder: a section out of order or repeated.
	ErrSectionOrder = errors.New("snapshot: section out of order")
	// ErrMissingSection: a required section is absent.
	ErrMissingSection = errors.New("snapshot: missing section")
	// ErrChecksum: a CRC-32C does not match the bytes it covers.
	ErrChecksum = errors.New("snapshot: checksum mismatch")
	// ErrTruncated: the stream ends inside a structure.
	ErrTruncated = errors.New("snapshot: truncated")
	// ErrTooLarge: a claimed length exceeds its bound.
	ErrTooLarge = errors.New("snapshot: length exceeds bound")
	// ErrCorrupt: bytes that pass their checksum but do not decode as the
	// format says (bad record, unknown field, wrong record count, a second
	// state record, trailing bytes after the trailer...).
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrWriterUsage: the Writer was called out of sequence (a record
	// outside a section, sections out of order, Close with a section open,
	// a record of the wrong type for its section).
	ErrWriterUsage = errors.New("snapshot: writer misuse")
)
