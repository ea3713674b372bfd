package snapshot

// The byte layout is documented in DESIGN.md; these constants are it.

// Magic opens every snapshot stream.
const Magic = "SEXTSNP\x00"

// Bounds on every length read from a stream, checked before allocating.
const (
	// MaxHeaderLen bounds the msgpack header.
	MaxHeaderLen = 64 << 10
	// MaxSectionNameLen bounds a section name.
	MaxSectionNameLen = 64
	// MaxChunkLen bounds one chunk's payload. The writer never emits a
	// larger chunk, so a record must encode to at most this many bytes.
	MaxChunkLen = 1 << 20
	// MaxSectionRecords bounds the record count a section terminator may
	// claim. Nothing is allocated from it; it only keeps counts sane.
	MaxSectionRecords = 1 << 40
)

// Frame tags: the byte before every section and before the trailer.
const (
	tagSection byte = 'S'
	tagEnd     byte = 'E'
)

// Frame sizes in bytes.
const (
	headerFrameLen     = 8     // u32 length + u32 CRC
	chunkFrameLen      = 8     // u32 length + u32 CRC
	terminatorCountLen = 8     // u64 record count after a zero-length chunk frame
	trailerLen         = 1 + 4 // tag + u32 CRC
)
