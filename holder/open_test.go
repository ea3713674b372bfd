package holder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/testutil"
)

func TestSecondProcessCannotOpenDirectory(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "k", incN(1), []byte("v"))

	// Another Store in this process.
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrDirectoryInUse) {
		t.Fatalf("second OpenStore in process: %v, want ErrDirectoryInUse", err)
	}
	// A real second process: flock is per open file description, so this is
	// what two holder processes would see.
	out, ws := runChildProcess(t, roleOpen, dir, "")
	if ws.ExitStatus() != 3 || !strings.Contains(out, "in use") || !strings.Contains(out, LockFileName) {
		t.Fatalf("second process: status %v, output %q; want exit 3 and an error saying the directory is in use", ws, out)
	}
	mustGet(t, s, "k", incN(1), []byte("v"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Once released, the other process opens it.
	out, ws = runChildProcess(t, roleOpen, dir, "")
	if ws.ExitStatus() != 0 || !strings.Contains(out, "opened") {
		t.Fatalf("after release: status %v, output %q", ws, out)
	}
}

func TestUnmarkedDirectoryFailsClosedUnlessAdopted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "someone-elses.dat"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.DirContents(t, dir)
	_, err := OpenStore(dir, StoreOptions{})
	if !errors.Is(err, ErrUnmarkedDirectory) || !strings.Contains(err.Error(), EnvAdoptUnmarked) {
		t.Fatalf("unmarked: %v, want ErrUnmarkedDirectory naming %s", err, EnvAdoptUnmarked)
	}
	sameSnapshot(t, before, testutil.DirContents(t, dir)) // not even a lock file

	s := openT(t, dir, StoreOptions{AdoptUnmarked: true})
	rep := s.OpenReport()
	if !rep.CreatedMarker || !rep.AdoptedUnmarked || len(rep.IgnoredFiles) != 1 {
		t.Fatalf("adopt report %+v", rep)
	}
	seg := s.SegmentID()
	s.Close()
	if b, err := os.ReadFile(filepath.Join(dir, "someone-elses.dat")); err != nil || string(b) != "data" {
		t.Fatalf("adoption touched a foreign file: %q %v", b, err)
	}
	// Marked now: opens without adoption, same identity.
	s = openT(t, dir, StoreOptions{})
	if s.SegmentID() != seg || s.OpenReport().CreatedMarker {
		t.Fatalf("identity changed: %s → %s", seg, s.SegmentID())
	}
	s.Close()

	// An empty directory is marked on first use.
	empty := t.TempDir()
	s = openT(t, empty, StoreOptions{ClusterID: 42})
	if !s.OpenReport().CreatedMarker || s.OpenReport().AdoptedUnmarked || s.Identity().ClusterID != 42 {
		t.Fatalf("empty dir report %+v identity %+v", s.OpenReport(), s.Identity())
	}
	s.Close()
	if _, err := OpenStore(empty, StoreOptions{ClusterID: 43}); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("other cluster: %v", err)
	}
}

func TestUnknownMarkerVersionFailsClosed(t *testing.T) {
	s, dir := openTemp(t)
	s.Close()
	marker := filepath.Join(dir, MarkerFileName)
	b, _ := os.ReadFile(marker)
	if err := os.WriteFile(marker, []byte(strings.Replace(string(b), `"v": 1`, `"v": 2`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("marker v2: %v", err)
	}
	if err := os.WriteFile(marker, []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage marker: %v", err)
	}
}

// twoBuckets makes a closed store with records a,b in bucket 1 and c in 2.
func twoBuckets(t *testing.T) string {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	mustPut(t, s, "a", incN(1), valueOf("a", 100))
	mustPut(t, s, "b", incN(2), valueOf("b", 100))
	mustPut(t, s, "c", incN(3), valueOf("c", 100))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCorruptMetadataFailsClosedAndPreservesBucketFiles(t *testing.T) {
	corruptions := map[string]func(b []byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-7] },
		"empty":        func([]byte) []byte { return nil },
		"bad checksum": func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			dir := twoBuckets(t)
			// A tmp leftover must survive the failed open too.
			if err := os.WriteFile(filepath.Join(dir, metaTmpName(2)), []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
			mp := filepath.Join(dir, metaName(1))
			b, _ := os.ReadFile(mp)
			if err := os.WriteFile(mp, corrupt(b), 0o644); err != nil {
				t.Fatal(err)
			}
			before := testutil.DirContents(t, dir)
			_, err := OpenStore(dir, StoreOptions{})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), metaName(1)) {
				t.Fatalf("open: %v, want ErrCorrupt naming %s", err, metaName(1))
			}
			sameSnapshot(t, before, testutil.DirContents(t, dir))
			rep, err := Inspect(dir)
			if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], metaName(1)) {
				t.Fatalf("inspect: %v %+v", err, rep.Problems)
			}
		})
	}
	t.Run("unknown version", func(t *testing.T) {
		dir := twoBuckets(t)
		m := readMetaFile(t, dir, 1)
		m.V = metaVersionEvicted + 1
		m.Checksum = 0
		raw, err := sealChecksum(m) // a well-formed file of a future version
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, metaName(1)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		before := testutil.DirContents(t, dir)
		if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), metaName(1)) {
			t.Fatalf("open: %v, want ErrUnknownVersion naming the file", err)
		}
		sameSnapshot(t, before, testutil.DirContents(t, dir))
	})
	t.Run("record beyond data", func(t *testing.T) {
		dir := twoBuckets(t)
		m := readMetaFile(t, dir, 1)
		m.Objects[1].Size = m.DataSize // runs off the committed data
		raw, err := encodeMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, metaName(1)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v", err)
		}
	})
}

func TestOpenCleansLeftoversAndReportsThem(t *testing.T) {
	dir := twoBuckets(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(filepath.Join(dir, bucketName(1))))                                  // meta without data
	must(os.WriteFile(filepath.Join(dir, bucketName(9)), []byte("uncommitted"), 0o644)) // data without meta
	must(os.WriteFile(filepath.Join(dir, metaTmpName(2)), []byte("partial"), 0o644))    // interrupted persistence
	must(os.WriteFile(filepath.Join(dir, journalName(7)), []byte("journal"), 0o644))    // journal of no bucket
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	defer s.Close()
	rep := s.OpenReport()
	if len(rep.RemovedStaleMetas) != 1 || len(rep.RemovedOrphanBuckets) != 1 || len(rep.RemovedTmpFiles) != 1 || !slices.Contains(rep.RemovedStaleJournals, journalName(7)) {
		t.Fatalf("report %+v", rep)
	}
	for _, n := range []string{metaName(1), bucketName(9), metaTmpName(2), journalName(7)} {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s not removed: %v", n, err)
		}
	}
	mustGet(t, s, "c", incN(3), valueOf("c", 100))
	if _, err := s.Get("a", incN(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record of a removed bucket: %v", err)
	}
	// New buckets never reuse an id seen on disk.
	mustPut(t, s, "d", incN(4), []byte("d"))
	mustPut(t, s, "e", incN(5), []byte("e"))
	if got := bucketOf(t, s, "e", incN(5)); got != 10 {
		t.Fatalf("new bucket id %d, want 10", got)
	}
}

func TestGCIntentFailsClosed(t *testing.T) {
	dir := twoBuckets(t)
	if err := os.WriteFile(filepath.Join(dir, GCIntentFileName), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrGCIntentPending) {
		t.Fatalf("open: %v", err)
	}
}

func TestMetadataIsBackwardCompatible(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "legacy-v0"))
	// The fixture really is the legacy shape: no "v", "inc" or "tomb" keys.
	var raw map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, metaName(1)))
	if err := msgpack.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["v"]; ok {
		t.Fatal("fixture carries a version field")
	}
	if obj := raw["objects"].([]any)[0].(map[string]any); obj["inc"] != nil || obj["tomb"] != nil {
		t.Fatalf("fixture record carries new fields: %v", obj)
	}

	s := openT(t, dir, StoreOptions{})
	if s.OpenReport().LegacyBuckets != 1 {
		t.Fatalf("report %+v", s.OpenReport())
	}
	zero := api.ObjectIncarnation{}
	for _, k := range legacyFixtureKeys {
		mustGet(t, s, k, zero, legacyFixtureValue(k))
	}
	if u := s.Usage(); u.LiveObjects != len(legacyFixtureKeys) || u.TombstonedObjects != 0 {
		t.Fatalf("usage %+v", u)
	}
	// A legacy bucket is never appended to; new puts open a new bucket.
	mustPut(t, s, "fresh", incN(1), []byte("fresh"))
	if bucketOf(t, s, "fresh", incN(1)) == 1 {
		t.Fatal("put appended to a legacy bucket")
	}
	// A task for the legacy incarnation (zero) tombstones it; the bucket is
	// rewritten in the current version.
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, legacyFixtureKeys[0], zero)}), api.AckRemoved)
	s.Close()
	if m := readMetaFile(t, dir, 1); m.V != metaVersionCurrent || !m.Objects[0].Tombstoned || m.Objects[1].Tombstoned {
		t.Fatalf("rewritten metadata %+v", m)
	}
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if _, err := s.Get(legacyFixtureKeys[0], zero); !errors.Is(err, ErrNotFound) {
		t.Fatalf("legacy record after tombstone and reopen: %v", err)
	}
	mustGet(t, s, legacyFixtureKeys[1], zero, legacyFixtureValue(legacyFixtureKeys[1]))
}

var legacyFixtureKeys = []string{"legacy/alpha", "legacy/beta", "legacy/gamma"}

func legacyFixtureValue(k string) []byte { return valueOf(k, 777) }

// TestWriteLegacyFixture regenerates testdata/legacy-v0 when
// SEXTON_WRITE_FIXTURES=1; otherwise it checks the committed fixture still
// matches what the legacy shape in code would write.
func TestWriteLegacyFixture(t *testing.T) {
	var data []byte
	lm := legacyBucketMetadata{BucketID: 1}
	for _, k := range legacyFixtureKeys {
		v := legacyFixtureValue(k)
		lm.Objects = append(lm.Objects, legacyObjectMeta{Key: k, Tenant: api.DefaultTenant,
			Offset: int64(len(data)), Size: int64(len(v)), CRC32C: crc32c(v)})
		data = append(data, v...)
	}
	lm.DataSize = int64(len(data))
	meta, err := encodeLegacyMeta(&lm)
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte(`{"v":1,"segment_id":"0b7f3e0e-8c55-4d2a-9d1e-5a8f2b7c6d10","cluster_id":0,"created":"2025-01-01T00:00:00Z"}` + "\n")
	files := map[string][]byte{bucketName(1): data, metaName(1): meta, MarkerFileName: marker}
	dir := filepath.Join("testdata", "legacy-v0")
	if os.Getenv("SEXTON_WRITE_FIXTURES") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for n, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(got) != string(want) {
			t.Fatalf("fixture %s differs from the legacy shape (%v); regenerate with SEXTON_WRITE_FIXTURES=1", n, err)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	o, err := optionsFromLookup(env(map[string]string{EnvBucketSizeLimit: "1048576", EnvBucketKeysLimit: "64", EnvAdoptUnmarked: "1"}))
	if err != nil || o.BucketSizeLimit != 1<<20 || o.BucketKeysLimit != 64 || !o.AdoptUnmarked {
		t.Fatalf("%+v %v", o, err)
	}
	o, err = optionsFromLookup(env(nil))
	if err != nil || o.BucketSizeLimit != 0 || o.AdoptUnmarked {
		t.Fatalf("unset: %+v %v", o, err)
	}
	for _, bad := range []map[string]string{
		{EnvBucketSizeLimit: "256MiB"}, {EnvBucketSizeLimit: "-1"}, {EnvBucketKeysLimit: "many"},
		{EnvBucketKeysLimit: "1000000"}, {EnvAdoptUnmarked: "maybe"},
	} {
		if _, err := optionsFromLookup(env(bad)); !errors.Is(err, ErrBadOptions) {
			t.Errorf("%v: %v, want ErrBadOptions", bad, err)
		}
	}
}

func TestLockFailureIsNotInUse(t *testing.T) {
	// A lock error other than contention must not be reported as "in use".
	opts, ffs := faultyOpts(0)
	ffs.Inject(ruleLock(syscall.EACCES))
	_, err := OpenStore(t.TempDir(), opts)
	if err == nil || errors.Is(err, ErrDirectoryInUse) {
		t.Fatalf("open: %v", err)
	}
}
