package raftio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"
)

// Store guard defaults: how often a node whose log store cannot write
// tries a probe write to its data dir, how big that write is, and how
// often it repeats that it still cannot write.
const (
	storeProbeInterval        = time.Second
	storeProbeSize            = 64 << 10
	storeProbeName            = ".sexton-write-probe"
	storeStillFailingLogEvery = 30 * time.Second
)

// keyCurrentTerm is the StableStore key under which hashicorp/raft keeps
// its current term (raft.go, keyCurrentTerm); a failed write of it makes
// raft panic.
var keyCurrentTerm = []byte("CurrentTerm")

// errStoreAbandoned answers every write after a term write was dropped
// while the node shut down (StoreGuard.setTerm).
var errStoreAbandoned = errors.New("raft log store: writes refused after shutdown began with the store unable to write")

// StoreGuard sits between hashicorp/raft and a master's log and stable
// store (it is both). It notices when a write fails — a full data dir,
// most often — and keeps the node calm until writes work again:
//
//   - it counts and logs the failure and marks the store "cannot write"
//     (/readyz, Status, sexton_raft_log_store_cannot_write);
//   - while marked, the node's own campaign waits: a term increment by a
//     candidate blocks until a probe write to the data dir succeeds, so a
//     node that cannot store the entries of the term it would win does not
//     win term after term (a full single master's term would climb by
//     hundreds within seconds), and outgoing pre-votes are refused
//     (preVoteGate), so in a cluster it does not even reach that step;
//   - a term write that fails is never returned to raft, which would panic
//     (setCurrentTerm): it waits for a probe to succeed and retries;
//   - the mark clears when a probe write succeeds or a log append does.
//
// The normal path costs two atomic loads per call. master/DESIGN.md ("A full
// data dir") says why the node keeps running raft instead of stopping it.
type StoreGuard struct {
	logs    raft.LogStore
	stable  raft.StableStore
	dataDir string
	log     hclog.Logger
	// noteFailure counts a failed write by operation and reason
	// (metrics); nil in tests that do not need it.
	noteFailure func(op, reason string)

	probeInterval time.Duration
	probeSize     int
	// probe writes, syncs and removes a file in dataDir; replaced in tests.
	probe func() error

	raft      atomic.Pointer[raft.Raft] // set once raft runs
	failing   atomic.Bool               // the fast-path copy of healed != nil
	abandoned atomic.Bool

	termMu     sync.Mutex
	termOnDisk uint64 // the highest term written through the guard (or read at open)

	mu        sync.Mutex
	healed    chan struct{} // closed when the current failing period ends
	lastErr   error
	since     time.Time
	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // the prober
}

func NewStoreGuard(logs raft.LogStore, stable raft.StableStore, dataDir string, log hclog.Logger, noteFailure func(op, reason string)) *StoreGuard {
	g := &StoreGuard{
		logs: logs, stable: stable, dataDir: dataDir, log: log, noteFailure: noteFailure,
		probeInterval: storeProbeInterval, probeSize: storeProbeSize,
		closing: make(chan struct{}),
	}
	g.probe = g.probeDataDir
	// A store without a term yet answers an error (not found): zero.
	g.termOnDisk, _ = stable.GetUint64(keyCurrentTerm)
	return g
}

// SetProbe replaces the guard's probe write to the data dir (tests that
// inject a full disk); call it before raft runs.
func (g *StoreGuard) SetProbe(probe func() error) { g.probe = probe }

// Attach tells the guard which raft instance uses it (campaigning reads
// its state).
func (g *StoreGuard) Attach(r *raft.Raft) { g.raft.Store(r) }

// Close ends every wait and the prober; called before raft is shut down,
// which could otherwise wait forever for a term write parked here.
func (g *StoreGuard) Close() {
	// Under mu, so failed (which checks closing under mu) starts no prober
	// once Wait may have begun.
	g.mu.Lock()
	g.closeOnce.Do(func() { close(g.closing) })
	g.mu.Unlock()
	g.wg.Wait()
}

// State reports whether the store cannot write, since when, and the last
// write error.
func (g *StoreGuard) State() (cannotWrite bool, since time.Time, lastErr error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.healed != nil, g.since, g.lastErr
}

// --- raft.LogStore ---

func (g *StoreGuard) FirstIndex() (uint64, error)            { return g.logs.FirstIndex() }
func (g *StoreGuard) LastIndex() (uint64, error)             { return g.logs.LastIndex() }
func (g *StoreGuard) GetLog(index uint64, l *raft.Log) error { return g.logs.GetLog(index, l) }

func (g *StoreGuard) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

func (g *StoreGuard) StoreLogs(logs []*raft.Log) error {
	if g.abandoned.Load() {
		return errStoreAbandoned
	}
	if err := g.logs.StoreLogs(logs); err != nil {
		g.failed("store_logs", err)
		return err
	}
	if g.failing.Load() {
		g.heal("a log append succeeded")
	}
	return nil
}

func (g *StoreGuard) DeleteRange(min, max uint64) error {
	if g.abandoned.Load() {
		return errStoreAbandoned
	}
	return g.check("delete_range", g.logs.DeleteRange(min, max))
}

// IsMonotonic forwards raft.MonotonicLogStore (raft-wal): raft treats a
// monotonic store differently after a snapshot restore.
func (g *StoreGuard) IsMonotonic() bool {
	m, ok := g.logs.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// --- raft.StableStore ---

func (g *StoreGuard) Get(key []byte) ([]byte, error)       { return g.stable.Get(key) }
func (g *StoreGuard) GetUint64(key []byte) (uint64, error) { return g.stable.GetUint64(key) }

func (g *StoreGuard) Set(key, val []byte) error {
	if g.abandoned.Load() {
		return errStoreAbandoned
	}
	return g.check("set_stable", g.stable.Set(key, val))
}

// SetUint64 stores the vote term (an error raft handles: no vote) or the
// current term (setTerm: never an error).
func (g *StoreGuard) SetUint64(key []byte, val uint64) error {
	if !bytes.Equal(key, keyCurrentTerm) {
		if g.abandoned.Load() {
			return errStoreAbandoned
		}
		return g.check("set_stable", g.stable.SetUint64(key, val))
	}
	return g.setTerm(val)
}

// setTerm persists raft's current term. hashicorp/raft panics when this
// fails, so it never does: a failed write waits for a probe to succeed and
// is tried again. A candidate's own increment while the store cannot write
// waits before it is tried at all: that is what keeps a full node from
// winning a term it cannot store entries in, again and again. Adopting a
// higher term (a follower, or a candidate that lost) is tried at once, so
// a node that can still write its term follows the cluster.
//
// A term at or below the one on disk is not written (terms only grow; a
// lower one is raft's heartbeat fast path racing its main loop).
//
// Only when the node is shutting down while a term write cannot be made
// does this return without having written: the raft instance is ending,
// and every later write of this guard fails, so nothing that depends on
// the unwritten term can reach the disk.
func (g *StoreGuard) setTerm(val uint64) error {
	for attempt := 0; ; attempt++ {
		if g.abandoned.Load() {
			return nil
		}
		if g.failing.Load() && (attempt > 0 || g.campaigning()) && !g.waitHealed() {
			// Shutting down: one last try.
			if err := g.writeTerm(val); err != nil {
				g.abandoned.Store(true)
				g.log.Error("shutting down with the raft term unwritten; refusing every further log store write", "term", val, "error", err)
			}
			return nil
		}
		err := g.writeTerm(val)
		if err == nil {
			return nil
		}
		g.failed("set_term", err)
	}
}

// writeTerm writes val as the current term unless the disk already holds
// val or more. Term writes are serialized (raft's heartbeat fast path can
// run beside its main loop), so a lower term never overwrites a higher one.
func (g *StoreGuard) writeTerm(val uint64) error {
	g.termMu.Lock()
	defer g.termMu.Unlock()
	if val <= g.termOnDisk {
		return nil
	}
	if err := g.stable.SetUint64(keyCurrentTerm, val); err != nil {
		return err
	}
	g.termOnDisk = val
	return nil
}

// campaigning: raft is a candidate, so a term write now is its own
// increment (raft sets Follower before it adopts a term it was sent).
func (g *StoreGuard) campaigning() bool {
	r := g.raft.Load()
	return r != nil && r.State() == raft.Candidate
}

// waitHealed waits until the current failing period ends (true) or the
// guard closes (false).
func (g *StoreGuard) waitHealed() bool {
	g.mu.Lock()
	ch := g.healed
	g.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-g.closing:
		return false
	}
}

func (g *StoreGuard) check(op string, err error) error {
	if err != nil {
		g.failed(op, err)
	}
	return err
}

// failed records a failed write and starts a failing period (log, prober)
// unless one is under way.
func (g *StoreGuard) failed(op string, err error) {
	reason := writeFailureReason(err)
	if g.noteFailure != nil {
		g.noteFailure(op, reason)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastErr = fmt.Errorf("%s: %w", op, err)
	if g.healed != nil {
		return
	}
	g.healed = make(chan struct{})
	g.since = time.Now()
	g.failing.Store(true)
	g.log.Error("raft log store cannot write: this node does not campaign until a write works again (probing the data dir every second)",
		"op", op, "reason", reason, "error", err, "data_dir", g.dataDir, "data_dir_free_bytes", DirFreeBytes(g.dataDir))
	select {
	case <-g.closing:
		return
	default:
	}
	g.wg.Add(1)
	go g.runProber(g.healed)
}

// heal ends the failing period, if any.
func (g *StoreGuard) heal(how string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.healed == nil {
		return
	}
	close(g.healed)
	g.healed = nil
	g.failing.Store(false)
	g.log.Info("raft log store writes again", "how", how, "cannot_write_for", time.Since(g.since).Round(time.Millisecond).String(),
		"data_dir_free_bytes", DirFreeBytes(g.dataDir))
}

// runProber tries a probe write every probeInterval until one succeeds
// (ending the failing period healed belongs to), the period ends another
// way, or the guard closes.
func (g *StoreGuard) runProber(healed chan struct{}) {
	defer g.wg.Done()
	t := time.NewTicker(g.probeInterval)
	defer t.Stop()
	lastLog := time.Now()
	for {
		select {
		case <-g.closing:
			return
		case <-healed:
			return
		case <-t.C:
		}
		err := g.probe()
		if err == nil {
			g.heal("a probe write to the data dir succeeded")
			return
		}
		if time.Since(lastLog) >= storeStillFailingLogEvery {
			lastLog = time.Now()
			_, since, _ := g.State()
			g.log.Warn("raft log store still cannot write", "probe_error", err, "cannot_write_for", time.Since(since).Round(time.Second).String(),
				"data_dir_free_bytes", DirFreeBytes(g.dataDir))
		}
	}
}

// probeDataDir writes probeSize bytes to a file in the data dir, syncs
// and removes it. The file is removed whatever happened, and never kept,
// so the directory is not synced.
func (g *StoreGuard) probeDataDir() error {
	path := filepath.Join(g.dataDir, storeProbeName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	_, werr := f.Write(make([]byte, g.probeSize))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// writeFailureReason names a write error for the failure counter.
func writeFailureReason(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "no space left on device"):
		return "enospc"
	case errors.Is(err, syscall.EDQUOT):
		return "edquot"
	case errors.Is(err, errStoreAbandoned):
		return "shutdown"
	}
	return "other"
}

// DirFreeBytes is the space an unprivileged writer may still use in dir,
// or -1 when statfs fails.
func DirFreeBytes(dir string) int64 {
	free, _, err := DirSpace(dir)
	if err != nil {
		return -1
	}
	return int64(free)
}

// DirSpace is statfs of dir: bytes available to an unprivileged writer,
// and the file system's size.
func DirSpace(dir string) (free, size uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// preVoteGate is the Raft transport of a node: it refuses this node's own
// pre-vote requests while its log store cannot write, so in a cluster such
// a node never starts an election (it stays a follower of whoever leads,
// or a candidate that does not raise its term). Pre-vote is on by default
// in hashicorp/raft ≥ 1.7 (Config.PreVoteDisabled false); a node with
// pre-vote off would go straight to setTerm's wait instead.
type preVoteGate struct {
	*raft.NetworkTransport
	g *StoreGuard
}

// NewPreVoteGate wraps a node's transport in its guard's pre-vote gate.
func NewPreVoteGate(t *raft.NetworkTransport, g *StoreGuard) raft.Transport {
	return preVoteGate{NetworkTransport: t, g: g}
}

func (t preVoteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.g.failing.Load() {
		// The refusal raft records for an unreachable peer.
		*resp = raft.RequestPreVoteResponse{Term: args.Term, Granted: false}
		return nil
	}
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}
