package holder

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/internal/msgpackscan"
)

// decodeChecked reads one of the holder's own files that end in the
// checksum trailer (bucket metadata, the tombstone floor, the GC intent):
// size bound → trailer → CRC-32C over every byte before the value → a walk
// that refuses any length the bytes do not back or lim does not allow →
// decode into v. The walk comes before the decoder because msgpack's
// reflecting decoder allocates whatever a length claims: a 30-byte file
// claiming 2^28 records would otherwise cost minutes and gigabytes. what
// names the kind of file in the error, which the caller wraps.
func decodeChecked(b []byte, what string, maxSize int, lim msgpackscan.Limits, v any) error {
	if len(b) > maxSize {
		return fmt.Errorf("%d bytes exceeds the bound of %d", len(b), maxSize)
	}
	if len(b) < trailerLen+1 || !bytes.Equal(b[len(b)-trailerLen:len(b)-5], checksumTrailer) || b[len(b)-5] != 0xce {
		return fmt.Errorf("truncated or not %s (no checksum trailer)", what)
	}
	want := binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32c(b[:len(b)-4]); got != want {
		return fmt.Errorf("checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	if err := msgpackscan.Check(b, lim); err != nil {
		return fmt.Errorf("does not decode: %v", err)
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("does not decode: %v", err)
	}
	return nil
}
