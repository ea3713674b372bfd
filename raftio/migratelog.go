package raftio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"sexton/holder/crashpoint"
)

// Crash points of MigrateLogStore: after the new store is complete and
// verified under its temporary name, and after it has its final name but
// before the old one is moved aside.
var (
	migrateBeforeSwitch    = crashpoint.New("logstore.migrate.before-switch")
	migrateAfterNewInPlace = crashpoint.New("logstore.migrate.after-new-in-place")
)

// The stable-store keys hashicorp/raft keeps, and whether each is a
// uint64: boltdb and raft-wal encode a SetUint64 differently (big- and
// little-endian), so a key can only be copied through the call it was
// written with.
var raftStableKeys = map[string]bool{
	"CurrentTerm":  true,
	"LastVoteTerm": true,
	"LastVoteCand": false,
}

// migratingSuffix names the new store while it is written: no master
// opens it, so until it is renamed to its final name the old store is
// the one in force.
const migratingSuffix = ".migrating"

// MigrateLogStoreResult says what MigrateLogStore did.
type MigrateLogStoreResult struct {
	From, To    string
	First, Last uint64 // the log's first and last index (0, 0: empty)
	Stable      map[string]string
	Aside       string // where the old store is kept
	// Finished: the new store was already in place (an earlier run
	// stopped before moving the old one aside); this run checked both
	// hold the same log and moved the old one aside.
	Finished bool
}

// MigrateLogStore moves a stopped master's Raft log and stable store in
// dir to the other kind of store, to (LogStoreBoltDB or LogStoreWAL).
// now names the old store's place aside; logf, if not nil, reports the
// steps.
//
// The new store is written under a temporary name (raft.db.migrating or
// raft-wal.migrating), fsynced, reopened and compared with the old one
// entry by entry and key by key; then it is renamed to its final name,
// and the old store is renamed aside (<name>.migrated-<time>), never
// deleted; each rename is followed by an fsync of the data dir. A crash
// before the first rename leaves the old store in force (a master opens
// no *.migrating name; the next run removes it and starts again); a crash
// between the two renames leaves both stores complete and equal, which a
// master refuses to start on, and the next run with the same --to checks
// they are equal and moves the old one aside.
//
// It refuses when a process holds the old store open (a running node: it
// holds bbolt's lock on raft.db or on raft-wal's metadata file), when the
// data dir holds no log or already the kind asked for, and when the
// stable store holds a key hashicorp/raft does not write.
func MigrateLogStore(dir, to string, now time.Time, logf func(format string, args ...any)) (*MigrateLogStoreResult, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if to != LogStoreBoltDB && to != LogStoreWAL {
		return nil, fmt.Errorf("--to %q: want %s or %s", to, LogStoreBoltDB, LogStoreWAL)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("data dir %s is not a directory", dir)
	}
	from := otherKind(to)
	res := &MigrateLogStoreResult{From: from, To: to}
	hasBolt, hasWAL, err := logStoresIn(dir)
	if err != nil {
		return nil, err
	}
	hasFrom, hasTo := hasBolt, hasWAL
	if from == LogStoreWAL {
		hasFrom, hasTo = hasWAL, hasBolt
	}
	switch {
	case hasFrom && hasTo:
		return finishMigration(dir, res, now, logf)
	case hasTo:
		return nil, fmt.Errorf("%s already holds a %s log (%s): nothing to migrate", dir, to, StorePath(dir, to))
	case !hasFrom:
		return nil, fmt.Errorf("%s holds no Raft log (neither %s nor a non-empty %s/): nothing to migrate", dir, BoltDBFileName, WALDirName)
	}

	keys, err := stableKeys(dir, from)
	if err != nil {
		return nil, err
	}
	tmp := StorePath(dir, to) + migratingSuffix
	if ok, err := exists(tmp); err != nil {
		return nil, err
	} else if ok {
		// Only a run that stopped before its switch leaves it; it never
		// was in force.
		logf("removing %s, left by a migration that stopped before its switch", tmp)
		if err := os.RemoveAll(tmp); err != nil {
			return nil, err
		}
	}

	quiet := hclog.NewNullLogger()
	src, err := OpenLogStoreAt(from, StorePath(dir, from), 0, quiet)
	if err != nil {
		return nil, fmt.Errorf("open the %s store: %w", from, err)
	}
	defer func() { _ = src.Close() }()
	dst, err := OpenLogStoreAt(to, tmp, 0, quiet)
	if err != nil {
		return nil, fmt.Errorf("create the %s store %s: %w", to, tmp, err)
	}
	res.First, res.Last, err = copyLogs(dst.Logs, src.Logs, logf)
	if err == nil {
		res.Stable, err = copyStable(dst.Stable, src.Stable, keys)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("copy to %s: %w (the %s store stays in force)", tmp, err, from)
	}
	if err := syncTree(tmp); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	logf("copied entries %d..%d and %d stable keys to %s; verifying", res.First, res.Last, len(res.Stable), tmp)
	check, err := OpenLogStoreAt(to, tmp, 0, quiet)
	if err != nil {
		return nil, fmt.Errorf("reopen %s to verify it: %w", tmp, err)
	}
	err = sameStores(check, src, keys)
	if cerr := check.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w (the %s store stays in force)", tmp, err, from)
	}
	migrateBeforeSwitch.Hit()

	if err := os.Rename(tmp, StorePath(dir, to)); err != nil {
		return nil, fmt.Errorf("switch: %w (the %s store stays in force)", err, from)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	migrateAfterNewInPlace.Hit()
	if err := moveAside(dir, res, now); err != nil {
		return nil, err
	}
	return res, nil
}

// finishMigration completes a migration that stopped with both stores in
// place: it moves the old one aside if both hold the same log and stable
// store, and refuses otherwise.
func finishMigration(dir string, res *MigrateLogStoreResult, now time.Time, logf func(string, ...any)) (*MigrateLogStoreResult, error) {
	logf("%s holds both a %s and a %s log: checking they are the same before moving the %s one aside", dir, res.From, res.To, res.From)
	keys, err := stableKeys(dir, res.From)
	if err != nil {
		return nil, err
	}
	quiet := hclog.NewNullLogger()
	src, err := OpenLogStoreAt(res.From, StorePath(dir, res.From), 0, quiet)
	if err != nil {
		return nil, fmt.Errorf("open the %s store: %w", res.From, err)
	}
	defer func() { _ = src.Close() }()
	dst, err := OpenLogStoreAt(res.To, StorePath(dir, res.To), 0, quiet)
	if err != nil {
		return nil, fmt.Errorf("open the %s store: %w", res.To, err)
	}
	err = sameStores(dst, src, keys)
	if err == nil {
		res.First, _ = src.Logs.FirstIndex()
		res.Last, _ = src.Logs.LastIndex()
		res.Stable, err = readStable(src.Stable, keys)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s holds both a %s log and a %s log, and they differ: %w; move the one this node must not use out of the data dir by hand", dir, res.From, res.To, err)
	}
	res.Finished = true
	return res, moveAside(dir, res, now)
}

// moveAside renames the old store out of the way, keeping it.
func moveAside(dir string, res *MigrateLogStoreResult, now time.Time) error {
	old := StorePath(dir, res.From)
	res.Aside = old + ".migrated-" + now.UTC().Format("20060102T150405Z")
	if err := os.Rename(old, res.Aside); err != nil {
		return fmt.Errorf("move the %s store aside: %w (the %s store is complete in place: run the migration again to finish)", res.From, err, res.To)
	}
	return syncDir(dir)
}

func otherKind(kind string) string {
	if kind == LogStoreWAL {
		return LogStoreBoltDB
	}
	return LogStoreWAL
}

// stableKeys lists the stable-store keys of the log store of kind in dir,
// reading its bbolt file read-only. That takes bbolt's shared lock, which
// a process holding the store open (a running node) refuses: so it also
// says whether the node is stopped. A key hashicorp/raft does not write
// is refused, since its encoding is unknown.
func stableKeys(dir, kind string) ([]string, error) {
	file, bucket := StorePath(dir, LogStoreBoltDB), []byte("conf") // raft-boltdb's stable bucket
	if kind == LogStoreWAL {
		file, bucket = filepath.Join(StorePath(dir, LogStoreWAL), metadb.FileName), []byte(metadb.StableBucket)
	}
	db, err := bbolt.Open(file, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked by another process: stop the node on %s before migrating its log store", file, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read the stable store keys of %s: %w", file, err)
	}
	defer func() { _ = db.Close() }()
	var keys []string
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if _, known := raftStableKeys[string(k)]; !known {
				return fmt.Errorf("stable store of %s holds key %q, which hashicorp/raft does not write and this migration cannot copy faithfully; not migrating", file, k)
			}
			keys = append(keys, string(k))
			return nil
		})
	})
	slices.Sort(keys)
	return keys, err
}

// migrateBatchBytes bounds one append of the copy.
const migrateBatchBytes = 4 << 20

// copyLogs appends every entry of src to the empty dst, in batches.
func copyLogs(dst, src raft.LogStore, logf func(string, ...any)) (first, last uint64, err error) {
	if first, err = src.FirstIndex(); err != nil {
		return 0, 0, err
	}
	if last, err = src.LastIndex(); err != nil {
		return 0, 0, err
	}
	if last == 0 {
		return 0, 0, nil
	}
	var batch []*raft.Log
	size := 0
	for i := first; i <= last; i++ {
		l := new(raft.Log)
		if err := src.GetLog(i, l); err != nil {
			return 0, 0, fmt.Errorf("read entry %d: %w", i, err)
		}
		batch = append(batch, l)
		size += len(l.Data) + len(l.Extensions) + 64
		if size >= migrateBatchBytes || i == last {
			if err := dst.StoreLogs(batch); err != nil {
				return 0, 0, fmt.Errorf("write entries %d..%d: %w", batch[0].Index, i, err)
			}
			batch, size = batch[:0], 0
		}
	}
	logf("copied %d entries", last-first+1)
	return first, last, nil
}

// copyStable copies keys, each through the call hashicorp/raft writes it
// with, and returns their values.
func copyStable(dst, src raft.StableStore, keys []string) (map[string]string, error) {
	vals, err := readStable(src, keys)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if raftStableKeys[k] {
			v, _ := src.GetUint64([]byte(k))
			err = dst.SetUint64([]byte(k), v)
		} else {
			var v []byte
			v, err = src.Get([]byte(k))
			if err == nil {
				err = dst.Set([]byte(k), v)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("stable key %s: %w", k, err)
		}
	}
	return vals, nil
}

// readStable reads keys, printable.
func readStable(s raft.StableStore, keys []string) (map[string]string, error) {
	vals := make(map[string]string, len(keys))
	for _, k := range keys {
		if raftStableKeys[k] {
			v, err := s.GetUint64([]byte(k))
			if err != nil {
				return nil, fmt.Errorf("stable key %s: %w", k, err)
			}
			vals[k] = fmt.Sprint(v)
		} else {
			v, err := s.Get([]byte(k))
			if err != nil {
				return nil, fmt.Errorf("stable key %s: %w", k, err)
			}
			vals[k] = string(v)
		}
	}
	return vals, nil
}

// sameStores compares a's log and stable store with b's: first and last
// index, every entry's index, term, type, data and extensions, and keys.
func sameStores(a, b *LogStore, keys []string) error {
	af, err1 := a.Logs.FirstIndex()
	al, err2 := a.Logs.LastIndex()
	bf, err3 := b.Logs.FirstIndex()
	bl, err4 := b.Logs.LastIndex()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	if af != bf || al != bl {
		return fmt.Errorf("the %s store holds entries %d..%d, the %s store %d..%d", a.Kind, af, al, b.Kind, bf, bl)
	}
	for i := af; al != 0 && i <= al; i++ {
		var x, y raft.Log
		if err := errors.Join(a.Logs.GetLog(i, &x), b.Logs.GetLog(i, &y)); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if x.Index != y.Index || x.Term != y.Term || x.Type != y.Type || !bytes.Equal(x.Data, y.Data) || !bytes.Equal(x.Extensions, y.Extensions) {
			return fmt.Errorf("entry %d differs: %s has index %d term %d type %v, %d bytes; %s has index %d term %d type %v, %d bytes",
				i, a.Kind, x.Index, x.Term, x.Type, len(x.Data), b.Kind, y.Index, y.Term, y.Type, len(y.Data))
		}
	}
	av, err := readStable(a.Stable, keys)
	if err != nil {
		return err
	}
	bv, err := readStable(b.Stable, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if av[k] != bv[k] {
			return fmt.Errorf("stable key %s: %q in the %s store, %q in the %s store", k, av[k], a.Kind, bv[k], b.Kind)
		}
	}
	return nil
}

// syncTree fsyncs path, a file or a directory with the files in it.
func syncTree(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				if err := syncFile(filepath.Join(path, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return syncFile(path)
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}

// syncDir fsyncs a directory, making the renames in it durable.
func syncDir(dir string) error { return syncFile(dir) }
