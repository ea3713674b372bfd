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

// sectionSpec is one section of a format, in stream order.
type sectionSpec struct {
	name     string
	required bool
	// singleton sections hold exactly one record.
	singleton bool
}

// sections130 are the sections of 1.3.0 and 1.4.0.
var sections130 = []sectionSpec{
	{name: SectionMetadata, required: true},
	{name: SectionSegments, required: true},
	{name: SectionState, required: true, singleton: true},
	{name: SectionTasks, required: true},
	{name: SectionSessions, required: true},
	{name: SectionJobs, required: true},
	{name: SectionDFSBuckets},
}

// formatSpecs lists, per readable format, its sections in the only order
// they may appear.
var formatSpecs = map[string][]sectionSpec{
	// 1.4.0 has 1.3.0's sections; what it adds are record fields
	// (atLeast140).
	Format140: sections130,
	// 1.3.0 adds the bulk-delete jobs after the sessions.
	Format130: sections130,
	// 1.2.0 moves state before the tasks, so a reader knows the
	// snapshot's settings (its registry capacity) before the first task.
	Format120: {
		{name: SectionMetadata, required: true},
		{name: SectionSegments, required: true},
		{name: SectionState, required: true, singleton: true},
		{name: SectionTasks, required: true},
		{name: SectionSessions, required: true},
		{name: SectionDFSBuckets},
	},
	Format110: {
		{name: SectionMetadata, required: true},
		{name: SectionSegments, required: true},
		{name: SectionTasks, required: true},
		{name: SectionState, required: true, singleton: true},
		{name: SectionDFSBuckets},
	},
	Format100: {
		{name: SectionMetadata, required: true},
		{name: SectionSegments, required: true},
	},
}

// sectionIndex returns the position of name in spec, or -1.
func sectionIndex(spec []sectionSpec, name string) int {
	for i, s := range spec {
		if s.name == name {
			return i
		}
	}
	return -1
}
