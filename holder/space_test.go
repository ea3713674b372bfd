package holder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
	"sexton/transport"
)

// Sizes of the full-disk scenarios: 4-key buckets of 32 KiB values, so a
// bucket with half its records removed has 64 KiB live, which a merge can
// copy inside half the 256 KiB reserve.
const (
	fullValueSize  = 32 << 10
	fullReserve    = 256 << 10
	fullBucketKeys = 4
	// fullCapacity is the issue's --capacity: far more than the disk.
	fullCapacity = 100 << 20
)

// syncBuffer is a log sink tests read while the holder writes to it.
type syncBuffer struct{ testutil.SyncBuffer }

func (b *syncBuffer) count(substr string) int { return strings.Count(b.String(), substr) }

// lines are the log lines containing substr.
func (b *syncBuffer) lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func newTestLogger(buf *syncBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "holder", Level: hclog.Info, Output: buf})
}

// taskMaster is a fake master that hands out delete tasks until they are
// acked terminally, the way the real one keeps them pending.
type taskMaster struct {
	ln  net.Listener
	srv *transport.Server

	mu        sync.Mutex
	pending   map[uint64]api.LocalDeleteTask
	acked     map[uint64]api.AckOutcome
	mounts    []api.MountLocalDiskRequest
	heartbeat api.HeartbeatRequest
	wake      chan struct{}
}

func startTaskMaster(t *testing.T) *taskMaster {
	t.Helper()
	m := &taskMaster{pending: map[uint64]api.LocalDeleteTask{}, acked: map[uint64]api.AckOutcome{}, wake: make(chan struct{}, 1)}
	key := grant.NewKey()
	m.srv = transport.NewServer(transport.ServerConfig{})
	transport.Register(m.srv, api.MethodMountLocalDisk, func(_ context.Context, req *api.MountLocalDiskRequest) (*api.MountLocalDiskResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.mounts = append(m.mounts, *req)
		return &api.MountLocalDiskResponse{MountEpoch: 1, MasterEpoch: 1, ClusterID: testCluster, GrantKey: key}, nil
	})
	transport.Register(m.srv, api.MethodHeartbeat, func(_ context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.heartbeat = *req
		return &api.HeartbeatResponse{MasterEpoch: 1}, nil
	})
	transport.Register(m.srv, api.MethodFetchLocalDeleteTasks, func(ctx context.Context, req *api.FetchTasksRequest) (*api.FetchTasksResponse, error) {
		for {
			m.mu.Lock()
			var tasks []api.LocalDeleteTask
			for _, tk := range m.pending {
				tasks = append(tasks, tk)
			}
			m.mu.Unlock()
			if len(tasks) > 0 {
				return &api.FetchTasksResponse{MasterEpoch: 1, Tasks: tasks}, nil
			}
			select {
			case <-m.wake:
			case <-time.After(time.Duration(req.WaitMillis) * time.Millisecond):
				return &api.FetchTasksResponse{MasterEpoch: 1}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
	transport.Register(m.srv, api.MethodAckLocalDeleteTasks, func(_ context.Context, req *api.AckTasksRequest) (*api.AckTasksResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		n := 0
		for _, r := range req.Results {
			if _, ok := m.pending[r.TaskID]; ok && r.Outcome.Terminal() {
				delete(m.pending, r.TaskID)
				m.acked[r.TaskID] = r.Outcome
				n++
			}
		}
		return &api.AckTasksResponse{Dropped: n}, nil
	})
	m.ln = serveFakeMaster(t, m.srv)
	return m
}

func (m *taskMaster) add(tasks ...api.LocalDeleteTask) {
	m.mu.Lock()
	for _, tk := range tasks {
		m.pending[tk.ID] = tk
	}
	m.mu.Unlock()
	signal(m.wake)
}

func (m *taskMaster) state() (pending int, acked map[uint64]api.AckOutcome, hb api.HeartbeatRequest, mounts []api.MountLocalDiskRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	acked = make(map[uint64]api.AckOutcome, len(m.acked))
	for k, v := range m.acked {
		acked[k] = v
	}
	return len(m.pending), acked, m.heartbeat, append([]api.MountLocalDiskRequest(nil), m.mounts...)
}

// fullDisk is a store on a small filesystem, a holder service following a
// task master, and the objects stored.
type fullDisk struct {
	t      *testing.T
	s      *Store
	svc    *Service
	m      *taskMaster
	logs   *syncBuffer
	keys   []string
	incs   map[string]api.ObjectIncarnation
	vals   map[string][]byte
	n      uint64
	filler func() // takes every free byte left, as another writer would
}

func fullDiskOptions(fs fsys.FS, logs *syncBuffer) StoreOptions {
	return StoreOptions{FS: fs, BucketKeysLimit: fullBucketKeys, BucketSizeLimit: fullBucketKeys * fullValueSize,
		MetadataReserve: fullReserve, Logger: newTestLogger(logs)}
}

func startFullDisk(t *testing.T, dir string, fs fsys.FS, filler func()) *fullDisk {
	t.Helper()
	d := &fullDisk{t: t, logs: &syncBuffer{}, incs: map[string]api.ObjectIncarnation{}, vals: map[string][]byte{}, filler: filler}
	d.s = openT(t, dir, fullDiskOptions(fs, d.logs))
	t.Cleanup(func() { d.s.Close() })
	gc := testGCOptions()
	gc.Interval = 20 * time.Millisecond
	gc.Capacity = fullCapacity
	if err := d.s.StartGC(gc, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// follow starts the holder's service against a fake master and waits for
// the first mount to bind the store to the master's cluster.
func (d *fullDisk) follow() {
	t := d.t
	t.Helper()
	d.m = startTaskMaster(t)
	svc, err := StartService(d.s, ServiceConfig{Masters: []string{d.m.ln.Addr().String()}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond, Capacity: fullCapacity, Logger: d.s.log})
	if err != nil {
		t.Fatal(err)
	}
	d.svc = svc
	t.Cleanup(svc.Close)
	testutil.WaitFor(t, 10*time.Second, func() bool { return d.s.Identity().ClusterID != 0 }, "the first mount to bind the store to the cluster")
}

// put stores one more object; it returns the Put's error.
func (d *fullDisk) put() error {
	d.n++
	key := fmt.Sprintf("obj-%03d", d.n)
	inc, val := incN(d.n), valueOf(key, fullValueSize)
	if err := d.s.Put(key, "t", inc, val); err != nil {
		return err
	}
	d.keys = append(d.keys, key)
	d.incs[key], d.vals[key] = inc, val
	return nil
}

// fill puts until the holder answers NO_SPACE, which must come before the
// disk is out of bytes: the metadata reserve is still free.
func (d *fullDisk) fill() {
	d.t.Helper()
	for i := 0; ; i++ {
		err := d.put()
		if err == nil {
			continue
		}
		if !errors.Is(err, api.ErrNoSpace) || api.CodeOf(storeError(err)) != api.CodeNoSpace {
			d.t.Fatalf("put %d: %v, want NO_SPACE once the disk is full", i, err)
		}
		if len(d.keys) < 8 {
			d.t.Fatalf("NO_SPACE after only %d puts", len(d.keys))
		}
		return
	}
}

// run is the sequence: fill to NO_SPACE, take the rest of the disk,
// remove every other object through the master's tasks, and expect the
// tasks acked, the space reclaimed, the reserve back and new puts taken,
// all within seconds.
func (d *fullDisk) run() {
	t := d.t
	d.follow()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newSpaceCollector(d.s))
	metrics := func(stage string) {
		vals, _ := gathered(t, reg)
		var names []string
		for n := range vals {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, " %s=%.0f", n, vals[n])
		}
		t.Logf("metrics %s:%s", stage, b.String())
	}
	d.fill()
	st := d.s.SpaceStats()
	if st.PutsRefused == 0 || !st.ReserveHeld {
		t.Fatalf("after filling: %+v, want puts refused with the reserve held", st)
	}
	if st.CapacityEffectiveBytes >= fullCapacity || st.CapacityEffectiveBytes > st.FSTotalBytes {
		t.Fatalf("capacity not clamped to the filesystem: %+v", st)
	}
	d.filler()
	if sp, _ := d.s.fs.Statfs(d.s.dir); sp.Free >= 4096 {
		t.Fatalf("the filler left %d bytes free", sp.Free)
	}
	metrics("disk full")
	var tasks []api.LocalDeleteTask
	removed := map[string]bool{}
	for i, k := range d.keys {
		if i%2 == 0 {
			tasks = append(tasks, api.LocalDeleteTask{ID: uint64(i + 1), Segment: d.s.SegmentID(), Key: k, Incarnation: d.incs[k]})
			removed[k] = true
		}
	}
	start := time.Now()
	d.m.add(tasks...)
	testutil.WaitFor(t, 10*time.Second, func() bool { p, _, _, _ := d.m.state(); return p == 0 }, "every delete task acked")
	acked := time.Since(start)
	metrics("tasks acked")
	_, outcomes, _, _ := d.m.state()
	for id, o := range outcomes {
		if o != api.AckRemoved {
			t.Fatalf("task %d acked %s, want REMOVED", id, o)
		}
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		u, st := d.s.Usage(), d.s.SpaceStats()
		return u.TombstonedObjects == 0 && u.DeadBytes == 0 && st.ReserveHeld
	}, "GC to reclaim every tombstone and the reserve to come back")
	reclaimed := time.Since(start)
	metrics("reclaimed")
	st = d.s.SpaceStats()
	if st.ReserveReleases != 1 || st.ReserveRecreations != 1 {
		t.Fatalf("reserve released %d and recreated %d times, want 1 and 1: %+v", st.ReserveReleases, st.ReserveRecreations, st)
	}
	var enospc uint64
	for _, p := range []string{spacePathTombstone, spacePathFloor, spacePathGCFloor, spacePathGCIntent, spacePathGCMeta} {
		enospc += st.ENOSPC[p]
	}
	if enospc == 0 {
		t.Fatalf("no metadata write met ENOSPC: the scenario did not fill the disk: %+v", st)
	}
	for range 3 {
		if err := d.put(); err != nil {
			t.Fatalf("put after the space was reclaimed: %v", err)
		}
	}
	for _, k := range d.keys {
		if removed[k] {
			if _, err := d.s.Get(k, d.incs[k]); !errors.Is(err, ErrNotFound) {
				t.Fatalf("removed %s readable: %v", k, err)
			}
			wantRefused(t, d.s, k, d.incs[k])
		} else {
			mustGet(t, d.s, k, d.incs[k], d.vals[k])
		}
	}
	// One warning for the release, one line for the recreation; the
	// per-retry warnings are rate-limited.
	if n := d.logs.count("disk full: released the space reserve"); n != 1 {
		t.Fatalf("release logged %d times, want 1:\n%s", n, d.logs)
	}
	if n := d.logs.count("space reserve recreated"); n != 1 {
		t.Fatalf("recreation logged %d times, want 1:\n%s", n, d.logs)
	}
	if n := d.logs.count("disk full: refusing puts"); n != 1 {
		t.Fatalf("put refusals logged %d times, want 1 (rate-limited):\n%s", n, d.logs)
	}
	if n := d.logs.count("--capacity exceeds the filesystem"); n != 1 {
		t.Fatalf("the clamped capacity was logged %d times at start, want 1:\n%s", n, d.logs)
	}
	// The scenario can finish within one heartbeat interval; wait for the
	// first heartbeat rather than read a capacity that was never sent.
	testutil.WaitFor(t, 10*time.Second, func() bool { _, _, hb, _ := d.m.state(); return hb.Capacity != 0 }, "a heartbeat")
	// The scenario can finish within one heartbeat interval; wait for the
	// first heartbeat rather than read a capacity that was never sent.
	testutil.WaitFor(t, 10*time.Second, func() bool { _, _, hb, _ := d.m.state(); return hb.Capacity != 0 }, "a heartbeat")
	_, _, hb, mounts := d.m.state()
	if hb.Capacity <= 0 || hb.Capacity >= fullCapacity || len(mounts) == 0 || mounts[0].Capacity >= fullCapacity {
		t.Fatalf("reported capacity not clamped: heartbeat %d, mounts %+v", hb.Capacity, mounts)
	}
	t.Logf("%d objects, %d removed: acked after %v, reclaimed and reserve back after %v; space %+v", len(d.keys), len(tasks), acked, reclaimed, st)
	for _, l := range d.logs.lines("") {
		if strings.Contains(l, "disk full") || strings.Contains(l, "reserve") || strings.Contains(l, "capacity") {
			t.Log(l)
		}
	}
}

// Unprivileged: the fault-injecting FS models a 2 MiB filesystem that
// fails writes with ENOSPC once its bytes run out.
func TestFullDiskDeletionProceedsModel(t *testing.T) {
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(2<<20, 2<<20)
	d := startFullDisk(t, t.TempDir(), ff, func() { ff.TakeSpace(ff.FreeSpace()) })
	d.run()
}

// A holder whose disk filled up before it ever mounted (a fresh holder
// started on a full disk, or one whose first mount came after its disk
// filled) still mounts: binding the identity marker to the cluster is a
// metadata write of the deletion path, so it releases the space reserve
// when it meets ENOSPC. Without that the mount failed forever and no
// delete could reach the holder to free the disk.
func TestFirstMountOnAFullDisk(t *testing.T) {
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(2<<20, 2<<20)
	d := startFullDisk(t, t.TempDir(), ff, func() { ff.TakeSpace(ff.FreeSpace()) })
	d.fill()
	d.filler()
	d.follow()
	if st := d.s.SpaceStats(); st.ENOSPC[spacePathIdentity] != 1 || st.ReserveReleases != 1 {
		t.Fatalf("the bind did not meet ENOSPC and release the reserve once: %+v", st)
	}
	var tasks []api.LocalDeleteTask
	for i, k := range d.keys {
		if i%2 == 0 {
			tasks = append(tasks, api.LocalDeleteTask{ID: uint64(i + 1), Segment: d.s.SegmentID(), Key: k, Incarnation: d.incs[k]})
		}
	}
	d.m.add(tasks...)
	testutil.WaitFor(t, 10*time.Second, func() bool { p, _, _, _ := d.m.state(); return p == 0 }, "every delete task acked")
	for k, inc := range d.incs {
		if _, err := d.s.Get(k, inc); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("get %s: %v", k, err)
		}
	}
}

// On a real 4 MiB tmpfs (needs root to mount).
func TestFullDiskDeletionProceedsTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	d := startFullDisk(t, dir, fsys.OS{}, func() { fillFilesystem(t, filepath.Join(dir, "..", "filler")) })
	d.run()
}

// mountTmpfs mounts a tmpfs of size under a fresh directory and returns a
// store directory inside it; it skips the test when that is not possible.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestFullDiskDeletionProceedsModel covers the same sequence unprivileged")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s); TestFullDiskDeletionProceedsModel covers the same sequence unprivileged", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "store")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fillFilesystem writes name until the filesystem is out of space.
func fillFilesystem(t *testing.T, name string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// ENOSPC on a metadata path with no reserve left to release leaves the
// previous state authoritative: the directory is byte-identical (no
// .meta.tmp, .tombstone_floor.tmp or .bucket_gc_intent.tmp left behind),
// memory unchanged, the tasks retryable; the repeated failure is logged
// once, not once per retry; and once space is back the same tasks go
// through.
func TestENOSPCLeavesPreviousStateAuthoritative(t *testing.T) {
	dir := t.TempDir()
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(1<<20, 1<<20)
	logs := &syncBuffer{}
	s := openT(t, dir, StoreOptions{FS: ff, BucketKeysLimit: 4, Logger: newTestLogger(logs)})
	defer s.Close()
	for i := 1; i <= 5; i++ {
		mustPut(t, s, fmt.Sprintf("k%d", i), incN(uint64(i)), valueOf("k", 1000))
	}
	// Bucket 1 (k1..k4) fully dead: GC's unlink-only round, which needs
	// no space for data, still has to record floors first.
	var dead []api.LocalDeleteTask
	for i := 1; i <= 4; i++ {
		dead = append(dead, task(s, uint64(i), fmt.Sprintf("k%d", i), incN(uint64(i))))
	}
	wantOutcomes(t, s.BatchMarkDeleted(dead), api.AckRemoved, api.AckRemoved, api.AckRemoved, api.AckRemoved)
	ff.TakeSpace(ff.FreeSpace())
	before := testutil.DirContents(t, dir)

	w := newGCWorker(s, testGCOptions(), nil)
	for range 3 {
		w.pass()
		wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 5, "k5", incN(5)), task(s, 9, "absent", incN(9))}),
			api.AckRetryableFailure, api.AckRetryableFailure)
	}
	sameSnapshot(t, before, testutil.DirContents(t, dir))
	if st := s.GCStats(); !strings.Contains(st.LastError, "no space") || st.BucketsUnlinked != 0 {
		t.Fatalf("GC on a full disk: %+v, want a failed round and ENOSPC reported", st)
	}
	mustGet(t, s, "k5", incN(5), valueOf("k", 1000))
	if n := logs.count("tombstone persistence failed"); n != 1 {
		t.Fatalf("the repeated tombstone failure was logged %d times, want 1:\n%s", n, logs)
	}
	st := s.SpaceStats()
	if st.ENOSPC[spacePathTombstone] != 3 || st.ENOSPC[spacePathFloor] != 3 || st.ENOSPC[spacePathGCFloor] != 3 || st.ReserveReleases != 0 {
		t.Fatalf("ENOSPC counters %+v", st)
	}

	// A restart sees exactly the previous state.
	s.Close()
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 4})
	if r := s.OpenReport(); len(r.RemovedTmpFiles) != 0 {
		t.Fatalf("restart found half-written files: %v", r.RemovedTmpFiles)
	}
	mustGet(t, s, "k5", incN(5), valueOf("k", 1000))
	wantRefused(t, s, "k1", incN(1))
	s.Close()

	ff.TakeSpace(-(1 << 20))
	s = openT(t, dir, StoreOptions{FS: ff, BucketKeysLimit: 4})
	defer s.Close()
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 5, "k5", incN(5)), task(s, 9, "absent", incN(9))}),
		api.AckRemoved, api.AckStaleVersion)
}

// The capacity is the smaller of the flag and what the filesystem can give
// the store's data: its files plus the free space less the reserve (and
// less the reserve file still owed after a release). No flag stays
// unknown; a flag the disk can hold is reported as given.
func TestEffectiveCapacityClampsToFilesystem(t *testing.T) {
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(3<<20, 3<<20)
	s := openT(t, t.TempDir(), StoreOptions{FS: ff, MetadataReserve: fullReserve})
	defer s.Close()
	mustPut(t, s, "k", incN(1), valueOf("k", 100<<10))
	used := s.Usage().UsedBytes
	for _, c := range []struct{ flag, want int64 }{
		{0, 0},
		{1 << 20, 1 << 20},
		{fullCapacity, used + ff.FreeSpace() - fullReserve},
	} {
		s.SetCapacity(c.flag)
		if got := s.EffectiveCapacity(); got != c.want {
			t.Fatalf("flag %d: effective %d, want %d", c.flag, got, c.want)
		}
	}
	// Released reserve: its bytes are free but owed back, not capacity.
	ff.TakeSpace(ff.FreeSpace())
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}), api.AckRemoved)
	if got, st := s.EffectiveCapacity(), s.SpaceStats(); got != s.Usage().UsedBytes || st.ReserveHeld {
		t.Fatalf("after the release: effective %d, used %d, %+v", got, s.Usage().UsedBytes, st)
	}
}

// On a full disk GC first unlinks fully dead buckets (their round copies
// nothing; its floor and intent take the released reserve), and starts a
// merge only once its target fits the free space: a merge that does not
// fit is not attempted, so it neither fails on ENOSPC nor eats the
// reserve.
func TestFullDiskGCUnlinksFirstAndMergesOnlyWhatFits(t *testing.T) {
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(2<<20, 2<<20)
	s := openT(t, t.TempDir(), StoreOptions{FS: ff, BucketKeysLimit: fullBucketKeys, MetadataReserve: fullReserve})
	defer s.Close()
	for i := 1; i <= 12; i++ { // buckets 1..3, four records each
		mustPut(t, s, fmt.Sprintf("k%02d", i), incN(uint64(i)), valueOf("k", fullValueSize))
	}
	kill := func(ids ...int) {
		t.Helper()
		var tasks []api.LocalDeleteTask
		for _, i := range ids {
			tasks = append(tasks, task(s, uint64(i), fmt.Sprintf("k%02d", i), incN(uint64(i))))
		}
		for _, r := range s.BatchMarkDeleted(tasks) {
			if r.Outcome != api.AckRemoved {
				t.Fatalf("%s: %s", r.Key, r.Outcome)
			}
		}
	}
	kill(5, 6) // bucket 2 half dead: a merge of 64 KiB live
	ff.TakeSpace(ff.FreeSpace())
	gc := testGCOptions()
	w := newGCWorker(s, gc, nil)
	w.pass()
	if st, sp := s.GCStats(), s.SpaceStats(); st.Rounds != 0 || st.LastError != "" || sp.ENOSPC[spacePathGCData] != 0 || !sp.ReserveHeld {
		t.Fatalf("a merge that cannot fit was attempted: %+v %+v", st, sp)
	}

	kill(1, 2, 3, 4) // bucket 1 fully dead (this tombstone takes the reserve)
	w.pass()
	st, sp := s.GCStats(), s.SpaceStats()
	if st.Rounds != 2 || st.BucketsUnlinked != 2 || st.BucketsMerged != 1 || sp.ENOSPC[spacePathGCData] != 0 || st.LastError != "" {
		t.Fatalf("want the dead bucket unlinked, then the merge that now fits: %+v %+v", st, sp)
	}
	if u := s.Usage(); u.TombstonedObjects != 0 {
		t.Fatalf("tombstones left: %+v", u)
	}
	for i := 7; i <= 12; i++ {
		mustGet(t, s, fmt.Sprintf("k%02d", i), incN(uint64(i)), valueOf("k", fullValueSize))
	}
}

// A small disk refuses puts at the metadata reserve while usage is far
// from any watermark (here there is no capacity, so no watermarks at all)
// and while every bucket's dead share is below the deleted ratio: nothing
// started GC, and with 3 of every 8 objects removed no put ever
// succeeded. The refusal itself must start GC: the worker, woken by it,
// reclaims dead bytes of any ratio, and puts are taken again. The
// periodic wake is an hour, so only the refusal can start it.
func TestRefusedPutsStartGCWhateverTheWatermarks(t *testing.T) {
	const valueSize, keys = 8 << 10, 8
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(1<<20, 1<<20)
	logs := &syncBuffer{}
	s := openT(t, t.TempDir(), StoreOptions{FS: ff, BucketKeysLimit: keys, BucketSizeLimit: keys * valueSize,
		MetadataReserve: fullReserve, Logger: newTestLogger(logs)})
	defer s.Close()
	gc := testGCOptions()
	gc.Interval = time.Hour
	gc.DeletedRatio = 0.5
	gc.Capacity = 0
	if err := s.StartGC(gc, nil); err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	put := func() error {
		n++
		return s.Put(fmt.Sprintf("k%03d", n), "t", incN(n), valueOf("k", valueSize))
	}
	for {
		err := put()
		if err == nil {
			continue
		}
		if api.CodeOf(storeError(err)) != api.CodeNoSpace {
			t.Fatalf("put %d: %v, want NO_SPACE once the disk is full", n, err)
		}
		break
	}
	stored := n - 1
	if stored < 4*keys {
		t.Fatalf("NO_SPACE after only %d puts", stored)
	}
	// That refusal woke a pass, which had no dead bytes to reclaim yet.
	testutil.WaitFor(t, 10*time.Second, func() bool { return s.GCStats().PutsRefusedPasses > 0 }, "the pass the refusal woke")
	passes := s.GCStats().Passes
	// 3 of every 8 records dead: 37.5 % of every bucket, below the ratio.
	var tasks []api.LocalDeleteTask
	dead := map[uint64]bool{}
	for i := uint64(1); i <= stored; i++ {
		if i%keys < 3 {
			tasks = append(tasks, task(s, i, fmt.Sprintf("k%03d", i), incN(i)))
			dead[i] = true
		}
	}
	for _, r := range s.BatchMarkDeleted(tasks) {
		if r.Outcome != api.AckRemoved {
			t.Fatalf("%s: %s", r.Key, r.Outcome)
		}
	}
	// The tombstones' own wake finds nothing that qualifies.
	testutil.WaitFor(t, 10*time.Second, func() bool { return s.GCStats().Passes > passes }, "the pass the tombstones woke")
	if st, u := s.GCStats(), s.Usage(); st.Rounds != 0 || u.DeadBytes == 0 {
		t.Fatalf("GC ran before any put was refused (the scenario needs it not to): %+v %+v", st, u)
	}
	deadBefore := s.Usage().DeadBytes

	// A refused put wakes GC, which reclaims the dead bytes; puts are
	// taken again.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		if err := put(); err != nil {
			if api.CodeOf(storeError(err)) != api.CodeNoSpace {
				t.Fatalf("put %d: %v", n, err)
			}
			return false
		}
		return true
	}, "a put to succeed after refusals")
	waitDeadReclaimed(t, s)
	if st := s.GCStats(); st.PutsRefusedPasses == 0 || st.Rounds == 0 || st.LastError != "" {
		t.Fatalf("after the refusal: %+v, want rounds started by refused puts reclaiming the %d dead bytes", st, deadBefore)
	}
	for i := uint64(1); i <= stored; i++ {
		key := fmt.Sprintf("k%03d", i)
		if dead[i] {
			wantRefused(t, s, key, incN(i))
			continue
		}
		mustGet(t, s, key, incN(i), valueOf("k", valueSize))
	}
	mustGet(t, s, fmt.Sprintf("k%03d", n), incN(n), valueOf("k", valueSize))
}

// When puts are refused and dead bytes remain but no round fits the free
// space (one bucket holds everything, and its live bytes exceed what a
// merge may copy), the refusal's pass says so, naming the dead bytes and
// the remedy, instead of leaving the operator with NO_SPACE alone.
func TestRefusedPutsWithNoRoundThatFitsAreLogged(t *testing.T) {
	const valueSize = 32 << 10
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(1<<20, 1<<20)
	logs := &syncBuffer{}
	s := openT(t, t.TempDir(), StoreOptions{FS: ff, BucketKeysLimit: 64, BucketSizeLimit: 4 << 20,
		MetadataReserve: fullReserve, Logger: newTestLogger(logs)})
	defer s.Close()
	// The scenario is the data alone filling the disk: no value copies in
	// journals, which the refusal's compaction would give back.
	s.inlineMax = 0
	gc := testGCOptions()
	gc.Interval = time.Hour
	if err := s.StartGC(gc, nil); err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for ; ; n++ {
		if err := s.Put(fmt.Sprintf("k%03d", n+1), "t", incN(n+1), valueOf("k", valueSize)); err != nil {
			break
		}
	}
	if b := s.BucketStats(); len(b) != 1 || n < 8 {
		t.Fatalf("%d objects in %d buckets, want one bucket of at least 8", n, len(b))
	}
	var tasks []api.LocalDeleteTask
	for i := uint64(1); i <= n; i += 2 {
		tasks = append(tasks, task(s, i, fmt.Sprintf("k%03d", i), incN(i)))
	}
	s.BatchMarkDeleted(tasks)
	if err := s.Put("more", "t", incN(1000), valueOf("k", valueSize)); api.CodeOf(storeError(err)) != api.CodeNoSpace {
		t.Fatalf("put with half the bucket dead and no merge that fits: %v, want NO_SPACE", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return logs.count("no GC round that reclaims the dead bytes fits the free space") == 1
	}, "the stuck GC to be logged")
	if l := logs.lines("no GC round")[0]; !strings.Contains(l, "dead_bytes=") || !strings.Contains(l, "merge_budget_bytes=") {
		t.Fatalf("the warning does not name the dead bytes and the merge budget: %s", l)
	}
	if st := s.GCStats(); st.Rounds != 0 || st.LastError != "" {
		t.Fatalf("a round ran or failed: %+v", st)
	}
}

// The small disk with the default bucket limits: a 32 MiB
// filesystem, the default metadata reserve, 20 objects of 1 MB (all in one
// bucket) and 10 of them removed. The merge that would reclaim them must
// copy 10 MB of live bytes, more than the free space allows, so no round
// fits; the refusal's pass punches the dead records' bytes out of the
// bucket instead, after which the merge fits and puts are taken again.
// Needs root (it mounts the tmpfs).
func TestRefusedPutsOnASmallDiskPunchDeadBytes(t *testing.T) {
	dir := mountTmpfs(t, "32m")
	logs := &syncBuffer{}
	s := openT(t, dir, StoreOptions{MetadataReserve: MetadataReserveFor(DefaultBucketKeysLimit), Logger: newTestLogger(logs)})
	defer s.Close()
	gc := testGCOptions()
	gc.Interval = time.Hour
	gc.Capacity = 32 << 20
	if err := s.StartGC(gc, nil); err != nil {
		t.Fatal(err)
	}
	putAndRemoveOdd(t, s)
	if b := s.BucketStats(); len(b) != 1 {
		t.Fatalf("%d buckets, want the one default-sized bucket", len(b))
	}
	n := uint64(100)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		n++
		if err := s.Put(fmt.Sprintf("new%d", n), "t", incN(n), valueOf("k", punchSize)); err != nil {
			if api.CodeOf(storeError(err)) != api.CodeNoSpace {
				t.Fatalf("put: %v", err)
			}
			return false
		}
		return true
	}, "a put to succeed after refusals")
	waitDeadReclaimed(t, s)
	st := s.GCStats()
	if st.BytesPunched < (punchObjects/2)*punchSize || st.Rounds == 0 || st.LastError != "" {
		t.Fatalf("want the dead bytes punched and then merged away: %+v", st)
	}
	for i := uint64(1); i <= punchObjects; i++ {
		key := fmt.Sprintf("k%02d", i)
		if i%2 == 1 {
			wantRefused(t, s, key, incN(i))
			continue
		}
		mustGet(t, s, key, incN(i), valueOf("k", punchSize))
	}
	t.Logf("gc %+v; space %+v", st, s.SpaceStats())
}

// Recovery's check of a committed GC target reads live records only: a
// tombstoned record's bytes may have been punched out after the round's
// cleanup, and a cut can bring the unsynced intent removal back. A live
// record's damage is still found.
func TestGCTargetValidationSkipsTombstonedRecords(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 4})
	for i := uint64(1); i <= 4; i++ {
		mustPut(t, s, fmt.Sprintf("k%d", i), incN(i), valueOf("k", 5000))
	}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k2", incN(2))}), api.AckRemoved)
	id := s.BucketStats()[0].ID
	var dead, live ObjectMeta
	s.mu.Lock()
	for _, o := range s.buckets[id].meta.Objects {
		switch o.Key {
		case "k2":
			dead = o
		case "k3":
			live = o
		}
	}
	s.mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	zero := func(o ObjectMeta) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, bucketName(id)), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(make([]byte, o.Size), o.Offset); err != nil {
			t.Fatal(err)
		}
	}
	validate := func() error {
		t.Helper()
		sc, err := scanDir(fsys.OS{}, dir)
		if err != nil {
			t.Fatal(err)
		}
		return validateGCTarget(fsys.OS{}, dir, sc, id)
	}
	zero(dead)
	if err := validate(); err != nil {
		t.Fatalf("a target whose tombstoned record was punched out refused: %v", err)
	}
	zero(live)
	if err := validate(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a target with a damaged live record: %v, want CORRUPT", err)
	}
}

// waitDeadReclaimed waits until s has no dead bytes and no cleanup
// pending: CleanupPending is set with the index switch that drops the
// dead bytes and cleared once the sources are unlinked.
func waitDeadReclaimed(t *testing.T, s *Store) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return s.Usage().DeadBytes == 0 && !s.GCStats().CleanupPending
	}, "every dead byte reclaimed and its files gone")
}

// punchObjects objects of punchSize bytes fill one bucket of the 32 MiB
// tmpfs of the punching tests (putAndRemoveOdd).
const punchObjects, punchSize = 20, 1_000_000

// putAndRemoveOdd puts k01…k20 and removes the odd ones: half the
// bucket's bytes dead.
func putAndRemoveOdd(t *testing.T, s *Store) {
	t.Helper()
	for i := uint64(1); i <= punchObjects; i++ {
		mustPut(t, s, fmt.Sprintf("k%02d", i), incN(i), valueOf("k", punchSize))
	}
	var tasks []api.LocalDeleteTask
	for i := uint64(1); i <= punchObjects; i += 2 {
		tasks = append(tasks, task(s, i, fmt.Sprintf("k%02d", i), incN(i)))
	}
	wantOutcomes(t, s.BatchMarkDeleted(tasks), slices.Repeat([]api.AckOutcome{api.AckRemoved}, len(tasks))...)
}

// The same disk when no put is refused: a merge that qualifies but does
// not fit the free space punches its dead records out first, then runs,
// and the next put is taken at the first try. With a capacity, usage is at
// the high watermark (where the master stops placing puts on the holder,
// so none reaches it to be refused); without one, the bucket qualifies by
// its dead ratio alone. Needs root (it mounts the tmpfs).
func TestMergeThatDoesNotFitPunchesDeadBytesFirst(t *testing.T) {
	for _, capacity := range []int64{32 << 20, 0} {
		t.Run(fmt.Sprintf("capacity-%d", capacity), func(t *testing.T) {
			dir := mountTmpfs(t, "32m")
			s := openT(t, dir, StoreOptions{MetadataReserve: MetadataReserveFor(DefaultBucketKeysLimit)})
			defer s.Close()
			gc := testGCOptions()
			gc.Interval = time.Hour
			gc.Capacity = capacity
			if err := s.StartGC(gc, nil); err != nil {
				t.Fatal(err)
			}
			putAndRemoveOdd(t, s)
			testutil.WaitFor(t, 10*time.Second, func() bool {
				return s.Usage().DeadBytes == 0 && !s.GCStats().CleanupPending
			}, "every dead byte reclaimed and its files gone")
			if st := s.GCStats(); st.PutsRefusedPasses != 0 || st.BytesPunched < (punchObjects/2)*punchSize || st.Rounds == 0 {
				t.Fatalf("want the dead bytes punched, then merged, with no put refused: %+v", st)
			}
			mustPut(t, s, "next", incN(100), valueOf("k", punchSize))
		})
	}
}
