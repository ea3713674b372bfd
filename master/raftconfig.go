package master

import "github.com/hashicorp/raft"

// RaftConfig is the hashicorp/raft configuration of a master with cfg
// (zero fields take the master's defaults).
func RaftConfig(cfg Config) *raft.Config {
	cfg.setDefaults()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = cfg.Logger.Named("raft")
	// Buffer the apply channel so concurrent proposals reach the leader
	// loop together and share one log write.
	rc.BatchApplyCh = true
	// Raft reports each AppendEntries' timing twice, once with the
	// follower as a label and once in the key, for old dashboards;
	// RaftTimings reads the labelled one.
	rc.NoLegacyTelemetry = true
	return rc
}
