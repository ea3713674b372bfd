package snapshot

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// SectionDFSBuckets (optional) holds the DFS allocator's records, opaque to
// the codec: each is one msgpack value, handed to the sink as its raw
// bytes ([]byte) for DecodeDFSRecord.
const SectionDFSBuckets = "dfs_buckets"

var dfsBucketsSection = sectionSpec{
	name: SectionDFSBuckets, since: Format110,
	put:   putDFSRecord,
	get:   getDFSRecord,
	count: func(c *Counts) { c.DFSRecords++ },
}

// putDFSRecord appends any msgpack-encodable value; a msgpack.RawMessage
// is written as is after checking it is exactly one well-formed value.
func putDFSRecord(w *Writer, v any) error {
	start := len(w.buf)
	if raw, ok := v.(msgpack.RawMessage); ok {
		w.buf = append(w.buf, raw...)
	} else if err := w.appendReflect(v); err != nil {
		return err
	}
	// Check what was appended the way the reader will delimit it, so a
	// raw value that is not exactly one msgpack value, or one nested
	// deeper than the reader accepts, is refused here and not on restore.
	r := &mpReader{b: w.buf[start:]}
	if err := r.skip(); err != nil {
		return fmt.Errorf("%w: dfs record is not one well-formed msgpack value: %v", ErrWriterUsage, err)
	}
	if r.remaining() != 0 {
		return fmt.Errorf("%w: dfs record holds %d bytes after its first msgpack value", ErrWriterUsage, r.remaining())
	}
	return nil
}

func getDFSRecord(mr *mpReader, _ string) (any, error) {
	start := mr.off
	if err := mr.skip(); err != nil {
		return nil, err
	}
	return bytes.Clone(mr.b[start:mr.off]), nil
}

// DecodeDFSRecord unmarshals a raw dfs_buckets record handed to the sink
// into v, refusing fields v does not have. The record is
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
