package fsm

import "bytes"

// applyEpochBegin starts a new master epoch. The first EpochBegin with a
// non-zero cluster id fixes the cluster id for good, and the first with a
// grant key the grant key (a later leader's key is ignored: grants it
// signs must verify on holders that learned the first one).
func (st *state) applyEpochBegin(c *EpochBegin) *EpochBeginResult {
	if st.clusterID == 0 && c.ClusterID != 0 {
		st.clusterID = c.ClusterID
	}
	if st.grantKey == nil && len(c.GrantKey) != 0 {
		st.grantKey = bytes.Clone(c.GrantKey)
	}
	st.masterEpoch++
	st.leaderID = st.intern(c.LeaderID)
	st.leaderAddr = st.intern(c.LeaderAddr)
	return &EpochBeginResult{MasterEpoch: st.masterEpoch, ClusterID: st.clusterID}
}
