package fsm

import (
	"fmt"
	"sync"

	"sexton/api"
)

// Config is what a node may choose about its FSM. It holds nothing that
// changes what Apply does: every such setting (registry capacity, session
// bounds, ...) is replicated state, set through the log by a Settings
// command (invariant 12), so nodes configured differently still agree.
type Config struct{}

// FSM is sexton's replicated state machine. Apply must be called from one
// goroutine; queries may be called from any number concurrently.
type FSM struct {
	mu sync.RWMutex
	st *state
}

// New returns an empty FSM with the default settings.
func New(Config) *FSM {
	return &FSM{st: newState(api.Settings{}, false)}
}

// Apply decodes and applies the log entry at (index, term). The error is
// only for an entry that cannot be decoded (ErrUnknownCommand,
// ErrUnknownVersion, ErrCorruptCommand): then nothing changes, the applied
// index included, and the caller must halt. Business rejections come back
// inside the result (a pointer to one of the *Result types) with the state
// unchanged and the applied index advanced.
func (f *FSM) Apply(index, term uint64, data []byte) (any, error) {
	cmd, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("apply index %d: %w", index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	var res any
	var now int64
	switch c := cmd.(type) {
	case *EpochBegin:
		res, now = st.applyEpochBegin(c), c.Now
	case *MountLocalDisk:
		res, now = st.applyMount(c), c.Now
	case *UnmountLocalDisk:
		res, now = st.applyUnmount(c), c.Now
	case *PutStart:
		res, now = st.applyPutStartSessioned(index, c), c.Now
	case *PutEnd:
		res, now = st.applyPutEndSessioned(CmdPutEnd, c.Session, c.Now, func() *PutEndResult { return st.applyPutEnd(c) }), c.Now
	case *PutRevoke:
		res, now = st.applyPutEndSessioned(CmdPutRevoke, c.Session, c.Now, func() *PutEndResult { return st.applyPutRevoke(c) }), c.Now
	case *Remove:
		res, now = st.applyRemove(c), c.Now
	case *LocalDeleteAck:
		res, now = st.applyAck(c), c.Now
	case *RetireStorage:
		res, now = st.applyRetire(index, c), c.Now
	case *DropReplicas:
		res, now = st.applyDropReplicas(c), c.Now
	case *DFSConfigure:
		res, now = st.applyDFSConfigure(c), c.Now
	case *DFSTouch:
		res, now = st.applyDFSTouch(c), c.Now
	case *DFSEvict:
		res, now = st.applyDFSEvict(c), c.Now
	case *DFSFileOp:
		res, now = st.applyDFSFileOp(c), c.Now
	case *DFSSetMaxBuckets:
		res, now = st.applyDFSSetMaxBuckets(c), c.Now
	case *DFSMarkLost:
		res, now = st.applyDFSMarkLost(c), c.Now
	case *PutStartBatch:
		res, now = st.applyPutStartBatchSessioned(index, c), c.Now
	case *PutEndBatch:
		res, now = st.applyPutEndBatchSessioned(c), c.Now
	case *Settings:
		res, now = st.applySettingsSessioned(c), c.Now
	default:
		return nil, fmt.Errorf("apply index %d: %w: %T", index, ErrUnknownCommand, cmd)
	}
	st.appliedIndex, st.appliedTerm, st.lastNow = index, term, now
	st.tick(now)
	if invariantsEnabled {
		if err := st.checkInvariants(); err != nil {
			panic(fmt.Sprintf("fsm invariant broken after index %d (%s): %v", index, cmd.Type(), err))
		}
	}
	return res, nil
}
