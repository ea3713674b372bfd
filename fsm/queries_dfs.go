package fsm

import "sexton/fsm/dfsalloc"

// DFSSettings returns the cluster's replicated DFS configuration, or false
// when none was configured yet.
func (f *FSM) DFSSettings() (DFSSettings, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil {
		return DFSSettings{}, false
	}
	return f.st.dfs.settings, true
}

// DFSStats describes the DFS allocator (false when DFS is not configured).
func (f *FSM) DFSStats() (dfsalloc.Stats, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil {
		return dfsalloc.Stats{}, false
	}
	return f.st.dfs.alloc.Stats(), true
}

// DFSPendingFileOps lists the file work the state waits for.
func (f *FSM) DFSPendingFileOps() []dfsalloc.FileOp {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil {
		return nil
	}
	return f.st.dfs.alloc.PendingFileOps()
}

// DFSPlanEviction is the leader's read-only eviction plan at now; leased
// (the leader's read leases) may be nil.
func (f *FSM) DFSPlanEviction(now int64, leased func(key string) bool) (dfsalloc.EvictionPlan, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil {
		return dfsalloc.EvictionPlan{}, false
	}
	return f.st.dfs.alloc.PlanEviction(now, leased), true
}
