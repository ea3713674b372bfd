package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/fsys"
	"sexton/internal/msgpackscan"
)

// The tombstone floor (DESIGN.md "Tombstone floor"): per key, the highest
// incarnation this segment has tombstoned, kept after GC reclaimed the
// record, so a late write of it (or of any older incarnation of the key)
// is refused for as long as a grant for it can still be valid.
const (
	// FloorFileName holds the floors: {v, floors[{k, inc, at}], checksum}
	// (msgpack, CRC-32C trailer like every metadata file), rewritten
	// tmp → fsync → rename → dir fsync on every change.
	FloorFileName = ".tombstone_floor"
	floorTmpName  = FloorFileName + ".tmp"
	floorVersion  = 1
	// floorVersionEvicted is version 1 plus the evicted mark of an entry,
	// written only while some entry carries it (like metaVersionEvicted).
	floorVersionEvicted = 2
	// MaxFloorFileSize bounds the floor file read from disk (and written:
	// a change that would exceed it fails retryably, nothing acked).
	MaxFloorFileSize = 256 << 20
	// maxFloorEntries bounds the entries a floor file may claim: one
	// entry encodes in at least 32 bytes (key, incarnation, time).
	maxFloorEntries = MaxFloorFileSize / 32
)

// Grant lifetime assumptions the floor's retention rests on.
const (
	// MaxGrantLifetime is the longest a leader's write grant may live
	// (grant.MaxLifetime). A grant that expires later than
	// MaxGrantLifetime + MaxClockSkew after the holder's now is refused,
	// so a leader configured with longer grants fails loudly instead of
	// opening a window past the retention.
	MaxGrantLifetime = grant.MaxLifetime
	// MaxClockSkew bounds how far the leader's clock may run ahead of the
	// holder's (grant.MaxClockSkew).
	MaxClockSkew = grant.MaxClockSkew
	// DefaultFloorRetention keeps a floor entry until every grant for an
	// incarnation at or below it has expired on the holder's clock: every
	// such grant was issued before the entry was recorded (a tombstone
	// task exists only after its incarnation's PutStart, and older
	// incarnations' PutStarts came earlier), so it expires by
	// recorded + MaxGrantLifetime + MaxClockSkew. One more MaxClockSkew
	// covers the holder's own clock stepping back.
	DefaultFloorRetention = MaxGrantLifetime + 2*MaxClockSkew
)

// floorEntry is a key's floor: every incarnation ≤ inc is dead here.
type floorEntry struct {
	inc api.ObjectIncarnation
	at  int64 // holder clock (unix ns) when inc was recorded
	// evicted: inc itself died here by eviction, not removal (what the
	// reclaimed tombstone said), so a rebuild does not read it as removed.
	evicted bool
}

// deadKey is an incarnation a floor is raised for, with how it died.
type deadKey struct {
	objectKey
	evicted bool
}

type floorFile struct {
	V        uint32          `msgpack:"v"`
	Floors   []floorFileItem `msgpack:"floors"`
	Checksum uint32          `msgpack:"checksum"`
}

type floorFileItem struct {
	Key string                `msgpack:"k"`
	Inc api.ObjectIncarnation `msgpack:"inc"`
	At  int64                 `msgpack:"at"`
	Ev  bool                  `msgpack:"ev,omitempty"`
}

// covers reports whether the floor makes (key, inc) dead: inc ≤ floor.
func covers(floors map[string]floorEntry, k objectKey) bool {
	f, ok := floors[k.key]
	return ok && !f.inc.Less(k.inc)
}

func encodeFloors(floors map[string]floorEntry) ([]byte, error) {
	ff := floorFile{V: floorVersion, Floors: make([]floorFileItem, 0, len(floors))}
	for k, f := range floors {
		ff.Floors = append(ff.Floors, floorFileItem{Key: k, Inc: f.inc, At: f.at, Ev: f.evicted})
		if f.evicted {
			ff.V = floorVersionEvicted
		}
	}
	sort.Slice(ff.Floors, func(i, j int) bool { return ff.Floors[i].Key < ff.Floors[j].Key })
	b, err := sealChecksum(&ff)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFloorFileSize {
		return nil, fmt.Errorf("holder: tombstone floor of %d keys needs %d bytes, more than the bound of %d", len(floors), len(b), MaxFloorFileSize)
	}
	return b, nil
}

// decodeFloors verifies and decodes the floor file: size, checksum over
// the raw bytes, version, keys, no key twice.
func decodeFloors(name string, b []byte) (map[string]floorEntry, error) {
	var ff floorFile
	if err := decodeChecked(b, "a tombstone floor", MaxFloorFileSize, msgpackscan.Limits{MaxItems: maxFloorEntries}, &ff); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if ff.V != floorVersion && ff.V != floorVersionEvicted {
		return nil, fmt.Errorf("%w: %s: tombstone floor version %d (this build reads %d and %d)", ErrUnknownVersion, name, ff.V, floorVersion, floorVersionEvicted)
	}
	out := make(map[string]floorEntry, len(ff.Floors))
	for i, it := range ff.Floors {
		if err := api.ValidKey(it.Key); err != nil {
			return nil, fmt.Errorf("%w: %s: entry %d: %v", ErrCorrupt, name, i, err)
		}
		if _, dup := out[it.Key]; dup {
			return nil, fmt.Errorf("%w: %s: key %q listed twice", ErrCorrupt, name, it.Key)
		}
		if it.Ev && ff.V == floorVersion {
			return nil, fmt.Errorf("%w: %s: entry %d: version-1 floor carries the version-2 evicted mark", ErrCorrupt, name, i)
		}
		out[it.Key] = floorEntry{inc: it.Inc, at: it.At, evicted: it.Ev}
	}
	return out, nil
}

// readFloors loads the floor file of dir; no file is an empty floor.
func readFloors(fs fsys.FS, dir string) (map[string]floorEntry, error) {
	name := filepath.Join(dir, FloorFileName)
	b, err := fsys.ReadFile(fs, name, MaxFloorFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]floorEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	return decodeFloors(name, b)
}

// raiseFloors durably records that every key in dead is dead at its
// incarnation (and below), then shows the new floors in memory. An entry
// keeps the evicted mark only while every death recorded at its
// incarnation was an eviction: a removal at the same incarnation clears it. Entries
// past the retention are dropped on the way. Nothing changes, on disk or
// in memory, unless the new file was renamed in place; a failed directory
// fsync after the rename is an error too (the caller must not answer a
// terminal outcome), and the next change rewrites the file anyway.
func (s *Store) raiseFloors(dead []deadKey, pts persistPoints) error {
	s.floorMu.Lock()
	defer s.floorMu.Unlock()
	now := s.opts.Now().UnixNano()
	s.mu.Lock()
	next := make(map[string]floorEntry, len(s.floors)+len(dead))
	changed := false
	for k, f := range s.floors {
		if now-f.at > int64(s.opts.FloorRetention) {
			changed = true // expired: no grant at or below it can be valid
			continue
		}
		next[k] = f
	}
	for _, k := range dead {
		if f, ok := next[k.key]; ok && !f.inc.Less(k.inc) {
			if f.inc == k.inc && f.evicted && !k.evicted {
				f.evicted = false
				next[k.key] = f
				changed = true
			}
			continue
		}
		next[k.key] = floorEntry{inc: k.inc, at: now, evicted: k.evicted}
		changed = true
	}
	s.mu.Unlock()
	if !changed {
		return nil
	}
	data, err := encodeFloors(next)
	if err != nil {
		return err
	}
	n, err := s.persistFile(floorTmpName, FloorFileName, data, pts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.floors = next
	s.floorFileSize = n
	s.mu.Unlock()
	return nil
}

// FloorEntries is how many keys the tombstone floor holds.
func (s *Store) FloorEntries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.floors)
}
