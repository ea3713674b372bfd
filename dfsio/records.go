package dfsio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sexton/api"
)

// RecordsName is the DFS root's journal of range records (DESIGN.md
// "Range records"). It is not an allocator name, so it is never listed,
// never removed as a stray and never deleted with a bucket.
const RecordsName = ".sexton_dfs_records"

// Range record operations.
const (
	// RecordPut: the range holds the value of key at incarnation, with
	// this size and CRC-32C.
	RecordPut = "put"
	// RecordRemoved: the incarnation left the table by a removal; with
	// Through every record of the key at or below it is killed.
	RecordRemoved = "removed"
)

const (
	recordVersion = 1
	recordMagic   = "SXR1"
	// MaxRecordPayload bounds one record's JSON (a 4 KiB key escaped to
	// at most 6 bytes per byte, and the fixed fields), so a corrupt
	// length cannot make a scan allocate without limit.
	MaxRecordPayload = 32 << 10
	// maxJournal bounds what ScanRecords reads into memory.
	maxJournal    = 8 << 30
	frameOverhead = 12
)

// ErrBadRecord: a range record that is malformed (unknown op, version,
// missing fields) — refused to encode, skipped (counted torn) in a scan.
var ErrBadRecord = errors.New("dfsio: bad range record")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// onSync, when set (by the power-loss tests only), is told the path of
// every file whose data an fdatasync has just made durable, so a test can
// keep the image a power cut would leave.
var onSync func(path string)

func synced(path string) {
	if onSync != nil {
		onSync(path)
	}
}

// Checksum is the CRC-32C a put record carries for a value.
func Checksum(value []byte) uint32 { return crc32.Checksum(value, castagnoli) }

// RangeRecord is one record of the journal.
type RangeRecord struct {
	V         int                   `json:"v"`
	Op        string                `json:"op"`
	Key       string                `json:"key"`
	Tenant    string                `json:"tenant,omitempty"`
	Inc       api.ObjectIncarnation `json:"inc"`
	Allocator string                `json:"alloc"`
	Path      string                `json:"path"`
	Unit      uint64                `json:"unit"`
	Offset    int64                 `json:"off"`
	Size      int64                 `json:"size"`
	Aligned   int64                 `json:"aligned"`
	CRC       uint32                `json:"crc,omitempty"`
	Through   bool                  `json:"through,omitempty"`
}

// PutRecord is the record of value written at d for key's incarnation inc
// (tenant: the put's; empty is the default tenant).
func PutRecord(key, tenant string, inc api.ObjectIncarnation, d api.DFSDescriptor, value []byte) RangeRecord {
	return RangeRecord{V: recordVersion, Op: RecordPut, Key: key, Tenant: tenant, Inc: inc, Allocator: d.Allocator, Path: d.Path,
		Unit: d.UnitID, Offset: d.Offset, Size: d.Size, Aligned: d.AlignedSize, CRC: Checksum(value)}
}

// RemovedRecord is the removal record of key's incarnation inc at d;
// through kills every incarnation of the key at or below inc.
func RemovedRecord(key string, inc api.ObjectIncarnation, d api.DFSDescriptor, through bool) RangeRecord {
	return RangeRecord{V: recordVersion, Op: RecordRemoved, Key: key, Inc: inc, Allocator: d.Allocator, Path: d.Path,
		Unit: d.UnitID, Offset: d.Offset, Size: d.Size, Aligned: d.AlignedSize, Through: through}
}

// Desc is the descriptor the record names.
func (r RangeRecord) Desc() api.DFSDescriptor {
	return api.DFSDescriptor{Allocator: r.Allocator, Path: r.Path, UnitID: r.Unit, Offset: r.Offset, Size: r.Size, AlignedSize: r.Aligned}
}

func (r RangeRecord) check() error {
	switch {
	case r.V != recordVersion:
		return fmt.Errorf("%w: version %d", ErrBadRecord, r.V)
	case r.Op != RecordPut && r.Op != RecordRemoved:
		return fmt.Errorf("%w: op %q", ErrBadRecord, r.Op)
	case api.ValidKey(r.Key) != nil:
		return fmt.Errorf("%w: key: %v", ErrBadRecord, api.ValidKey(r.Key))
	case r.Inc.IsZero():
		return fmt.Errorf("%w: %q has the zero incarnation", ErrBadRecord, r.Key)
	case r.Op == RecordPut && r.Through:
		return fmt.Errorf("%w: a put record with through", ErrBadRecord)
	case len(r.Tenant) > api.MaxTenantLen:
		return fmt.Errorf("%w: tenant of %d bytes", ErrBadRecord, len(r.Tenant))
	}
	if err := checkPath(r.Path); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	return checkRange(r.Desc(), int(r.Size))
}

// EncodeRecord frames r: magic, payload length (uint32 LE), JSON payload,
// CRC-32C of the payload (uint32 LE).
func EncodeRecord(r RangeRecord) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(payload) > MaxRecordPayload {
		return nil, fmt.Errorf("%w: %d payload bytes exceed %d", ErrBadRecord, len(payload), MaxRecordPayload)
	}
	out := make([]byte, 0, len(payload)+frameOverhead)
	out = append(out, recordMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(payload)))
	out = append(out, payload...)
	return binary.LittleEndian.AppendUint32(out, Checksum(payload)), nil
}

// DecodeRecords reads every record of a journal's bytes in order. A frame
// whose magic, length, CRC or content is wrong (a torn append, a block a
// crash left unwritten) counts as torn, and the scan resynchronises at the
// next magic whose frame checks out.
func DecodeRecords(b []byte) (recs []RangeRecord, torn int) {
	skipping := false
	for len(b) > 0 {
		r, n, ok := decodeFrame(b)
		if ok {
			recs = append(recs, r)
			b = b[n:]
			skipping = false
			continue
		}
		if !skipping {
			torn++
			skipping = true
		}
		i := bytes.Index(b[1:], []byte(recordMagic))
		if i < 0 {
			break
		}
		b = b[1+i:]
	}
	return recs, torn
}

func decodeFrame(b []byte) (RangeRecord, int, bool) {
	var r RangeRecord
	if len(b) < frameOverhead || string(b[:4]) != recordMagic {
		return r, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[4:8]))
	if n > MaxRecordPayload || len(b) < frameOverhead+n {
		return r, 0, false
	}
	payload := b[8 : 8+n]
	if binary.LittleEndian.Uint32(b[8+n:12+n]) != Checksum(payload) {
		return r, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if dec.Decode(&r) != nil || dec.More() || r.check() != nil {
		return RangeRecord{}, 0, false
	}
	return r, frameOverhead + n, true
}

// AppendRecords appends recs to the root's journal, each with one write on
// an O_APPEND descriptor (concurrent appenders on a local filesystem never
// interleave), and fdatasyncs it when sync is set. A journal created here
// also has its directory entry synced.
func (p *Posix) AppendRecords(recs []RangeRecord, sync bool) error {
	frames := make([][]byte, 0, len(recs))
	for _, r := range recs {
		f, err := EncodeRecord(r)
		if err != nil {
			return err
		}
		frames = append(frames, f)
	}
	path := filepath.Join(p.root, RecordsName)
	_, statErr := os.Stat(path)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("dfsio: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	for _, f := range frames {
		for {
			n, err := unix.Write(fd, f)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return fmt.Errorf("dfsio: append to %s: %w", path, err)
			}
			if n != len(f) {
				return fmt.Errorf("%w: append to %s wrote %d of %d bytes", ErrShortIO, path, n, len(f))
			}
			break
		}
	}
	if !sync {
		return nil
	}
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("dfsio: fdatasync %s: %w", path, err)
	}
	synced(path)
	if errors.Is(statErr, os.ErrNotExist) {
		return syncDir(p.root)
	}
	return nil
}

// AppendPutRecord is the writer's record of a value it wrote at d, synced
// as the value is (MOONCAKE_DFS_FSYNC).
func (p *Posix) AppendPutRecord(key, tenant string, inc api.ObjectIncarnation, d api.DFSDescriptor, value []byte) error {
	return p.AppendRecords([]RangeRecord{PutRecord(key, tenant, inc, d, value)}, p.fsync)
}

// ScanRecords reads the root's whole journal (a missing journal has no
// records). torn counts the frames that did not check out.
func (p *Posix) ScanRecords() (recs []RangeRecord, torn int, err error) {
	f, err := os.Open(filepath.Join(p.root, RecordsName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("dfsio: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJournal+1))
	if err != nil {
		return nil, 0, fmt.Errorf("dfsio: read %s: %w", RecordsName, err)
	}
	if len(b) > maxJournal {
		return nil, 0, fmt.Errorf("dfsio: %s exceeds %d bytes", RecordsName, maxJournal)
	}
	recs, torn = DecodeRecords(b)
	return recs, torn, nil
}
