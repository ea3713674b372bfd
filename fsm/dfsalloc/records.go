package dfsalloc

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// RecordV1 is the schema version of every record this build writes and the
// only one it reads.
const RecordV1 uint8 = 1

// MaxRecordLen bounds one encoded record. The snapshot's chunks are 1 MiB;
// the largest real record is an entry with a MaxKeyLen key, far below this.
const MaxRecordLen = 64 << 10

// Record is one item of the snapshot's dfs_buckets section: exactly one of
// its parts is set. The canonical order is: one Meta; then every unit by
// ascending id, each followed by its entries by ascending offset and (shard)
// its deferred ranges in release-queue order.
type Record struct {
	V        uint8           `msgpack:"v"`
	Meta     *MetaRecord     `msgpack:"meta,omitempty"`
	Unit     *UnitRecord     `msgpack:"unit,omitempty"`
	Entry    *EntryRecord    `msgpack:"entry,omitempty"`
	Deferred *DeferredRecord `msgpack:"deferred,omitempty"`
}

// MetaRecord holds the allocator's scalars and the settings a restore must
// agree with.
type MetaRecord struct {
	Allocator    string `msgpack:"alloc"`
	Alignment    int64  `msgpack:"align"`
	UnitCapacity int64  `msgpack:"cap"`
	ShardCount   int    `msgpack:"shards"`      // shard only
	NextBucketID uint64 `msgpack:"next_bucket"` // bucket only: ids below it were handed out once
	MaxBuckets   int    `msgpack:"max_buckets"` // bucket only: current maximum
	OpenBucket   uint64 `msgpack:"open"`        // bucket only: the append target, 0 if none
	Evicted      uint64 `msgpack:"evicted"`
	Aborted      uint64 `msgpack:"aborted"`
	Lost         uint64 `msgpack:"lost"`
}

// UnitRecord is one bucket, or one shard whose file was ever needed.
type UnitRecord struct {
	ID             uint64    `msgpack:"id"`
	State          UnitState `msgpack:"state"`
	File           FileState `msgpack:"file"`
	Cursor         int64     `msgpack:"cursor"` // bucket: append cursor; shard: 0
	Tombstoned     int64     `msgpack:"dead"`   // bucket: tombstoned bytes below the cursor
	LastAccess     int64     `msgpack:"last_access"`
	Version        uint64    `msgpack:"ver"`
	DeleteFailures uint32    `msgpack:"del_failures"`
	DeletingSince  int64     `msgpack:"deleting_since"`
}

// EntryRecord is one live (pending or committed) entry.
type EntryRecord struct {
	Unit        uint64 `msgpack:"unit"`
	Offset      int64  `msgpack:"off"`
	Size        int64  `msgpack:"size"`
	AlignedSize int64  `msgpack:"asize"`
	Key         string `msgpack:"key"`
	Pending     bool   `msgpack:"pending"`
	LastAccess  int64  `msgpack:"last_access"`
}

// DeferredRecord is a freed shard range not yet reusable.
type DeferredRecord struct {
	Unit      uint64 `msgpack:"unit"`
	Offset    int64  `msgpack:"off"`
	Length    int64  `msgpack:"len"`
	ReleaseAt int64  `msgpack:"release_at"`
}

// EncodeRecord is the msgpack encoding of r exactly as the snapshot writer
// produces it (compact integers, fields in declaration order).
func EncodeRecord(r Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(&r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeRecord decodes one record strictly: a known version, no unknown
// fields, exactly one part, nothing after the value, at most MaxRecordLen
// bytes. The fsm's snapshot sink calls it for each dfs_buckets record and
// hands the collected records to Restore.
func DecodeRecord(raw []byte) (Record, error) {
	if len(raw) > MaxRecordLen {
		return Record{}, corruptf("record of %d bytes exceeds %d", len(raw), MaxRecordLen)
	}
	rd := bytes.NewReader(raw)
	dec := msgpack.NewDecoder(rd)
	dec.DisallowUnknownFields(true)
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, corruptf("record: %v", err)
	}
	if rd.Len() != 0 {
		return Record{}, corruptf("record: %d bytes after the value", rd.Len())
	}
	if err := r.check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// check: known version and exactly one part.
func (r *Record) check() error {
	if r.V != RecordV1 {
		return corruptf("record version %d, this build reads only %d", r.V, RecordV1)
	}
	n := 0
	for _, set := range []bool{r.Meta != nil, r.Unit != nil, r.Entry != nil, r.Deferred != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return corruptf("record has %d parts, want exactly 1", n)
	}
	return nil
}

// recordBuilder hands out records whose parts come from slabs sized up
// front, so Records costs a few allocations rather than one per entry (the
// FSM calls it under its write lock).
type recordBuilder struct {
	out     []Record
	entries []EntryRecord
	units   []UnitRecord
}

func newRecordBuilder(units, entries, deferred int) *recordBuilder {
	return &recordBuilder{
		out:     make([]Record, 0, 1+units+entries+deferred),
		entries: make([]EntryRecord, 0, entries),
		units:   make([]UnitRecord, 0, units),
	}
}

func (rb *recordBuilder) unit(u UnitRecord) {
	rb.units = append(rb.units, u)
	rb.out = append(rb.out, Record{V: RecordV1, Unit: &rb.units[len(rb.units)-1]})
}

func (rb *recordBuilder) entry(unit uint64, e *entry) {
	rb.entries = append(rb.entries, EntryRecord{
		Unit: unit, Offset: e.offset, Size: e.size, AlignedSize: e.aligned,
		Key: e.key, Pending: e.pending, LastAccess: e.lastAccess,
	})
	rb.out = append(rb.out, Record{V: RecordV1, Entry: &rb.entries[len(rb.entries)-1]})
}

// eachUnit walks a restore's records after the meta record, in order: a
// unit record closes the unit before it (finish) and opens its own
// (unit); any other record belongs to the open one (part). The last unit
// is closed at the end.
func eachUnit(records []Record, finish func() error, unit func(at int, u *UnitRecord) error, part func(at int, r *Record) error) error {
	for at := 1; at < len(records); at++ {
		r := &records[at]
		if err := r.check(); err != nil {
			return errorf(err, "record %d", at)
		}
		var err error
		if r.Unit != nil {
			if err = finish(); err == nil {
				err = unit(at, r.Unit)
			}
		} else {
			err = part(at, r)
		}
		if err != nil {
			return err
		}
	}
	return finish()
}
