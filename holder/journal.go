package holder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/internal/fsys"
	"sexton/internal/msgpackscan"
)

// The put journal (<id>.journal) holds the records put commits appended to
// a bucket after its .meta was last written: the bucket's metadata is its
// .meta (the checkpoint) with every journal record replayed on top. A put
// into a bucket that already has a .meta appends one record per group
// commit and fdatasyncs the journal after the bucket's data, instead of
// rewriting the whole .meta; tombstones, GC targets and compaction still
// rewrite the .meta (tmp → fsync → rename → directory fsync), and
// compaction then empties the journal. holder/DESIGN.md "The put journal"
// has the reasoning.
//
// A record on disk is a frame:
//
//	u32 little-endian payload length | u32 little-endian CRC-32C of the
//	length bytes and the payload | payload (msgpack journalRecord)
const (
	journalVersion     = 1
	journalFrameHeader = 8
	// maxJournalRecord bounds one record's payload: a group commit adds
	// at most maxCommitBatch records of maximal keys and tenants.
	maxJournalRecord = 16 << 20
	// MaxJournalFileSize bounds a journal read at open.
	MaxJournalFileSize = MaxMetaFileSize
	// journalCompactBytes is the journal size past which the GC worker
	// folds it into the .meta (compaction), so a restart does not replay
	// a long journal. A bucket's journal is bounded anyway (at most one
	// record per put commit, and at most BucketKeysLimit records).
	journalCompactBytes = 1 << 20
	// journalInlineMax bounds the value bytes one commit copies into its
	// journal record instead of fdatasyncing the bucket file, and
	// journalInlineBudget the journal size up to which commits still do:
	// past it (compaction has not caught up, or there is no GC worker)
	// commits fdatasync their data, so a journal never outgrows
	// MaxJournalFileSize.
	journalInlineMax    = 256 << 10
	journalInlineBudget = 8 << 20
)

// journalRecord is one put commit's records: Objects take the slots from
// First on, and the bucket's committed data size becomes DataSize.
//
// Data, when present, is a copy of the records' value bytes (the bucket
// file's range from the first object's offset to DataSize): a commit of
// small values fdatasyncs only the journal, and open writes Data back into
// the bucket file wherever the file does not hold it (redo).
type journalRecord struct {
	V        uint32       `msgpack:"v"`
	BucketID uint64       `msgpack:"id"`
	First    int          `msgpack:"first"`
	DataSize int64        `msgpack:"data_size"`
	Objects  []ObjectMeta `msgpack:"objects"`
	Data     []byte       `msgpack:"data,omitempty"`
}

// redoRange is value bytes a journal record carries for the bucket file.
type redoRange struct {
	off  int64
	data []byte
}

// encodeJournalRecord frames one record.
func encodeJournalRecord(r *journalRecord) ([]byte, error) {
	r.V = journalVersion
	payload, err := msgpack.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(payload) > maxJournalRecord {
		return nil, fmt.Errorf("journal record of %d bytes exceeds %d", len(payload), maxJournalRecord)
	}
	out := make([]byte, journalFrameHeader, journalFrameHeader+len(payload))
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(payload)))
	out = append(out, payload...)
	binary.LittleEndian.PutUint32(out[4:8], journalCRC(out[0:4], payload))
	return out, nil
}

func journalCRC(length, payload []byte) uint32 {
	return crc32cUpdate(crc32c(length), payload)
}

// journalState is what reading a journal found.
type journalState struct {
	exists bool
	size   int64 // bytes on disk
	valid  int64 // bytes of whole, verified records: where the next append goes
	// redo is the value bytes the journal's records carry, for open to
	// write back into the bucket file where it does not hold them.
	redo []redoRange
}

// redoEnd is the end of the last redo range (0 for none).
func (j journalState) redoEnd() int64 {
	var end int64
	for _, r := range j.redo {
		end = max(end, r.off+int64(len(r.data)))
	}
	return end
}

// torn reports whether the journal ends in a record that was never
// completed (dropped at load, cut off at open).
func (j journalState) torn() bool { return j.valid < j.size }

// replayJournal applies the journal's records to m (the bucket's .meta).
// A record cut short at the end of the file, or whose checksum fails and
// which ends exactly at the end of the file, is a torn tail: a put commit
// that never finished its fdatasync and was never acknowledged; it is
// dropped. A bad record followed by more bytes, a record of an unknown
// version or another bucket, or one that does not continue the bucket's
// slots is corruption: the error names the file and the record's offset.
func replayJournal(name string, id uint64, m *BucketMetadata, b []byte) (int64, []redoRange, error) {
	var off int64
	var redo []redoRange
	for off < int64(len(b)) {
		rest := b[off:]
		if len(rest) < journalFrameHeader || allZero(rest) {
			return off, redo, nil // torn tail (or a zero-filled extension)
		}
		n := int64(binary.LittleEndian.Uint32(rest[0:4]))
		end := journalFrameHeader + n
		if n > maxJournalRecord {
			if int64(len(rest)) <= end {
				return off, redo, nil
			}
			return 0, nil, fmt.Errorf("%w: %s: record at offset %d claims %d bytes (bound %d)", ErrCorrupt, name, off, n, maxJournalRecord)
		}
		if int64(len(rest)) < end {
			return off, redo, nil // cut short: torn tail
		}
		payload := rest[journalFrameHeader:end]
		if journalCRC(rest[0:4], payload) != binary.LittleEndian.Uint32(rest[4:8]) {
			if int64(len(rest)) == end {
				return off, redo, nil // the last record, not fully written: torn tail
			}
			return 0, nil, fmt.Errorf("%w: %s: record at offset %d fails its checksum and is followed by %d more bytes (not a torn tail)",
				ErrCorrupt, name, off, int64(len(rest))-end)
		}
		r, err := applyJournalPayload(id, m, payload)
		if err != nil {
			var uv *journalVersionError
			if errors.As(err, &uv) {
				return 0, nil, fmt.Errorf("%w: %s: record at offset %d: %v", ErrUnknownVersion, name, off, err)
			}
			return 0, nil, fmt.Errorf("%w: %s: record at offset %d: %v", ErrCorrupt, name, off, err)
		}
		if r != nil {
			redo = append(redo, *r)
		}
		off += end
	}
	return off, redo, nil
}

type journalVersionError struct{ v uint32 }

func (e *journalVersionError) Error() string {
	return fmt.Sprintf("journal record version %d (this build reads %d)", e.v, journalVersion)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// applyJournalPayload decodes one verified record and applies it to m.
// Records already in the .meta (a compaction or tombstone rewrote it
// after they were appended) are checked and skipped, so replay is
// idempotent.
func applyJournalPayload(id uint64, m *BucketMetadata, payload []byte) (*redoRange, error) {
	if err := msgpackscan.Check(payload, msgpackscan.Limits{MaxItems: MaxBucketKeysLimit}); err != nil {
		return nil, fmt.Errorf("does not decode: %v", err)
	}
	var r journalRecord
	if err := msgpack.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("does not decode: %v", err)
	}
	if r.V != journalVersion {
		return nil, &journalVersionError{r.V}
	}
	if r.BucketID != id {
		return nil, fmt.Errorf("records bucket id %d, file name says %d", r.BucketID, id)
	}
	if m.V == metaVersionLegacy {
		return nil, fmt.Errorf("appends to a version-0 bucket, which is never appended to")
	}
	if r.First < 0 || r.First > len(m.Objects) {
		return nil, fmt.Errorf("starts at slot %d but the bucket has %d records", r.First, len(m.Objects))
	}
	var redo *redoRange
	if r.Data != nil {
		// The value bytes must be exactly the records' range, and match
		// their checksums: redo writes only bytes the records vouch for.
		if len(r.Objects) == 0 || r.Objects[0].Offset < 0 || r.DataSize-r.Objects[0].Offset != int64(len(r.Data)) {
			return nil, fmt.Errorf("carries %d value bytes that are not its records' range", len(r.Data))
		}
		base := r.Objects[0].Offset
		for i := range r.Objects {
			o := &r.Objects[i]
			if o.Offset < base || o.Size < 0 || o.Offset+o.Size > r.DataSize || crc32c(r.Data[o.Offset-base:o.Offset-base+o.Size]) != o.CRC32C {
				return nil, fmt.Errorf("slot %d (%q): the value bytes it carries do not match its range and crc32c", r.First+i, o.Key)
			}
		}
		redo = &redoRange{off: base, data: r.Data}
	}
	for i := range r.Objects {
		o := &r.Objects[i]
		if o.Tombstoned || o.Evicted {
			return nil, fmt.Errorf("slot %d (%q) is a tombstone; the journal holds puts only", r.First+i, o.Key)
		}
		slot := r.First + i
		if slot < len(m.Objects) {
			have := &m.Objects[slot]
			if have.Key != o.Key || have.Incarnation != o.Incarnation || have.Offset != o.Offset || have.Size != o.Size || have.CRC32C != o.CRC32C {
				return nil, fmt.Errorf("slot %d (%q %s) differs from the metadata's (%q %s)", slot, o.Key, o.Incarnation, have.Key, have.Incarnation)
			}
			continue
		}
		m.Objects = append(m.Objects, *o)
	}
	if r.DataSize > m.DataSize {
		m.DataSize = r.DataSize
	}
	return redo, nil
}

// readJournal reads <id>.journal (absent is empty) and replays it onto m.
func readJournal(fs fsys.FS, dir string, id uint64, m *BucketMetadata) (journalState, error) {
	name := filepath.Join(dir, journalName(id))
	b, err := fsys.ReadFile(fs, name, MaxJournalFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return journalState{}, nil
	}
	if err != nil {
		return journalState{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	valid, redo, err := replayJournal(name, id, m, b)
	if err != nil {
		return journalState{}, err
	}
	return journalState{exists: true, size: int64(len(b)), valid: valid, redo: redo}, nil
}

// appendJournal writes one put commit's record at the journal's committed
// end and fdatasyncs it. A failure leaves b.jEnd unchanged and marks the
// tail dirty, so the next append first cuts off whatever this one wrote.
func (s *Store) appendJournal(b *bucket, first int, dataSize int64, objs []ObjectMeta, data []byte) error {
	name := s.path(journalName(b.id))
	frame, err := encodeJournalRecord(&journalRecord{BucketID: b.id, First: first, DataSize: dataSize, Objects: objs, Data: data})
	if err != nil {
		return fmt.Errorf("holder: encode journal record of bucket %d: %w", b.id, err)
	}
	if b.jDirty {
		// A failed append may have left bytes past the committed end; a
		// shorter record written over them would leave their rest behind
		// it, which a restart could not tell from corruption.
		if err := b.jFile.Truncate(b.jEnd); err != nil {
			return fmt.Errorf("holder: truncate %s to %d: %w", name, b.jEnd, err)
		}
		b.jDirty = false
	}
	b.jDirty = true
	if _, err := b.jFile.WriteAt(frame, b.jEnd); err != nil {
		return fmt.Errorf("holder: append to %s at %d: %w", name, b.jEnd, err)
	}
	putAfterJournalWrite.Hit()
	// fdatasync also persists the file's new size: no separate fsync.
	if err := syncPutJournal.data(b.jFile); err != nil {
		return fmt.Errorf("holder: fdatasync %s: %w", name, err)
	}
	b.jDirty = false
	s.mu.Lock()
	b.jEnd += int64(len(frame))
	s.mu.Unlock()
	putAfterJournalFsync.Hit()
	return nil
}

// openJournal opens (creating it if absent) the journal of bucket id for
// appends. The caller makes the directory entry durable.
func (s *Store) openJournal(id uint64) (fsys.File, error) {
	name := s.path(journalName(id))
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("holder: open %s: %w", name, err)
	}
	return f, nil
}

// compactJournal folds bucket b's journal into its .meta: the whole
// metadata is persisted (tmp → fsync → rename → directory fsync), then the
// journal is emptied. The truncation needs no fsync of its own: a cut
// that undoes it brings back records the new .meta already holds, which
// replay skips, and the next append's fdatasync persists the file's new
// size with its record. Runs in the background (the GC worker), never on
// the put path.
func (s *Store) compactJournal(b *bucket) error {
	b.persistMu.Lock()
	defer b.persistMu.Unlock()
	s.mu.Lock()
	if b.retired || s.closed || b.jEnd == 0 || b.legacy {
		s.mu.Unlock()
		return nil
	}
	m := b.meta
	s.mu.Unlock()
	// Records whose values only the journal made durable: the bucket
	// file's bytes must be durable before the journal lets go of them.
	if err := syncCompactData.data(b.file); err != nil {
		return fmt.Errorf("holder: fdatasync %s before compacting its journal: %w", s.path(bucketName(b.id)), err)
	}
	compactAfterDataFsync.Hit()
	// No reserve release on ENOSPC: a compaction can wait for space like
	// a put (its journal stays authoritative meanwhile).
	n, err := s.persistMeta(b.id, m, compactPoints)
	if err != nil {
		return err
	}
	s.mu.Lock()
	b.metaFileSize = n
	s.mu.Unlock()
	if err := s.truncateJournal(b); err != nil {
		// The .meta holds everything; a journal left long is replayed
		// idempotently. The next append cuts it first.
		b.jDirty = true
		s.log.Warn("journal compaction could not empty the journal; its records are in the .meta", "bucket", b.id, "err", err)
	}
	s.mu.Lock()
	b.jEnd = 0
	s.mu.Unlock()
	compactAfterTruncate.Hit()
	return nil
}

func (s *Store) truncateJournal(b *bucket) error {
	if b.jFile != nil {
		return b.jFile.Truncate(0)
	}
	return s.truncateFile(journalName(b.id))
}

// compactJournals compacts every bucket whose journal passed the bound.
func (s *Store) compactJournals() {
	s.mu.Lock()
	var todo []*bucket
	for _, b := range s.buckets {
		if b.jEnd >= journalCompactBytes {
			todo = append(todo, b)
		}
	}
	s.mu.Unlock()
	for _, b := range todo {
		if err := s.compactJournal(b); err != nil {
			s.log.Warn("journal compaction failed; retried at the next pass", "bucket", b.id, "err", err)
		}
	}
}

// CompactJournals folds every bucket's journal into its .meta now,
// whatever its size (for tests and tools; the GC worker compacts past
// journalCompactBytes on its own).
func (s *Store) CompactJournals() error {
	s.mu.Lock()
	todo := mapValues(s.buckets)
	s.mu.Unlock()
	for _, b := range todo {
		if err := s.compactJournal(b); err != nil {
			return err
		}
	}
	return nil
}
