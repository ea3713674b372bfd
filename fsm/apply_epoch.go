package fsm

// applyEpochBegin starts a new master epoch. The first EpochBegin with a
// non-zero cluster id fixes the cluster id for good.
func (st *state) applyEpochBegin(c *EpochBegin) *EpochBeginResult {
	if st.clusterID == 0 && c.ClusterID != 0 {
		st.clusterID = c.ClusterID
	}
	st.masterEpoch++
	st.leaderID = st.intern(c.LeaderID)
	st.leaderAddr = st.intern(c.LeaderAddr)
	return &EpochBeginResult{MasterEpoch: st.masterEpoch, ClusterID: st.clusterID}
}
