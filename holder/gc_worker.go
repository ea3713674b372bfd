package holder

import (
	"errors"
	"time"

	"sexton/api"
)

// gcCopyBufferSize is the one buffer a worker streams every copy through.
const gcCopyBufferSize = 1 << 20

// maxRoundsPerPass bounds one wake's work so Close and new settings are
// noticed; the next wake (a tombstone or the interval) goes on.
const maxRoundsPerPass = 64

// maxEvictionsPerPass bounds how many live buckets one wake offers the
// master for eviction.
const maxEvictionsPerPass = 8

// Evictor tells the master that live objects are about to be evicted and
// returns the ones it agreed to drop (a Raft command removing this
// segment's replicas; leased objects are refused). The store tombstones
// only what comes back; an error means nothing was evicted.
type Evictor interface {
	EvictObjects(refs []api.ObjectRef) (evicted []api.ObjectRef, err error)
}

// gcWorker is the store's one GC worker: its options, its copy buffer and
// the state that lives across passes.
type gcWorker struct {
	s    *Store
	opts GCOptions
	ev   Evictor
	buf  []byte
	// reclaiming is set when usage reaches the high watermark and cleared
	// at the low one, so reclaim continues across passes in between.
	reclaiming bool
	// skip holds buckets a round failed on because of their own bytes
	// (a corrupt record): retrying them would fail the same way.
	skip map[uint64]bool
	stop chan struct{}
	done chan struct{}
	// noPunch: the filesystem cannot punch holes (punchDead).
	noPunch bool
}

func newGCWorker(s *Store, opts GCOptions, ev Evictor) *gcWorker {
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = DefaultGCDrainTimeout
	}
	return &gcWorker{s: s, opts: opts, ev: ev, buf: make([]byte, gcCopyBufferSize),
		skip: map[uint64]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// StartGC starts the store's GC worker (docs/DESIGN.md §6). ev may be nil: the
// worker then never evicts live data. With opts.Enabled false nothing
// runs and GCStats says so. Close stops the worker.
func (s *Store) StartGC(opts GCOptions, ev Evictor) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.gcWorker != nil {
		return ErrGCRunning
	}
	s.gcStats.Enabled = opts.Enabled
	s.gcStats.Capacity, s.gcStats.HighWatermark, s.gcStats.LowWatermark = opts.Capacity, opts.HighWatermark, opts.LowWatermark
	if !opts.Enabled {
		return nil
	}
	w := newGCWorker(s, opts, ev)
	s.gcWorker = w
	go w.loop()
	return nil
}

// WakeGC asks the worker for a pass now (as a new tombstone does).
func (s *Store) WakeGC() { signal(s.gcWake) }

// wantSpace is called when puts are refused for lack of space (the
// metadata reserve check, or ENOSPC on a put's write): it wakes the worker
// for a pass that reclaims dead bytes of any ratio, whatever the
// watermarks say. On a small disk the reserve refuses puts long before
// usage reaches the high watermark, and without a capacity there are no
// watermarks; dead bytes must not sit on a disk that refuses puts.
func (s *Store) wantSpace() {
	s.gcSpaceWanted.Store(true)
	signal(s.gcWake)
}

func (w *gcWorker) loop() {
	defer close(w.done)
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		w.pass()
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.s.gcWake:
		}
	}
}

func (w *gcWorker) stopped() bool { return isClosed(w.stop) }

// isClosed reports whether ch is closed (or has a value ready), without
// waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// pass finishes an unfinished committed cleanup, then runs rounds until
// nothing qualifies: ratio-driven normally; when puts were refused for
// space since the last pass, or under disk pressure, dead bytes of any
// ratio; and only under disk pressure, once no dead bytes remain,
// eviction of the oldest live buckets. A round that fails ends the pass;
// the next wake retries.
func (w *gcWorker) pass() {
	s := w.s
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	// Space a pass freed goes back into the reserve first (once there is
	// twice its size free), before puts can take it.
	defer s.maybeRecreateReserve()
	// Taken before any round, so a refusal during this pass wakes the
	// next one.
	wanted := s.gcSpaceWanted.Swap(false)
	// Journals past their bound are folded into their .meta at the end of
	// the pass, in the background, so the put path never rewrites a whole
	// .meta.
	defer s.compactJournals()
	s.mu.Lock()
	s.gcStats.Passes++
	if wanted {
		s.gcStats.PutsRefusedPasses++
	}
	s.mu.Unlock()
	if s.gcPending != nil {
		if err := s.finishCleanup(w.opts.DrainTimeout); err != nil {
			s.noteGCError(err)
			return
		}
	}
	tried := map[uint64]bool{}
	evictions := 0
	for range maxRoundsPerPass {
		if w.stopped() {
			return
		}
		pressure := w.underPressure()
		budget := s.gcMergeBudget()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		pol := gcPolicy{ratio: w.opts.DeletedRatio, bypass: pressure || wanted, ageAware: w.opts.AgeAware, maxLive: budget}
		p := s.planRoundLocked(pol, w.skip)
		dead := s.hasDeadRecordsLocked(w.skip)
		// Buckets that qualify but that no round fits the free space.
		var blocked []*bucket
		if p == nil {
			for _, c := range s.gcCandidatesLocked(pol, w.skip) {
				blocked = append(blocked, c.b)
			}
		}
		s.mu.Unlock()
		if p == nil {
			if len(blocked) > 0 {
				if w.punchDead(blocked) > 0 {
					continue // the free space grew: a merge may fit now
				}
				w.warnStuck(budget)
			}
			if !pressure || dead || evictions == maxEvictionsPerPass {
				return
			}
			evictions++
			n, err := w.evictOldest(tried)
			if err != nil {
				s.noteGCError(err)
				return
			}
			if n == 0 && !w.anyUntried(tried) {
				return
			}
			continue
		}
		if err := w.runRound(p); err != nil {
			if errors.Is(err, errGCSourceChanged) && s.gcPending == nil {
				continue // a put raced the sealing of the open bucket: plan again
			}
			s.noteGCError(err)
			return
		}
		if s.gcPending != nil {
			return // cleanup is left to the next pass
		}
	}
}

// warnStuck says that buckets qualify for a round but no round fits the
// free space: every merge that would reclaim them copies more live bytes
// than the free space allows (a bucket larger than the free space of a
// small disk), and punching their dead records out freed nothing more.
func (w *gcWorker) warnStuck(budget int64) {
	u := w.s.Usage()
	w.s.warnLimited("gc-stuck", "dead bytes wait: no GC round that reclaims the dead bytes fits the free space, and their records are already punched out: a merge must copy its buckets' live bytes first; free space by deleting more, or use a smaller bucket size limit on a disk this small",
		"dead_bytes", u.DeadBytes, "live_bytes", u.LiveBytes, "merge_budget_bytes", budget, "bucket_size_limit", w.s.opts.BucketSizeLimit)
}

// underPressure applies the watermarks with hysteresis; off without a
// capacity. The capacity is clamped to what the filesystem can give the
// store, so a flag larger than the disk still reaches the watermarks.
func (w *gcWorker) underPressure() bool {
	if w.opts.Capacity <= 0 {
		return false
	}
	capacity := w.s.effectiveCapacity(w.opts.Capacity)
	if capacity <= 0 {
		return true
	}
	ratio := float64(w.s.Usage().UsedBytes) / float64(capacity)
	switch {
	case ratio >= w.opts.HighWatermark:
		w.reclaiming = true
	case ratio <= w.opts.LowWatermark:
		w.reclaiming = false
	}
	return w.reclaiming
}

func (s *Store) hasDeadRecordsLocked(skip map[uint64]bool) bool {
	for _, b := range s.buckets {
		if b.deadCount > 0 && !skip[b.id] {
			return true
		}
	}
	return false
}

func (w *gcWorker) anyUntried(tried map[uint64]bool) bool {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for id, b := range w.s.buckets {
		if b.liveCount > 0 && !tried[id] {
			return true
		}
	}
	return false
}

// errGCSourceChanged ends a round whose source took a put between plan and
// commit (the open bucket, sealed while a batch was in flight).
var errGCSourceChanged = errors.New("holder: GC source changed during the round")
