package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/buildinfo"
	"sexton/raftio"
	"sexton/snapshot"
)

// status is this node's view; any node answers it.
func (n *Node) status() api.StatusResponse {
	st := n.fsm.Stats()
	addr, id := n.raft.LeaderWithID()
	out := api.StatusResponse{
		NodeID: n.cfg.ID, RaftState: n.raft.State().String(), Leader: string(id),
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.raft.AppliedIndex(),
		ClusterID: st.ClusterID, MasterEpoch: st.MasterEpoch, Objects: st.Objects, Segments: st.Segments,
		PendingTasks: st.PendingTasks,
	}
	b := buildinfo.Get()
	out.Build = &api.BuildInfo{Version: b.Version, Commit: b.Commit, Modified: b.Modified, GoVersion: b.GoVersion, Date: b.Date}
	// The replicated capacity, the one Apply uses, not this node's flag.
	set, _ := n.fsm.Settings()
	out.RegistryCap = set.RegistryCapacity
	if cannot, _, err := n.guard.State(); cannot {
		out.LogStoreCannotWrite = true
		if err != nil {
			out.LogStoreError = err.Error()
		}
	}
	out.DataDirFreeBytes = raftio.DirFreeBytes(n.cfg.DataDir)
	out.Rebuild = n.rebuildStatus()
	out.RefusedMounts = n.refusedIfLeader()
	if string(id) == st.LeaderID {
		out.LeaderRPC = st.LeaderAddr
	}
	_ = addr
	return out
}

func (n *Node) handleStatus(_ context.Context, _ *api.Empty) (*api.StatusResponse, error) {
	s := n.status()
	return &s, nil
}

func (n *Node) handleRaftPeers(_ context.Context, _ *api.Empty) (*api.RaftPeersResponse, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, n.raftError(err)
	}
	_, leader := n.raft.LeaderWithID()
	out := &api.RaftPeersResponse{}
	for _, s := range f.Configuration().Servers {
		out.Peers = append(out.Peers, api.RaftPeer{ID: string(s.ID), Address: string(s.Address), Suffrage: s.Suffrage.String(), Leader: s.ID == leader})
	}
	return out, nil
}

func (n *Node) handleAddVoter(_ context.Context, req *api.RaftPeerRequest) (*api.Empty, error) {
	if req.ID == "" || req.Address == "" {
		return nil, api.Errorf(api.CodeInvalidParams, "add-voter needs an id and a raft address")
	}
	if n.raft.State() != raft.Leader {
		return nil, n.notLeader()
	}
	if err := n.waitApplied(n.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.Address), 0, n.cfg.ApplyTimeout), "add-voter"); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

func (n *Node) handleRemovePeer(_ context.Context, req *api.RaftPeerRequest) (*api.Empty, error) {
	if req.ID == "" {
		return nil, api.Errorf(api.CodeInvalidParams, "remove-peer needs an id")
	}
	if n.raft.State() != raft.Leader {
		return nil, n.notLeader()
	}
	if err := n.waitApplied(n.raft.RemoveServer(raft.ServerID(req.ID), 0, n.cfg.ApplyTimeout), "remove-peer"); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

func (n *Node) handleTransfer(_ context.Context, req *api.RaftPeerRequest) (*api.Empty, error) {
	if n.raft.State() != raft.Leader {
		return nil, n.notLeader()
	}
	var f raft.Future
	if req.ID == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr := raft.ServerAddress(req.Address)
		if addr == "" {
			cf := n.raft.GetConfiguration()
			if err := cf.Error(); err != nil {
				return nil, n.raftError(err)
			}
			for _, s := range cf.Configuration().Servers {
				if string(s.ID) == req.ID {
					addr = s.Address
				}
			}
			if addr == "" {
				return nil, api.Errorf(api.CodeInvalidParams, "no peer with id %q", req.ID)
			}
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(req.ID), addr)
	}
	if err := f.Error(); err != nil {
		return nil, api.Errorf(api.CodeUnavailable, "leadership transfer: %v", err)
	}
	return &api.Empty{}, nil
}

// snapshotTransfers holds saved snapshot bytes between chunk calls and
// restore uploads until they complete. An idle transfer is dropped after a
// minute.
type snapshotTransfers struct {
	mu    sync.Mutex
	saves map[string]*savedSnapshot
	seq   int
}

type savedSnapshot struct {
	data []byte
	last time.Time
}

func (t *snapshotTransfers) put(data []byte) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.saves == nil {
		t.saves = map[string]*savedSnapshot{}
	}
	for id, s := range t.saves {
		if time.Since(s.last) > time.Minute {
			delete(t.saves, id)
		}
	}
	t.seq++
	id := strconv.Itoa(t.seq) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.saves[id] = &savedSnapshot{data: data, last: time.Now()}
	return id
}

func (t *snapshotTransfers) get(id string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.saves[id]
	if !ok {
		return nil, false
	}
	s.last = time.Now()
	return s.data, true
}

func (t *snapshotTransfers) drop(id string) {
	t.mu.Lock()
	delete(t.saves, id)
	t.mu.Unlock()
}

// handleSnapshotSave captures the leader's state (linearizably) and serves
// it in chunks.
func (n *Node) handleSnapshotSave(_ context.Context, req *api.SnapshotChunkRequest) (*api.SnapshotChunk, error) {
	id := req.ID
	var data []byte
	if id == "" {
		if err := n.linearizable(); err != nil {
			return nil, err
		}
		v := n.fsm.Snapshot()
		var buf bytes.Buffer
		_, err := v.WriteTo(&buf)
		v.Release()
		if err != nil {
			return nil, api.Errorf(api.CodeInternal, "write snapshot: %v", err)
		}
		data = buf.Bytes()
		id = n.transfers.put(data)
	} else {
		var ok bool
		if data, ok = n.transfers.get(id); !ok {
			return nil, api.Errorf(api.CodeInvalidParams, "unknown or expired snapshot transfer %q", id)
		}
	}
	if req.Offset < 0 || req.Offset > int64(len(data)) {
		return nil, api.Errorf(api.CodeInvalidParams, "offset %d outside snapshot of %d bytes", req.Offset, len(data))
	}
	end := min(req.Offset+api.SnapshotChunkSize, int64(len(data)))
	out := &api.SnapshotChunk{ID: id, Offset: req.Offset, Data: data[req.Offset:end], Total: int64(len(data)), EOF: end == int64(len(data))}
	if out.EOF {
		n.transfers.drop(id)
	}
	return out, nil
}

// handleSnapshotRestore receives a snapshot in chunks into a file in the
// data dir. On the last chunk it validates the whole stream, then makes
// Raft install it (hashicorp/raft's user restore), and proposes EpochBegin
// so every holder replays against the restored state.
func (n *Node) handleSnapshotRestore(_ context.Context, req *api.SnapshotChunk) (*api.SnapshotRestoreResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if req.ID == "" || filepath.Base(req.ID) != req.ID {
		return nil, api.Errorf(api.CodeInvalidParams, "restore needs a plain transfer id")
	}
	path := filepath.Join(n.cfg.DataDir, "restore-"+req.ID+".snap")
	flag := os.O_WRONLY | os.O_CREATE
	if req.Offset == 0 {
		flag |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, api.Errorf(api.CodeInternal, "restore file: %v", err)
	}
	st, _ := f.Stat()
	if st.Size() != req.Offset {
		f.Close()
		return nil, api.Errorf(api.CodeInvalidParams, "chunk at offset %d, have %d bytes", req.Offset, st.Size())
	}
	if _, err := f.WriteAt(req.Data, req.Offset); err != nil {
		f.Close()
		return nil, api.Errorf(api.CodeInternal, "restore file: %v", err)
	}
	if err := f.Close(); err != nil {
		return nil, api.Errorf(api.CodeInternal, "restore file: %v", err)
	}
	if !req.EOF {
		return &api.SnapshotRestoreResponse{}, nil
	}
	defer os.Remove(path)
	return n.restoreFile(path, req.AllowRollback)
}

// restoreFile restores the operator's snapshot at path on every node.
//
// hashicorp/raft stores a user snapshot before it restores it into the
// fsm, and panics if the fsm refuses it then; a follower handed such a
// snapshot by InstallSnapshot could never start again. So the file is
// first restored into a scratch fsm, under this cluster's replicated
// settings for a file too old to carry its own: a file it refuses changes
// nothing and the answer says why. What raft is given is not the file but
// the scratch fsm's own snapshot of what it restored, a stream this
// build's fsm writes and therefore reads, with the settings it was checked
// under. Then a fresh EpochBegin makes every holder replay against the
// restored state.
//
// A file whose index is below the leader's applied index rolls the
// cluster back, and is refused unless allowRollback: the puts made after
// the file's index are lost (their holders tombstone the copies the
// restored table does not know), and the removes made after it come back
// as keys whose copies their holders hold tombstoned, which the holders'
// ghost check then drops from the table again.
func (n *Node) restoreFile(path string, allowRollback bool) (*api.SnapshotRestoreResponse, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, api.Errorf(api.CodeInternal, "restore: %v", err)
	}
	defer f.Close()
	hdr, counts, err := snapshot.Inspect(f)
	if err != nil {
		return nil, api.Errorf(api.CodeCorrupt, "refusing snapshot: %v", err)
	}
	if applied := n.fsm.Stats().AppliedIndex; hdr.LastIndex < applied {
		if !allowRollback {
			return nil, api.Errorf(api.CodeInvalidParams,
				"refusing to roll the cluster back: the snapshot's index %d is below the applied index %d, so every put and remove made after index %d would be undone "+
					"(puts lost; removes turned into keys whose copies the holders keep tombstoned, which the holders' ghost check then drops again); "+
					"restore it with --allow-rollback if that is what you want, or save a current snapshot first",
				hdr.LastIndex, applied, hdr.LastIndex)
		}
		n.log.Warn("rolling the cluster back by an operator's restore (--allow-rollback): puts and removes after the snapshot's index are undone",
			"snapshot_index", hdr.LastIndex, "applied_index", applied)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, api.Errorf(api.CodeInternal, "restore: %v", err)
	}
	current, _ := n.fsm.Settings()
	scratch := fsm.New(fsm.Config{})
	if err := scratch.RestoreWith(f, current); err != nil {
		var lc *fsm.LegacyCapacityError
		if errors.As(err, &lc) {
			// The decision is the operator's: the file cannot say what
			// capacity the build that wrote it ran with.
			return nil, api.Errorf(api.CodeCorrupt, "refusing snapshot (%s, %d tasks) under this cluster's settings (registry capacity %d): %v; "+
				"a file older than %s restores under the cluster's replicated settings: raise the registry capacity to the one the build that wrote it ran with (at least %d) with `sexton operator settings set --registry-capacity N`, then restore it again",
				hdr.Format, counts.Tasks, current.RegistryCapacity, err, snapshot.Format120, lc.Tasks)
		}
		return nil, api.Errorf(api.CodeCorrupt, "refusing snapshot (%s, %d tasks) under this cluster's settings (registry capacity %d): %v",
			hdr.Format, counts.Tasks, current.RegistryCapacity, err)
	}
	checked, size, err := n.writeScratchSnapshot(scratch)
	if err != nil {
		return nil, err
	}
	defer os.Remove(checked)
	cf, err := os.Open(checked)
	if err != nil {
		return nil, api.Errorf(api.CodeInternal, "restore: %v", err)
	}
	defer cf.Close()
	st := scratch.Stats()
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: st.AppliedIndex, Term: st.AppliedTerm, Size: size}
	if err := n.raft.Restore(meta, cf, 5*time.Minute); err != nil {
		return nil, api.Errorf(api.CodeInternal, "raft restore: %v", err)
	}
	eb, err := n.epochBegin(n.raft.CurrentTerm())
	if err != nil {
		return nil, fmt.Errorf("restored, but EpochBegin failed: %w", err)
	}
	return &api.SnapshotRestoreResponse{Format: hdr.Format, Objects: counts.Objects, Segments: counts.Segments, Tasks: counts.Tasks, MasterEpoch: eb.MasterEpoch}, nil
}

// writeScratchSnapshot writes f's snapshot to a file in the data dir,
// fsynced, and returns its path and size.
func (n *Node) writeScratchSnapshot(f *fsm.FSM) (string, int64, error) {
	out, err := os.CreateTemp(n.cfg.DataDir, "restore-checked-*.snap")
	if err != nil {
		return "", 0, api.Errorf(api.CodeInternal, "restore: %v", err)
	}
	v := f.Snapshot()
	size, err := v.WriteTo(out)
	v.Release()
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", 0, api.Errorf(api.CodeInternal, "restore: writing the checked snapshot: %v", err)
	}
	return out.Name(), size, nil
}

// handleSettingsGet answers the replicated settings in force, read
// linearizably (defaults filled in).
func (n *Node) handleSettingsGet(_ context.Context, _ *api.Empty) (*api.SettingsResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	set, _ := n.fsm.Settings()
	return &api.SettingsResponse{Settings: set, Index: n.fsm.Stats().AppliedIndex}, nil
}

// handleSettingsSet changes the replicated settings through the log; zero
// fields stay as they are. The answer is the settings in force after it.
func (n *Node) handleSettingsSet(_ context.Context, req *api.SettingsSetRequest) (*api.SettingsResponse, error) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	if req.Settings == (api.Settings{}) {
		return nil, api.Errorf(api.CodeInvalidParams, "settings set names no setting to change")
	}
	if err := fsm.CheckSettings(req.Settings); err != nil {
		return nil, err
	}
	r, err := proposeFor[fsm.SettingsResult](n, n.settingsCommand(req.Settings, req.Session))
	if err != nil {
		return nil, err
	}
	if !r.Duplicate {
		n.log.Info("replicated settings changed", "change", req.Settings, "now", r.Settings)
	}
	return &api.SettingsResponse{Settings: r.Settings, Index: n.fsm.Stats().AppliedIndex}, nil
}
