package holder

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"sexton/internal/fsys"
)

// Every fsync the store issues goes through a named sync site, one per
// call site and caller: the durability audit (DESIGN.md, "Durability
// audit") lists each name with what it protects and the power-loss test
// that fails without it, and a binary built with the testhooks tag can be
// told to leave named sites out (EnvSkipSync) so a test can prove that
// row. In a release build syncSkipped is constant false and every site is
// a plain fsync.
type syncSite struct{ name string }

var (
	syncSitesMu sync.Mutex
	syncSites   = map[string]*syncSite{}
)

// newSyncSite registers a sync site. Registering a name twice is a
// programming error and panics at init, like a crash point.
func newSyncSite(name string) *syncSite {
	syncSitesMu.Lock()
	defer syncSitesMu.Unlock()
	if _, dup := syncSites[name]; dup {
		panic(fmt.Sprintf("holder: sync site %q registered twice", name))
	}
	x := &syncSite{name: name}
	syncSites[name] = x
	return x
}

// file fsyncs f.
func (x *syncSite) file(f fsys.File) error {
	if syncSkipped(x.name) {
		return nil
	}
	return f.Sync()
}

// data fdatasyncs f: its data and the metadata needed to read it back
// (the size), not its timestamps. The power-loss model has no such
// distinction and takes it as a full fsync.
func (x *syncSite) data(f fsys.File) error {
	if syncSkipped(x.name) {
		return nil
	}
	if osf, ok := f.(*os.File); ok {
		rc, err := osf.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			for {
				serr = unix.Fdatasync(int(fd))
				if serr != unix.EINTR {
					return
				}
			}
		}); err != nil {
			return err
		}
		if serr != nil {
			return &os.PathError{Op: "fdatasync", Path: osf.Name(), Err: serr}
		}
		return nil
	}
	return f.Sync()
}

// dir fsyncs the directory dir.
func (x *syncSite) dir(fs fsys.FS, dir string) error {
	if syncSkipped(x.name) {
		return nil
	}
	return fs.SyncDir(dir)
}

// writeFileSynced creates (or truncates) name, writes data, fsyncs it
// through site and closes it: the first half of an atomic replace.
func writeFileSynced(fs fsys.FS, site *syncSite, name string, data []byte) error {
	f, err := fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := site.file(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The sync sites. persistFile's callers carry theirs in persistPoints
// (crashpoints.go).
var (
	syncPutData              = newSyncSite("put.data")
	syncPutJournal           = newSyncSite("put.journal")
	syncOpenJournalDir       = newSyncSite("open.journal-dir")
	syncCompactData          = newSyncSite("compact.data")
	syncGCIntentPreparedTmp  = newSyncSite("gc.intent-prepared-tmp")
	syncGCIntentPreparedDir  = newSyncSite("gc.intent-prepared-dir")
	syncGCTargetData         = newSyncSite("gc.target-data")
	syncGCIntentCommittedTmp = newSyncSite("gc.intent-committed-tmp")
	syncGCIntentCommittedDir = newSyncSite("gc.intent-committed-dir")
	syncGCCommitDirRetry     = newSyncSite("gc.commit-dir-retry")
	syncGCUnlinkDir          = newSyncSite("gc.unlink-dir")
	syncGCAbortDir           = newSyncSite("gc.abort-dir")
	syncGCRecoveryDir        = newSyncSite("gc.recovery-dir")
	syncOpenCleanupDir       = newSyncSite("open.cleanup-dir")
	syncIdentityTmp          = newSyncSite("identity.tmp")
	syncIdentityDir          = newSyncSite("identity.dir")
	syncKnownSegmentsTmp     = newSyncSite("segments.tmp")
	syncKnownSegmentsDir     = newSyncSite("segments.dir")
	syncReserveData          = newSyncSite("space.reserve-data")
	syncReserveDir           = newSyncSite("space.reserve-dir")
)
