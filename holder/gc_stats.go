package holder

import (
	"time"

	"sexton/api"
)

// GCStats is what the GC worker has done since the store opened.
type GCStats struct {
	Enabled         bool
	Passes          int64 // wakes that looked for work
	Rounds          int64 // rounds committed
	Aborted         int64 // rounds given up before COMMITTED (sources unchanged)
	BytesCopied     int64 // live value bytes written into targets
	BytesReclaimed  int64 // bytes of source files removed minus bytes of targets written
	BucketsUnlinked int64 // source buckets whose files were removed
	BucketsMerged   int64 // targets created (rounds that copied live data)
	BucketsEvicted  int64 // live buckets the master agreed to evict
	ObjectsEvicted  int64 // records tombstoned because the master evicted them
	CleanupPending  bool  // a committed round's unlink waits for a retry
	LastError       string
	LastErrorAt     time.Time

	// PutsRefusedPasses counts the passes that reclaimed dead bytes of
	// any ratio because puts had been refused for lack of space.
	PutsRefusedPasses int64
	// BytesPunched counts tombstoned record bytes punched out of their
	// buckets in place because no merge fit the free space (punchDead).
	BytesPunched int64

	// The watermark settings StartGC was given (also when GC is off), so
	// usage can be shown against them; Capacity 0 means unknown.
	Capacity                    int64
	HighWatermark, LowWatermark float64
}

// GCStats returns the worker's counters.
func (s *Store) GCStats() GCStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gcStats
}

// Status is the wire form for the holder status RPC.
func (g GCStats) Status() api.GCStatus {
	return api.GCStatus{Enabled: g.Enabled, Rounds: g.Rounds, BytesReclaimed: g.BytesReclaimed, BytesCopied: g.BytesCopied,
		BucketsEvicted: g.BucketsEvicted, BucketsUnlinked: g.BucketsUnlinked, BucketsMerged: g.BucketsMerged,
		CleanupPending: g.CleanupPending, LastError: g.LastError}
}

func (s *Store) noteGCError(err error) {
	s.mu.Lock()
	s.gcStats.LastError = err.Error()
	s.gcStats.LastErrorAt = time.Now()
	s.mu.Unlock()
	s.log.Warn("bucket GC", "err", err)
}
