package fsm

import (
	"fmt"
	"sync"

	"sexton/api"
)

// Config is what a node may choose about its FSM. Every setting that
// changes what Apply does (registry capacity, session bounds, ...) is
// replicated state, set through the log by a Settings command (invariant
// 12), so nodes configured differently still agree; Legacy is the one
// exception, and every master of a cluster must be given the same.
type Config struct {
	// Legacy are the settings a state without replicated settings applies
	// under: the empty state and one restored from a snapshot older than
	// 1.2.0. They are what the build that wrote such a state took from
	// its flags (the registry capacity), so its log replays as it
	// applied. The first Settings entry replaces them and a snapshot of a
	// state still under them carries them. Zero fields are the defaults;
	// a value outside CheckSettings' bounds is ignored (the master
	// refuses such a flag before it builds its FSM).
	Legacy api.Settings
}

// FSM is sexton's replicated state machine. Apply must be called from one
// goroutine; queries may be called from any number concurrently.
type FSM struct {
	mu sync.RWMutex
	st *state
	// legacy is Config.Legacy, for the states Restore builds from
	// snapshots older than 1.2.0.
	legacy api.Settings
	// restores counts the states Restore swapped in (SegmentsVersion).
	restores uint64
}

// New returns an empty FSM under cfg.Legacy (zero: the defaults).
func New(cfg Config) *FSM {
	legacy := cfg.Legacy
	if CheckSettings(legacy) != nil {
		legacy = api.Settings{}
	}
	return &FSM{st: newState(legacy, false), legacy: legacy}
}

// Apply decodes and applies the log entry at (index, term). The error is
// only for an entry that cannot be decoded (ErrUnknownCommand,
// ErrUnknownVersion, ErrCorruptCommand): then nothing changes, the applied
// index included, and the caller must halt. Business rejections come back
// inside the result (a pointer to one of the *Result types) with the state
// unchanged and the applied index advanced.
func (f *FSM) Apply(index, term uint64, data []byte) (any, error) {
	res, _, err := f.ApplyWake(index, term, data)
	return res, err
}

// ApplyWake is Apply that also says whose long polls the entry concerns
// (Wake). Its Segments slice is the FSM's scratch, valid until the next
// Apply; Apply's single caller reads it before applying the next entry.
func (f *FSM) ApplyWake(index, term uint64, data []byte) (any, Wake, error) {
	cmd, err := Decode(data)
	if err != nil {
		return nil, Wake{}, fmt.Errorf("apply index %d: %w", index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.wake.reset()
	st.wake.wakeFor(cmd)
	// Decode returned a body of a row's type, so the row applies it.
	res := specOf(cmd.Type()).apply(st, index, cmd)
	now := *cmd.leaderNow()
	st.appliedIndex, st.appliedTerm, st.lastNow = index, term, now
	st.tick(now)
	if invariantsEnabled {
		if err := st.checkInvariants(); err != nil {
			panic(fmt.Sprintf("fsm invariant broken after index %d (%s): %v", index, cmd.Type(), err))
		}
	}
	return res, st.wake.take(), nil
}
