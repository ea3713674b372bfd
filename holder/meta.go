package holder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/msgpackscan"
)

// Metadata versions. Version 0 is the legacy shape (no "v", no incarnation,
// no tombstone); version 1 is what this build writes for a bucket without
// an evicted record; version 2 is version 1 plus the evicted mark, written
// only by a bucket that holds one. A build that reads 0 and 1 refuses a
// version-2 file instead of reading an eviction as a removal and losing
// the mark on its next rewrite.
const (
	metaVersionLegacy  = 0
	metaVersionCurrent = 1
	metaVersionEvicted = 2
)

// MaxMetaFileSize bounds a .meta file read from disk. A full bucket of
// MaxBucketKeysLimit maximal keys and tenants stays well below it.
const MaxMetaFileSize = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func crc32cUpdate(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// BucketMetadata is the content of <id>.meta: the bucket's committed data
// size and every record in it, tombstoned or not. It is the commit point of
// both puts and tombstones: bytes in .bucket that it does not describe do
// not exist.
//
// Checksum must stay the last field: it is CRC-32C of every byte of the
// encoded file before the checksum value, which lets the reader verify the
// raw bytes before decoding anything.
type BucketMetadata struct {
	V        uint32       `msgpack:"v"`
	BucketID uint64       `msgpack:"id"`
	DataSize int64        `msgpack:"data_size"`
	Objects  []ObjectMeta `msgpack:"objects"`
	Checksum uint32       `msgpack:"checksum"`
}

// ObjectMeta is one record of a bucket.
type ObjectMeta struct {
	Key         string                `msgpack:"key"`
	Tenant      string                `msgpack:"tenant"`
	Incarnation api.ObjectIncarnation `msgpack:"inc"`
	Offset      int64                 `msgpack:"off"`
	Size        int64                 `msgpack:"size"`
	CRC32C      uint32                `msgpack:"crc"`
	Tombstoned  bool                  `msgpack:"tomb"`
	// Evicted qualifies a tombstone: the record died because the holder
	// evicted it under disk pressure (the master dropped the replica), not
	// because its incarnation was removed. A rebuild may adopt the
	// incarnation from another holder's live copy; a removal it never may.
	Evicted bool `msgpack:"evicted,omitempty"`
}

// legacyBucketMetadata is the version-0 shape, as written before
// incarnations and tombstones existed. It is never written by the store;
// it is here so the shape is defined in code and tests can produce fixtures.
type legacyBucketMetadata struct {
	BucketID uint64             `msgpack:"id"`
	DataSize int64              `msgpack:"data_size"`
	Objects  []legacyObjectMeta `msgpack:"objects"`
	Checksum uint32             `msgpack:"checksum"`
}

type legacyObjectMeta struct {
	Key    string `msgpack:"key"`
	Tenant string `msgpack:"tenant"`
	Offset int64  `msgpack:"off"`
	Size   int64  `msgpack:"size"`
	CRC32C uint32 `msgpack:"crc"`
}

// checksumTrailer is how every metadata file ends: the fixstr key
// "checksum" then a msgpack uint32 (0xce + 4 big-endian bytes). msgpack
// encodes a typed uint32 at full width, so the trailer has a fixed size.
var checksumTrailer = append([]byte{0xa8}, "checksum"...)

const trailerLen = 9 + 1 + 4

// sealChecksum encodes v (whose last field must be the uint32 checksum) and
// fills the checksum in.
func sealChecksum(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) < trailerLen || !bytes.Equal(b[len(b)-trailerLen:len(b)-5], checksumTrailer) || b[len(b)-5] != 0xce {
		return nil, fmt.Errorf("holder: metadata encoding does not end in a full-width checksum")
	}
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32c(b[:len(b)-4]))
	return b, nil
}

func encodeMeta(m *BucketMetadata) ([]byte, error) {
	c := *m
	c.V = metaVersionFor(m)
	c.Checksum = 0
	return sealChecksum(&c)
}

// metaVersionFor is the version m is written in: 2 only when a record
// carries the evicted mark, so a bucket without one stays version 1.
func metaVersionFor(m *BucketMetadata) uint32 {
	for i := range m.Objects {
		if m.Objects[i].Evicted {
			return metaVersionEvicted
		}
	}
	return metaVersionCurrent
}

func encodeLegacyMeta(m *legacyBucketMetadata) ([]byte, error) {
	c := *m
	c.Checksum = 0
	return sealChecksum(&c)
}

// decodeMeta verifies and decodes the bytes of <id>.meta. name is used in
// errors only. It checks, in order: the size bound, the checksum over the
// raw bytes, the version, then every field against the bucket's own bounds.
func decodeMeta(name string, id uint64, b []byte) (*BucketMetadata, error) {
	// A bucket holds at most MaxBucketKeysLimit records, and a record
	// has a dozen fields: no container of a valid file is larger.
	var m BucketMetadata
	if err := decodeChecked(b, "bucket metadata", MaxMetaFileSize, msgpackscan.Limits{MaxItems: MaxBucketKeysLimit}, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	switch m.V {
	case metaVersionEvicted:
	case metaVersionCurrent:
		// Version 1 has no evicted mark: a writer that set one wrote 2.
		for i := range m.Objects {
			if m.Objects[i].Evicted {
				return nil, fmt.Errorf("%w: %s: version-1 metadata carries the version-2 evicted mark", ErrCorrupt, name)
			}
		}
	case metaVersionLegacy:
		// The legacy shape has no incarnation and no tombstone; a "legacy"
		// file carrying them is not one this build knows how to read.
		for i := range m.Objects {
			if !m.Objects[i].Incarnation.IsZero() || m.Objects[i].Tombstoned || m.Objects[i].Evicted {
				return nil, fmt.Errorf("%w: %s: version-0 metadata carries version-1 fields", ErrCorrupt, name)
			}
		}
	default:
		return nil, fmt.Errorf("%w: %s: metadata version %d (this build reads 0, 1 and 2)", ErrUnknownVersion, name, m.V)
	}
	if err := m.validate(id); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	return &m, nil
}

// validate checks the decoded fields against each other, so no later
// arithmetic or allocation can overflow or run off the file.
func (m *BucketMetadata) validate(id uint64) error {
	if m.BucketID != id {
		return fmt.Errorf("records bucket id %d, file name says %d", m.BucketID, id)
	}
	if m.DataSize < 0 {
		return fmt.Errorf("negative data size %d", m.DataSize)
	}
	for i := range m.Objects {
		o := &m.Objects[i]
		if err := api.ValidKey(o.Key); err != nil {
			return fmt.Errorf("record %d: %v", i, err)
		}
		if o.Evicted && !o.Tombstoned {
			return fmt.Errorf("record %d (%q): evicted but not tombstoned", i, o.Key)
		}
		if len(o.Tenant) > api.MaxTenantLen {
			return fmt.Errorf("record %d: tenant of %d bytes", i, len(o.Tenant))
		}
		if o.Offset < 0 || o.Size < 0 || o.Offset > m.DataSize || o.Size > m.DataSize-o.Offset {
			return fmt.Errorf("record %d (%q): range [%d, +%d) outside data size %d", i, o.Key, o.Offset, o.Size, m.DataSize)
		}
	}
	return nil
}

// clone returns a deep copy: committed metadata is never mutated in place,
// so readers of the old value and a failed persistence see no change.
func (m *BucketMetadata) clone() *BucketMetadata {
	c := *m
	c.Objects = make([]ObjectMeta, len(m.Objects), len(m.Objects)+1)
	copy(c.Objects, m.Objects)
	return &c
}
