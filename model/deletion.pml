/*
 * deletion.pml — a Promela model of sexton's deletion protocol (docs/DESIGN.md §4–§6),
 * checked with spin. model/README.md says what each part stands for in the Go
 * code, which invariant each assertion checks, and which code change breaks
 * which property. scripts/model.sh runs it.
 *
 * One key, incarnations 1..NINC (the Raft index of their PutStart: they only
 * grow), two holders (segments 0 and 1, in two pools), one master log.
 *
 * Bounds (-D on the spin command line, defaults below):
 *   NINC      incarnations the client may start            (2)
 *   NCRASH    holder crashes (+ restart) in total           (1)
 *   NLEAD     leader changes (EpochBegin)                   (1)
 *   NGC       GC rounds per holder                          (1)
 *   NGC1      GC rounds of holder 1                          (NGC)
 *   LATEACK   an ack whose outcome the holder never learns may commit later
 *   BOTH      a put may place replicas on both holders
 *   IOFAIL    tombstone / floor persistence may fail (RetryableFailure)
 *
 * Weakened variants (each must make spin find a counterexample):
 *   WEAK_WITHHOLD     registry.fetchable hands out every task: no withholding
 *   WEAK_NOTLIVE      FSM.NotLive names a not-live copy although an older
 *                     incarnation of its key still has a task
 *   WEAK_ACK_EARLY    the holder acks Removed before the tombstone is durable
 *   NO_GRANT_CHECK    handleWrite stores a write without checking its grant
 *   NO_FLOOR          raiseFloors is a no-op (no durable tombstone floor)
 *   WEAK_GC_NO_CARRY  runRound does not carry tombstones that landed on a
 *                     source while it was being copied into the target
 *   WEAK_KEY_ONLY     BatchMarkDeleted matches a task's record by key alone,
 *                     not key and incarnation
 *
 * Configurations (each a separate run of scripts/model.sh; the bounds there
 * switch GC and crashes down to keep each one small):
 *   REBUILD   every master loses its state; `operator rebuild` adopts from the
 *             holders it scans; late holders, reruns, retire, --close, the
 *             removal memory and its overflow, and the serving cluster's
 *             incarnation block reservations (the incarnation base moves on,
 *             the rebuild's base stays)
 *   JOBS      one prefix-delete job (JobStart, then its step for the key)
 *   RESTORE   `operator snapshot restore` of a saved older table (the flagged
 *             path) and the leader's ghost check
 *   COMMIT    one-commit puts: a reserved incarnation block, a write grant
 *             without a commit, PutCommit, the block's expiry, and the
 *             holder's reconcile at any time (periodic, and its asks about
 *             granted writes), whose answer leaves out a live block's copies
 * and their weakened variants:
 *   WEAK_LATE_MOUNT          (REBUILD) a late holder's mount is accepted and
 *                            reconciled against the rebuilt table
 *   WEAK_NO_REMOVAL_MEMORY   (REBUILD) adoption ignores the removal memory
 *   WEAK_TASK_RULE           (REBUILD) adoption takes a task of the key at or
 *                            above the copy for a remove, instead of the memory
 *   WEAK_ADOPT_ABSENT_ONLY   (REBUILD) adoption takes a copy only if the key is
 *                            absent: an older incarnation in the table wins
 *   WEAK_NO_INC_MARGIN       (REBUILD) the incarnation base covers only the
 *                            scanned holders' records
 *   WEAK_MOVING_BASE         (REBUILD) a rerun's own-copy check and the adopt
 *                            refusal use the incarnation base, which every
 *                            reserved block moves, not the rebuild's base
 *   WEAK_JOB_BY_PUTSTART     (JOBS) the job removes a key whose incarnation
 *                            (PutStart position) is below the job's start
 *   WEAK_GHOST_UNCONDITIONAL (RESTORE) the ghost drop does not check that the
 *                            table still holds the incarnation it checked
 *   WEAK_COMMIT_EXPIRED      (COMMIT) PutCommit does not check that the
 *                            incarnation's block is still live
 *   WEAK_COMMIT_UNDECIDED    (COMMIT) NotLive names a copy whose block is
 *                            live (not left undecided)
 *   WEAK_COMMIT_BELOW        (COMMIT) PutCommit does not require the
 *                            incarnation to be above every incarnation the
 *                            key holds (COMPLETE, tasks)
 *
 * DFS (with REBUILD): a put may place its replica on the DFS root instead
 * of a holder; the client writes the value, then its put record, before
 * PutEnd; a removed, revoked or overwritten incarnation queues a removal
 * mark, the leader writes it to the root's journal (DFSMarked) and only
 * then is its range released; a released range may be reused (its bytes
 * overwritten); the rebuild adopts from the journal (dfsio/DESIGN.md
 * "Range records"). Its weakened variants:
 *   WEAK_DFS_IGNORE_REMOVAL  the rebuild adopts a put record its removal
 *                            record kills
 *   WEAK_DFS_FREE_EARLY      a removed, revoked or overwritten range is
 *                            released at once, before its record is durable
 *   WEAK_DFS_NO_REGISTER     an adopted range is not registered with the
 *                            rebuilt allocator (it stays free)
 *   WEAK_DFS_NO_WITHHOLD     a holder task is not withheld behind the key's
 *                            queued marks of older DFS incarnations
 */

#ifndef NINC
#define NINC 2
#endif
#ifndef NCRASH
#define NCRASH 1
#endif
#ifndef NLEAD
#define NLEAD 1
#endif
#ifndef NGC
#define NGC 1
#endif
#ifndef NGC1
#define NGC1 NGC
#endif

#define NH 2              /* holders (segments) */
#define NI (NINC + 1)     /* array size: incarnations are 1..NINC */
#define B(i) (1 << (i))   /* an incarnation's bit in a mask */
#define REP(h) (1 << (h)) /* a holder's bit in a replica set */

/* Record state in a bucket's metadata on disk, and in the ghost "logical" view. */
#define ABSENT 0
#define LIVE   1
#define TOMB   2

/* Holder index entry (holder/index.go): live, dead (tombstoned), or neither. */
#define NONE 0
#define ILIVE 1
#define IDEAD 2

/* .bucket_gc_intent (holder/gc_intent.go) */
#define NOINTENT 0
#define PREPARED 1
#define COMMITTED 2

/* Holder follow-loop mode (holder/service.go followLoop). */
#define IDLE  0
#define FETCHED 1 /* fetchOnce: tasks being tombstoned, terminal ones acked after */
#define RECON 2   /* reconcile: NotLive refs being tombstoned, never acked */

typedef Row { byte st[NI] };

/* ------------------------------------------------------------------------- */
/* The master: one linearizable log (fsm.state). Every Apply is one atomic    */
/* step; a leader change is an EpochBegin entry. Reads (Get, FetchTasks,     */
/* NotLive) are linearizable reads of the same state.                        */
/* ------------------------------------------------------------------------- */
byte masterEpoch = 1;
bit  segMounted[NH];
byte segEpoch[NH];
byte complete, compReps;  /* the key's COMPLETE incarnation and its replica set */
byte pending, pendReps;   /* the key's PENDING incarnation */
byte nextInc = 1;         /* next PutStart's incarnation (its Raft index) */
byte tasks[NH];           /* LocalDeleteRegistry: tasks[h] bit i = task (segment h, key, inc i) */

/* Soft network state: an ack whose proposal's outcome was unknown to the
 * holder and that commits later (leader change), with the mount epoch it
 * was sent under. */
byte pipe[NH], pipeEpoch[NH];

/* ------------------------------------------------------------------------- */
/* Holders: a durable part (survives a crash) and a memory part.             */
/* ------------------------------------------------------------------------- */
/* durable */
Row  bk0[NH], bk1[NH];    /* metadata of the holder's two bucket slots (GC source/target alternate) */
byte intent[NH];          /* .bucket_gc_intent state */
bit  isrc[NH];            /* the intent's source slot (target is the other) */
byte floor[NH];           /* .tombstone_floor: every incarnation <= floor is dead here */
/* memory (lost on a crash) */
Row  idx[NH];             /* live / dead index */
bit  cur[NH];             /* the bucket slot the index points into (open bucket) */
bit  hmounted[NH];        /* Service.mounted (and grantKey set) */
byte hepoch[NH];          /* Service.mountEpoch */
byte hmaster[NH];         /* Service.masterEpoch, last seen */
bit  needRec[NH];         /* a replay (reconcile) is due: after mount or master epoch change */
byte mode[NH];
byte todo[NH];            /* tasks / refs not yet resolved in this batch */
byte term[NH];            /* terminal outcomes of this batch, to ack */
byte curI[NH];            /* incarnation between resolve and tombstoneBucket (0: none) */
bit  rb[NH];              /* the bucket slot resolve found it in */
byte deferred[NH];        /* WEAK_ACK_EARLY: acked tombstones not yet persisted */
byte gcPhase[NH];         /* runRound progress, 0 = no round */
Row  tmeta[NH];           /* the GC target's metadata before it is persisted */
byte gcLen[NH];           /* srcLens: records in the source when planned */
bit  gcLock[NH];          /* the source's persistMu, held from the check to switchIndex */

/* ------------------------------------------------------------------------- */
/* Ghost state: what the properties are stated over. Never read by the       */
/* protocol's own steps.                                                     */
/* ------------------------------------------------------------------------- */
Row  logical[NH];         /* LIVE once a Put committed it, TOMB once a tombstone was durable */
byte tombstoned[NH];      /* incarnations ever durably tombstoned on h */
byte acked[NH];           /* tasks dropped by an applied ack */
byte removed;             /* incarnations a Remove returned OK for */
byte maxCompleted;        /* newest incarnation that ever became COMPLETE */
byte grant[NH];           /* write grants the leader issued (PutStart), never expiring */
byte wok[NH];             /* writes the holder answered OK */

byte ackPut;              /* the acknowledged put still owed: PutEnd returned, not since removed or overwritten */
byte remMax;              /* newest incarnation an acknowledged remove (or job step) removed, or that was owed then */

#ifdef REBUILD
/* The rebuilt cluster (fsm state after RebuildBegin/RebuildAdopt). */
bit  rebuilt;             /* every master lost its state; this is the rebuilt cluster */
bit  known[NH];           /* the rebuilt table knows the segment: a rebuild scanned it */
bit  remKey;              /* removal memory: the key left the table since the rebuild began */
bit  remOverflow;         /* the memory overflowed (other keys filled its bound) */
bit  closed;              /* rebuild --close: memory dropped, no more adoption */
byte incBase;             /* the incarnation base: this cluster issues incarnations above it; a reserved block raises it */
byte rebuildBase;         /* the rebuild's base: the incarnation base the rebuilt table was first served under */
/* ghost */
bit  late[NH];            /* a lost-cluster holder no rebuild scanned yet, not retired */
bit  retired[NH];         /* retired by the operator: its records are no longer promised */
byte lateDel[NH];         /* copies of a late holder its adoption made delete tasks (inv7 exempt) */
byte lostMax;             /* the newest incarnation the lost cluster issued */
#endif
#ifdef DFS
/* The DFS root (durable: survives the loss of every master) and the
 * fsm's mark queue (lost with them). Bit i is incarnation i's range. */
#define REP_DFS 4         /* the DFS replica's bit in a replica set */
byte drec;                /* put records in the journal */
byte dok;                 /* ranges holding their incarnation's bytes */
byte dheld;               /* ranges the allocator holds (not reusable) */
byte dthr, dex;           /* the journal's removal records: through (every inc <= dthr), exact */
byte mthr, mex, mheld;    /* the fsm's queued marks and the ranges DFSMarked releases */
/* DDEAD: a durable removal record kills inc i (what the properties are
 * stated over); DKILL: what the rebuild checks */
#define DDEAD(i) ((i) <= dthr || (dex & B(i)))
#ifdef WEAK_DFS_IGNORE_REMOVAL
#define DKILL(i) 0
#else
#define DKILL(i) DDEAD(i)
#endif
/* the incarnations with a queued mark: they withhold the key's newer
 * holder tasks, as an older task does (fsm olderDFSMark) */
#ifdef WEAK_DFS_NO_WITHHOLD
#define MARKS 0
#else
#define MARKS (mex | (mthr != 0 -> B(mthr) : 0))
#endif
#else
#define DKILL(i) 0
#define DDEAD(i) 0
#define MARKS 0
#endif
#ifdef COMMIT
/* One-commit puts (fsm/apply_commit.go). Bit i: incarnation i. */
byte blk;                 /* the fsm's live reserved blocks: incarnations PutCommit may still commit */
byte cinc, creps;         /* the client's one-commit put in flight: its incarnation and granted replicas */
/* ghost */
byte orphan;              /* granted one-commit incarnations that never committed: their copies have no task (inv7 exempt) */
byte superseded;          /* incarnations an acknowledged later put overwrote */
#endif
#ifdef JOBS
byte jobState;            /* 0 none, 1 started (its step for the key still to come), 2 past the key */
byte jobInc;              /* WEAK_JOB_BY_PUTSTART: the first incarnation a PutStart after JobStart gets */
bit  compPre;             /* the COMPLETE incarnation's PutEnd applied before JobStart (completion index < job id) */
#endif
#ifdef RESTORE
bit  saved, restored;     /* operator snapshot save / restore (once each) */
byte sComplete, sCompReps, sTasks[NH]; /* the saved table */
byte gState, gInc, gReps, gTomb; /* the leader's ghost check: read holders (1), then propose the drop */
byte restInc;             /* ghost: incarnations the restore listed again that the log had removed or superseded */
byte restOrphan;          /* ghost: incarnations issued before the restore that the restored table neither lists nor has tasks for (inv7 exempt) */
#endif

/* bounds */
byte crashLeft = NCRASH;
byte leadLeft = NLEAD;
byte gcLeft[NH];

/* named results of the invariant check: spin prints the name of the one that fails */
hidden byte inv1_no_resurrection, inv2_no_wrong_victim, inv3_no_lost_intent,
           inv7_latest_copy_last, inv8_gc_keeps_visible, inv_never_lost,
           inv_job_spares_later_puts, inv_inc_above_every_copy,
           inv_adopts_only_lost_copies;
/* scratch (not part of the state) */
hidden byte ch, ci, cm, rk0, rk1, x, j, cn, ca, ai, ah, ar, op;
hidden byte cl;

/* ========================================================================= */
/* Helpers                                                                    */
/* ========================================================================= */

/* Which copy a restart would serve (OpenStore: planGCRecovery + buildIndex):
 * PREPARED → the source is authoritative; COMMITTED → the target; no intent →
 * every bucket. A tombstone anywhere wins; a live record exactly at the
 * floor is dead. */
inline recoveredLive(h, i, res) {
	if
	:: intent[h] == PREPARED ->
		if :: isrc[h] == 0 -> rk0 = bk0[h].st[i] :: else -> rk0 = bk1[h].st[i] fi; rk1 = ABSENT
	:: intent[h] == COMMITTED ->
		if :: isrc[h] == 0 -> rk0 = bk1[h].st[i] :: else -> rk0 = bk0[h].st[i] fi; rk1 = ABSENT
	:: else -> rk0 = bk0[h].st[i]; rk1 = bk1[h].st[i]
	fi;
	res = ((rk0 == LIVE || rk1 == LIVE) && rk0 != TOMB && rk1 != TOMB && floor[h] != i)
}

/* liveOn(complete) || liveOn(pending) for segment h (fsm/queries.go). */
#define liveInFSM(h, i) ((complete == (i) && (compReps & REP(h))) || (pending == (i) && (pendReps & REP(h))))
/* olderIn: some task of the key, on any segment, names an older incarnation. */
#define olderTask(i) (((tasks[0] | tasks[1] | MARKS) & (B(i) - 2)) != 0)

inline setBucket(h, s, i, v) {
	if :: s == 0 -> bk0[h].st[i] = v :: else -> bk1[h].st[i] = v fi
}

#ifdef RESTORE
#define RESTORED(i) (restInc & B(i))
#else
#define RESTORED(i) 0
#endif

/* The invariants, checked after every step (every step is atomic). */
inline checkInvariants() {
	d_step {
	inv1_no_resurrection = 1; inv2_no_wrong_victim = 1; inv3_no_lost_intent = 1;
	inv7_latest_copy_last = 1; inv8_gc_keeps_visible = 1;
	inv_never_lost = 1;
	cm = 0; cn = 0; ca = 0;
	ch = 0;
	do
	:: ch < NH ->
		ci = 1;
		do
		:: ci <= NINC ->
			recoveredLive(ch, ci, cl);
			/* never lost: the owed put is live on a replica the table lists,
			 * or on a late holder awaiting adoption (REBUILD) */
			if :: cl && ci == ackPut && complete == ackPut && (compReps & REP(ch)) -> cn = 1 :: else -> skip fi;
#ifdef REBUILD
			if :: cl && ci == ackPut && late[ch] -> ca = 1 :: else -> skip fi;
#endif
			/* 1: a removed incarnation is never visible again, and a copy once
			 * tombstoned never reads as live again (restart, GC, late write). */
			if :: (tombstoned[ch] & B(ci)) && cl -> inv1_no_resurrection = 0 :: else -> skip fi;
			/* 3: a task's effect outlives its ack: acked → never live again. */
			if :: (acked[ch] & B(ci)) && cl -> inv3_no_lost_intent = 0 :: else -> skip fi;
			/* 8: a restart now (at any GC step) serves exactly the live copies:
			 * GC loses none and revives none; the memory index agrees. */
			if :: cl != (logical[ch].st[ci] == LIVE) -> inv8_gc_keeps_visible = 0 :: else -> skip fi;
			if :: (idx[ch].st[ci] == ILIVE) != (logical[ch].st[ci] == LIVE) -> inv8_gc_keeps_visible = 0 :: else -> skip fi;
#ifdef REBUILD
			/* 7 is not claimed for the copies of a late holder, nor for those
			 * its adoption made tasks: the rebuilt cluster cannot order the
			 * tasks of copies it does not know yet behind the newer
			 * incarnation's (a second loss of every master before they ran
			 * could adopt them) */
			if :: cl && ci > cm && !late[ch] && !retired[ch] && !(lateDel[ch] & B(ci)) && !DDEAD(ci) -> cm = ci :: else -> skip fi;
#elif defined(RESTORE)
			/* nor for copies the restored table does not know: only
			 * reconciliation deletes them, in no order with other tasks */
			if :: cl && ci > cm && !(restOrphan & B(ci)) -> cm = ci :: else -> skip fi;
#elif defined(COMMIT)
			/* nor for the copies of a one-commit write that never
			 * committed: the table has no task for them, only the
			 * holder's reconcile deletes them, in no order with the key's
			 * tasks (docs/DESIGN.md §14, invariant 7) */
			if :: cl && ci > cm && !(orphan & B(ci)) -> cm = ci :: else -> skip fi;
#else
			if :: cl && ci > cm -> cm = ci :: else -> skip fi;
#endif
			ci++
		:: else -> break
		od;
		/* 2: the COMPLETE incarnation's copies are never the victim, so a Get
		 * is always served. */
		if
		:: complete != 0 && (compReps & REP(ch)) && logical[ch].st[complete] != LIVE && !RESTORED(complete) -> inv2_no_wrong_victim = 0
		:: else -> skip
		fi;
		/* 1: a Get never serves the bytes of a removed incarnation */
		if
		:: complete != 0 && (compReps & REP(ch)) && (removed & B(complete)) && idx[ch].st[complete] == ILIVE -> inv1_no_resurrection = 0
		:: else -> skip
		fi;
		ch++
	:: else -> break
	od;
#ifdef DFS
	/* never lost: the owed put's DFS range holds its bytes */
	if :: ackPut != 0 && complete == ackPut && (compReps & REP_DFS) && (dok & B(ackPut)) -> cn = 1 :: else -> skip fi;
	/* 2: the COMPLETE incarnation's DFS bytes are never overwritten */
	if :: complete != 0 && (compReps & REP_DFS) && !(dok & B(complete)) -> inv2_no_wrong_victim = 0 :: else -> skip fi;
	/* 1: an incarnation a durable removal record kills never returns */
	if :: complete != 0 && (complete <= dthr || (dex & B(complete))) -> inv1_no_resurrection = 0 :: else -> skip fi;
#endif
	/* 1: the master never shows a removed incarnation, nor one older than
	 * what an acknowledged remove removed (a restore lists such ghosts
	 * until the ghost check drops them). */
#ifdef COMMIT
	/* (with one-commit puts an incarnation below a removed one may still
	 * commit: its put was in flight, not acknowledged, when the remove
	 * returned, so it is a later value, not a removed one. What never
	 * comes back is an incarnation that was COMPLETE before a remove or
	 * an overwrite.) */
	if :: complete != 0 && ((removed | superseded) & B(complete)) -> inv1_no_resurrection = 0 :: else -> skip fi;
#else
	if :: complete != 0 && ((removed & B(complete)) || complete <= remMax) && !RESTORED(complete) -> inv1_no_resurrection = 0 :: else -> skip fi;
#endif
	if :: ackPut != 0 && !cn && !ca -> inv_never_lost = 0 :: else -> skip fi;
#ifdef DFS
	/* a DFS copy survives while its record and bytes do and no durable
	 * removal record kills it (a rebuild would adopt it) */
	ci = 1;
	do
	:: ci <= NINC ->
		if :: (drec & dok & B(ci)) && !DDEAD(ci) && ci > cm -> cm = ci :: else -> skip fi;
		ci++
	:: else -> break
	od;
#endif
	/* 7: the newest copy that survives on any disk is never an overwritten
	 * value (cm = newest incarnation a restart of some holder would serve). */
	if :: cm != 0 && cm < maxCompleted -> inv7_latest_copy_last = 0 :: else -> skip fi;
#ifdef COMMIT
	/* ... nor one an acknowledged later put overwrote, whatever their
	 * incarnations' order */
	if :: cm != 0 && (superseded & B(cm)) -> inv7_latest_copy_last = 0 :: else -> skip fi;
#endif
	};
	assert(inv_never_lost);
	assert(inv8_gc_keeps_visible);
	assert(inv3_no_lost_intent);
	assert(inv2_no_wrong_victim);
	assert(inv1_no_resurrection);
	assert(inv7_latest_copy_last)
}

/* ========================================================================= */
/* FSM Apply (fsm/apply_*.go) and FSM reads (fsm/queries.go)                  */
/* ========================================================================= */

/* planTasks + createTasks: one task per replica; a duplicate costs nothing. */
inline createTasks(reps, inc) {
	if :: reps & REP(0) -> tasks[0] = tasks[0] | B(inc) :: else -> skip fi;
	if :: reps & REP(1) -> tasks[1] = tasks[1] | B(inc) :: else -> skip fi
}

/* applyPutStart: a new PENDING incarnation on mounted segments; the leader
 * signs a write grant per LOCAL_DISK replica (master putLocations). */
inline applyPutStart() {
	if
	:: segMounted[0] -> pendReps = REP(0)
	:: segMounted[1] -> pendReps = REP(1)
#ifdef BOTH
	:: segMounted[0] && segMounted[1] -> pendReps = REP(0) | REP(1)
#endif
#ifdef DFS
	:: pendReps = REP_DFS
#endif
	fi;
	pending = nextInc;
	nextInc++;
#ifdef DFS
	if :: pendReps & REP_DFS -> dheld = dheld | B(pending) :: else -> skip fi;
#endif
#ifdef REBUILD
	/* the incarnation base: a new incarnation is above every copy of the lost
	 * cluster, on scanned and late holders alike */
	if
	:: rebuilt ->
		inv_inc_above_every_copy = 1;
		ah = 0;
		do
		:: ah < NH ->
			ai = pending;
			do
			:: ai <= NINC ->
				if :: !retired[ah] && (bk0[ah].st[ai] != ABSENT || bk1[ah].st[ai] != ABSENT) -> inv_inc_above_every_copy = 0 :: else -> skip fi;
#ifdef DFS
				if :: drec & B(ai) -> inv_inc_above_every_copy = 0 :: else -> skip fi;
#endif
				ai++
			:: else -> break
			od;
			ah++
		:: else -> break
		od;
		if :: !inv_inc_above_every_copy -> printf("STEP Client: PutStart inc %d, but a holder has a record of inc %d or above\n", pending, pending) :: else -> skip fi;
		assert(inv_inc_above_every_copy)
	:: else -> skip
	fi;
#endif
	if :: pendReps & REP(0) -> grant[0] = grant[0] | B(pending) :: else -> skip fi;
	if :: pendReps & REP(1) -> grant[1] = grant[1] | B(pending) :: else -> skip fi
}

/* applyPutEnd: the pending incarnation becomes COMPLETE; the one it
 * supersedes (maybe in the other pool) gets delete tasks. */
#ifdef DFS
/* a removal mark for inc's DFS range (th: through), its range released by
 * DFSMarked (WEAK_DFS_FREE_EARLY: at once) */
inline markDFS(inc, th) {
	if :: th && inc > mthr -> mthr = inc :: !th -> mex = mex | B(inc) :: else -> skip fi;
#ifdef WEAK_DFS_FREE_EARLY
	dheld = dheld & ~B(inc)
#else
	mheld = mheld | B(inc)
#endif
}
#endif

inline applyPutEnd() {
	if :: complete != 0 -> createTasks(compReps, complete) :: else -> skip fi;
#ifdef COMMIT
	superseded = superseded | B(complete);
#endif
#ifdef DFS
	if :: complete != 0 && (compReps & REP_DFS) -> markDFS(complete, 0) :: else -> skip fi;
#endif
	complete = pending; compReps = pendReps;
	pending = 0; pendReps = 0;
	maxCompleted = complete;
	ackPut = complete;
#ifdef JOBS
	compPre = 0 /* completed after any job that started so far */
#endif
}

/* applyPutRevoke (discardAbandonedPuts): the pending incarnation is dropped;
 * its replicas may hold bytes, so they get tasks. */
inline applyPutRevoke() {
	createTasks(pendReps, pending);
#ifdef DFS
	if :: pendReps & REP_DFS -> markDFS(pending, 0) :: else -> skip fi;
#endif
	pending = 0; pendReps = 0
}

#ifdef COMMIT
/* applyPutCommit: the written one-commit put becomes COMPLETE in one step,
 * only while its block is live and above every incarnation the key holds
 * (COMPLETE, PENDING, tasks); what it supersedes gets tasks, as PutEnd.
 * A refusal changes nothing; the client may retry or give up. */
#ifdef WEAK_COMMIT_EXPIRED
#define BLKLIVE(i) 1
#else
#define BLKLIVE(i) (blk & B(i))
#endif
#ifdef WEAK_COMMIT_BELOW
#define ABOVEALL(i) 1
#else
#define ABOVEALL(i) (complete < (i) && ((tasks[0] | tasks[1]) & ~(B(i) - 1)) == 0)
#endif
inline applyPutCommit() {
	if
	:: !BLKLIVE(cinc) -> printf("STEP Client: PutCommit inc %d refused: INCARNATION_STALE (block expired)\n", cinc)
	:: BLKLIVE(cinc) && pending != 0 -> printf("STEP Client: PutCommit inc %d refused: put in progress (inc %d)\n", cinc, pending)
	:: BLKLIVE(cinc) && pending == 0 && !ABOVEALL(cinc) -> printf("STEP Client: PutCommit inc %d refused: INCARNATION_STALE (the key holds %d)\n", cinc, complete)
	:: BLKLIVE(cinc) && pending == 0 && ABOVEALL(cinc) ->
		printf("STEP Client: PutCommit inc %d applied (supersedes %d)\n", cinc, complete);
		if :: complete != 0 -> createTasks(compReps, complete); superseded = superseded | B(complete) :: else -> skip fi;
		complete = cinc; compReps = creps;
		maxCompleted = complete;
		ackPut = complete;
		orphan = orphan & ~B(cinc);
		cinc = 0; creps = 0
	fi
}
#endif

#ifdef REBUILD
/* The removal memory (fsm/apply_remove.go → the rebuilt cluster's bounded
 * set of keys removed since RebuildBegin): one key here, and a flag once
 * other keys filled the bound. Dropped by rebuild --close. */
inline rememberRemoval() {
	if :: rebuilt && !closed && !remOverflow -> remKey = 1 :: else -> skip fi
}
#endif

/* applyRemove / removeKey: logical delete + tasks, then Remove returns OK. */
inline applyRemove() {
	createTasks(compReps, complete);
#ifdef DFS
	if :: compReps & REP_DFS -> markDFS(complete, 1) :: else -> skip fi;
#endif
	removed = removed | B(complete);
	/* ghost: what the remove covers, the owed put included (REBUILD: one
	 * still awaiting adoption on a late holder) */
	if :: ackPut > complete -> remMax = ackPut :: else -> remMax = complete fi;
	ackPut = 0;
#ifdef REBUILD
	rememberRemoval();
#endif
	complete = 0; compReps = 0
}

/* applyMount: a new process is a new owner: epoch + 1 fences the old one. */
inline applyMount(h) {
	segEpoch[h]++;
	segMounted[h] = 1
}

/* registry.fetchable: a task is handed out only if no task of the same key,
 * on any segment, names an older incarnation (invariant 7). With one key
 * that is: only tasks of the oldest incarnation that has tasks. */
inline fetchTasks(h, out) {
#ifdef WEAK_WITHHOLD
	out = tasks[h]
#else
	x = tasks[0] | tasks[1] | MARKS;
	out = tasks[h] & (x & (256 - x))  /* lowest set bit of x */
#endif
}

/* applyAck: the segment must be mounted at exactly the presented epoch; each
 * terminal result drops its task. */
inline applyAck(h, ep, set, stale) {
	if
	:: segMounted[h] && segEpoch[h] == ep ->
		stale = 0;
		j = 1;
		do
		:: j <= NINC ->
			if
			:: (set & B(j)) && (tasks[h] & B(j)) ->
				recoveredLive(h, j, cl);
				inv3_no_lost_intent = !cl;
				assert(inv3_no_lost_intent); /* the tombstone is durable before its task goes */
				tasks[h] = tasks[h] & ~B(j);
				printf("STEP Leader:   LocalDeleteAck applied: task (holder %d, inc %d) dropped\n", h, j);
				acked[h] = acked[h] | B(j)
			:: else -> skip
			fi;
			j++
		:: else -> break
		od
	:: else -> stale = 1; printf("STEP Leader:   LocalDeleteAck refused: STALE_MOUNT_EPOCH\n")
	fi
}

/* ========================================================================= */
/* Holder store (holder/*.go)                                                 */
/* ========================================================================= */

/* raiseFloors: the floor file is rewritten durably (tmp, fsync, rename, dir
 * fsync) before anything answers on its strength. */
inline raiseFloors(h, i) {
#ifndef NO_FLOOR
	if :: floor[h] < i -> floor[h] = i :: else -> skip fi
#else
	skip
#endif
}

/* Store.Put → planBatch → commitGroup: refuse a tombstoned incarnation and
 * anything at or below the key's floor; else append, fsync, persist the
 * metadata, then index. */
inline storePut(h, i) {
	if
	:: idx[h].st[i] == ILIVE -> wok[h] = wok[h] | B(i)   /* same bytes again: no-op */
	:: idx[h].st[i] == IDEAD -> printf("STEP Holder %d:   write refused: tombstoned\n", h)
	:: idx[h].st[i] == NONE && floor[h] >= i -> printf("STEP Holder %d:   write refused: at or below the floor\n", h)
	:: else ->
		printf("STEP Holder %d:   inc %d stored live (bucket slot %d)\n", h, i, cur[h]);
		setBucket(h, cur[h], i, LIVE);
		idx[h].st[i] = ILIVE;
		logical[h].st[i] = LIVE;
		wok[h] = wok[h] | B(i)
	fi
}

/* Service.handleWrite: the grant must be signed under the cluster's grant
 * key (known only while mounted) for this segment, key and incarnation. */
inline handleWrite(h, i) {
#ifdef NO_GRANT_CHECK
	storePut(h, i)
#else
	if
	:: hmounted[h] && (grant[h] & B(i)) -> storePut(h, i)
	:: else -> printf("STEP Holder %d:   write refused: GRANT_REFUSED\n", h)
	fi
#endif
}

/* The durable part of tombstoneBucket: copy metadata, set tombstoned on the
 * entry whose key and incarnation match, tmp → fsync → rename → dir fsync,
 * then drop it from the live index. */
inline persistTombstone(h, i) {
	/* (a restore may list again an incarnation whose tombstone was already
	 * under way: that is a ghost, RESTORED) */
	inv2_no_wrong_victim = !liveInFSM(h, i) || RESTORED(i);
	assert(inv2_no_wrong_victim); /* never a live incarnation */
	setBucket(h, cur[h], i, TOMB);
	printf("STEP Holder %d:   inc %d durably tombstoned (bucket slot %d)\n", h, i, cur[h]);
	idx[h].st[i] = IDEAD;
	logical[h].st[i] = TOMB;
	tombstoned[h] = tombstoned[h] | B(i)
}

/* OpenStore after a crash: resolve the GC intent (PREPARED: drop the target;
 * COMMITTED: drop the sources), then buildIndex from the metadata and the
 * floor. Every memory field starts afresh; the process is new and unmounted. */
inline openStore(h) {
	if
	:: intent[h] == PREPARED ->
		if :: isrc[h] == 0 -> cur[h] = 0 :: else -> cur[h] = 1 fi
	:: intent[h] == COMMITTED ->
		if :: isrc[h] == 0 -> cur[h] = 1 :: else -> cur[h] = 0 fi
	:: else -> skip
	fi;
	j = 1;
	do
	:: j <= NINC ->
		if
		:: intent[h] != NOINTENT && cur[h] == 0 -> bk1[h].st[j] = ABSENT
		:: intent[h] != NOINTENT && cur[h] == 1 -> bk0[h].st[j] = ABSENT
		:: else -> skip
		fi;
		if
		:: bk0[h].st[j] == TOMB || bk1[h].st[j] == TOMB -> idx[h].st[j] = IDEAD
		:: else ->
			if
			:: (bk0[h].st[j] == LIVE || bk1[h].st[j] == LIVE) && floor[h] != j -> idx[h].st[j] = ILIVE
			:: else -> idx[h].st[j] = NONE
			fi
		fi;
		if
		:: intent[h] == NOINTENT && bk1[h].st[j] != ABSENT -> cur[h] = 1
		:: intent[h] == NOINTENT && bk0[h].st[j] != ABSENT -> cur[h] = 0
		:: else -> skip
		fi;
		tmeta[h].st[j] = ABSENT;
		j++
	:: else -> break
	od;
	intent[h] = NOINTENT;
	hmounted[h] = 0; mode[h] = IDLE; todo[h] = 0; term[h] = 0; curI[h] = 0; deferred[h] = 0;
	needRec[h] = 0; gcPhase[h] = 0; gcLock[h] = 0; gcLen[h] = 0
}

/* ========================================================================= */
/* Operator procedures: rebuild (REBUILD), prefix jobs (JOBS), restore        */
/* (RESTORE)                                                                  */
/* ========================================================================= */

#ifdef REBUILD
#ifdef WEAK_ADOPT_ABSENT_ONLY
#define OLDER (complete == 0)
#else
#define OLDER (complete < ai)
#endif
/* The base that tells the rebuilt cluster's own copies (above it) from the
 * lost cluster's: the rebuild's, which stays while blocks are reserved.
 * WEAK_MOVING_BASE uses the incarnation base, which each block moves past
 * copies the rebuilt cluster issued itself. */
#ifdef WEAK_MOVING_BASE
#define OWNBASE incBase
#else
#define OWNBASE rebuildBase
#endif
/* adoptObject's rule for one live copy (ah, ai) of the key, in the rebuilt
 * table. ar: 0 adopt, 1 already (merge the replica), 2 a delete task, 3
 * refused (nothing changes: the holder stays unadopted), 4 left alone (an
 * incarnation above the rebuild's base is this cluster's own: its tasks and
 * reconciliation govern it). */
inline adoptRule() {
	if
	:: ai > OWNBASE -> ar = 4 /* this cluster's own copy, not the lost one's */
	:: ai <= OWNBASE && complete == ai -> ar = 1
	:: ai <= OWNBASE && complete != ai && pending == ai -> ar = 4
	:: ai <= OWNBASE && complete != ai && pending != ai ->
		if
		/* a newer incarnation is in the table */
		:: complete > ai -> ar = 2
		/* a durable DFS removal record kills this incarnation */
		:: DKILL(ai) -> ar = 2
#ifdef WEAK_ADOPT_ABSENT_ONLY
		/* an older incarnation in the table makes the copy a task too */
		:: complete != 0 && complete < ai -> ar = 2
#endif
		/* (below, OLDER: the key is absent or at an older incarnation) */
#if !defined(WEAK_NO_REMOVAL_MEMORY) && !defined(WEAK_TASK_RULE)
		/* the key left the table since the rebuild began */
		:: OLDER && remKey -> ar = 2
		/* overflowed memory cannot tell whether an absent key was removed */
		:: OLDER && !remKey && remOverflow && complete == 0 && !DKILL(ai) -> ar = 3
		:: OLDER && !remKey && !(remOverflow && complete == 0) && !DKILL(ai) -> ar = 0
#elif defined(WEAK_TASK_RULE)
		/* instead of the memory, a task of the key at or above the copy's
		 * incarnation stands for a remove (its tombstone not yet everywhere) */
		:: OLDER && ((tasks[0] | tasks[1]) & ~(B(ai) - 1)) -> ar = 2
		:: OLDER && !((tasks[0] | tasks[1]) & ~(B(ai) - 1)) && !DKILL(ai) -> ar = 0
#else
		:: OLDER && !DKILL(ai) -> ar = 0
#endif
		fi
	fi
}

/* adoptObject for the live copy (ah, ai), by adoptRule's answer. */
inline adoptCopy() {
	adoptRule();
	if
	:: ar == 0 ->
		/* a rebuild adopts the lost cluster's copies only, never one the
		 * rebuilt cluster issued itself (whose fate its own table decides) */
		inv_adopts_only_lost_copies = (ai <= lostMax);
		if :: !inv_adopts_only_lost_copies -> printf("STEP Operator:   adopt inc %d from holder %d, a copy the rebuilt cluster issued\n", ai, ah) :: else -> skip fi;
		assert(inv_adopts_only_lost_copies);
		if :: complete != 0 -> createTasks(compReps, complete) :: else -> skip fi;
#ifdef DFS
		/* the replaced incarnation's DFS range: a mark, as at a supersede */
		if :: complete != 0 && (compReps & REP_DFS) -> markDFS(complete, 0) :: else -> skip fi;
#endif
		complete = ai; compReps = REP(ah);
		if :: ai > maxCompleted -> maxCompleted = ai :: else -> skip fi;
		/* an outcome-unknown put that took effect overwrites the owed one */
		if :: ackPut != 0 && ackPut < ai -> ackPut = 0 :: else -> skip fi;
		printf("STEP Operator:   adopt inc %d from holder %d\n", ai, ah)
	:: ar == 1 -> compReps = compReps | REP(ah); printf("STEP Operator:   inc %d on holder %d: already\n", ai, ah)
	:: ar == 2 ->
		tasks[ah] = tasks[ah] | B(ai);
		if :: late[ah] -> lateDel[ah] = lateDel[ah] | B(ai) :: else -> skip fi;
		printf("STEP Operator:   inc %d on holder %d: delete task\n", ai, ah)
	:: ar == 4 -> skip
	fi
}

/* applyRebuildBegin (registers the scanned segment) + adoptObject for every
 * live copy on holder h, newest first (as the per-key merge orders them).
 * Refused as a whole if one copy is refused. */
inline adoptHolder(h) {
	ah = h;
	x = 0;
	ai = 1;
	do
	:: ai <= NINC ->
		if :: idx[ah].st[ai] == ILIVE -> adoptRule(); if :: ar == 3 -> x = 1 :: else -> skip fi :: else -> skip fi;
		ai++
	:: else -> break
	od;
	if
	:: x ->
		printf("STEP Operator: rebuild scanning holder %d refused: the removal memory overflowed and the key is absent\n", ah)
	:: else ->
		ai = NINC;
		do
		:: ai >= 1 ->
			if :: idx[ah].st[ai] == ILIVE -> adoptCopy() :: else -> skip fi;
			ai--
		:: else -> break
		od;
		known[ah] = 1;
		late[ah] = 0
	fi
}

#ifdef DFS
/* The rebuild's DFS part (package rebuild dfs.go, fsm adoptDFS): the
 * newest put record no removal record kills wins over older holder
 * copies; its range must hold its bytes, or the key is dropped (no older
 * record is a fallback); an adopted range is registered with the rebuilt
 * allocator, every other range is free there. The fsm's mark queue was
 * lost with the masters. */
inline adoptDFS() {
	mthr = 0; mex = 0; mheld = 0;
	dheld = 0;
	j = 0;
	ai = 1;
	do
	:: ai <= NINC ->
		if :: (drec & B(ai)) && !DKILL(ai) -> j = ai :: else -> skip fi;
		ai++
	:: else -> break
	od;
	if
	:: j != 0 && j > complete && (dok & B(j)) ->
		if :: complete != 0 -> createTasks(compReps, complete) :: else -> skip fi;
		complete = j; compReps = REP_DFS;
		if :: ackPut != 0 && ackPut < j -> ackPut = 0 :: else -> skip fi;
		printf("STEP Operator:   adopt inc %d from the DFS root\n", j)
	:: j != 0 && j > complete && !(dok & B(j)) ->
		if :: complete != 0 -> createTasks(compReps, complete) :: else -> skip fi;
		complete = 0; compReps = 0;
		printf("STEP Operator:   DFS inc %d does not verify: the key is dropped\n", j)
	:: j != 0 && j == complete && (dok & B(j)) -> compReps = compReps | REP_DFS; printf("STEP Operator:   DFS inc %d: a replica too\n", j)
	:: else -> skip
	fi;
#ifndef WEAK_DFS_NO_REGISTER
	if :: complete != 0 && (compReps & REP_DFS) -> dheld = dheld | B(complete) :: else -> skip fi;
#endif
	/* every other put record is killed by a removal record the rebuild
	 * writes (as every other holder copy becomes a delete task): no later
	 * rebuild may adopt an overwritten value the rebuilt table never knew */
	ai = 1;
	do
	:: ai <= NINC ->
		if :: (drec & B(ai)) && !(complete == ai && (compReps & REP_DFS)) -> dex = dex | B(ai) :: else -> skip fi;
		ai++
	:: else -> break
	od
}
#endif

/* Every master lost its state; a fresh cluster is bootstrapped and the
 * lost cluster's holders are pointed at it (restarted). operator rebuild
 * scans the holders in scan (a bitmask; the others are down: late), then
 * RebuildBegin (incarnation base, segments) and the adoptions, then the
 * Finish begin. No holder mounts before it ends, so it is one step. */
inline lossAndRebuild(scan) {
	openStore(0); openStore(1);
	complete = 0; compReps = 0; pending = 0; pendReps = 0;
	tasks[0] = 0; tasks[1] = 0;
	segMounted[0] = 0; segMounted[1] = 0; segEpoch[0] = 0; segEpoch[1] = 0;
	masterEpoch++;
	/* a new grant key: the lost cluster's grants no longer verify */
	grant[0] = 0; grant[1] = 0; wok[0] = 0; wok[1] = 0;
	pipe[0] = 0; pipe[1] = 0; pipeEpoch[0] = 0; pipeEpoch[1] = 0;
	/* ghost: the rebuilt cluster's promises start here (a remove the lost
	 * log acknowledged but no holder tombstoned yet is beyond a loss of
	 * every master) */
	removed = 0; remMax = 0;
	late[0] = ((scan & REP(0)) == 0); late[1] = ((scan & REP(1)) == 0);
	lostMax = nextInc - 1;
#ifdef WEAK_NO_INC_MARGIN
	/* the base covers the records of the scanned holders only */
	nextInc = 1;
	ah = 0;
	do
	:: ah < NH ->
		ai = 1;
		do
		:: ai <= NINC ->
			if :: (scan & REP(ah)) && (bk0[ah].st[ai] != ABSENT || bk1[ah].st[ai] != ABSENT) && ai >= nextInc -> nextInc = ai + 1 :: else -> skip fi;
			ai++
		:: else -> break
		od;
		ah++
	:: else -> break
	od;
#endif
	/* (otherwise nextInc goes on: the base covers every incarnation the
	 * lost cluster issued) */
	incBase = nextInc - 1;
	rebuildBase = incBase;
	rebuilt = 1;
	/* Merge: every scanned holder's live copies, newest first */
	ai = NINC;
	do
	:: ai >= 1 ->
		ah = 0;
		do
		:: ah < NH ->
			if :: (scan & REP(ah)) && idx[ah].st[ai] == ILIVE -> adoptCopy() :: else -> skip fi;
			ah++
		:: else -> break
		od;
		ai--
	:: else -> break
	od;
#ifdef DFS
	adoptDFS();
#endif
	known[0] = !late[0]; known[1] = !late[1];
	/* ghost: inv7 is the rebuilt cluster's from here */
	maxCompleted = complete
}

/* operator retire of a late holder: its data is abandoned by the operator's
 * decision, so its copies are no longer promised. */
inline retireHolder(h) {
	late[h] = 0; retired[h] = 1;
	if
	:: ackPut != 0 && !(complete == ackPut) -> ackPut = 0
	:: else -> skip
	fi
}

/* The operator's rebuild events. */
active proctype Operator() {
end:
	do
	:: atomic { !rebuilt ->
		if :: op = 1 :: op = 2 :: op = 3 fi;
		printf("STEP Operator: every master lost its state; rebuild scans holders %d (bitmask; the others are late)\n", op);
		lossAndRebuild(op); checkInvariants() }
	/* a rerun (operator rebuild again), scanning one holder: a late one that
	 * is back, or one already known */
	:: atomic { rebuilt && !closed && (!retired[0] || !retired[1]) ->
		if :: !retired[0] -> op = 0 :: !retired[1] -> op = 1 fi;
		printf("STEP Operator: rebuild (rerun) scans holder %d\n", op);
		adoptHolder(op); checkInvariants() }
	:: atomic { rebuilt && (late[0] || late[1]) ->
		if :: late[0] -> op = 0 :: late[1] -> op = 1 fi;
		printf("STEP Operator: retire holder %d\n", op);
		retireHolder(op); checkInvariants() }
	:: atomic { rebuilt && !closed -> printf("STEP Operator: rebuild --close (removal memory dropped)\n"); closed = 1; remKey = 0; remOverflow = 0; checkInvariants() }
	:: atomic { rebuilt && !closed && !remOverflow -> printf("STEP Operator: other keys' removals overflow the removal memory\n"); remOverflow = 1; checkInvariants() }
	od
}
#endif

#ifdef JOBS
/* JobStart{prefix} (the key is under the prefix) and the job's step for the
 * key (JobAdvance, fsm/apply_jobs.go): the step removes the key only if its
 * COMPLETE incarnation's PutEnd applied before JobStart. */
active proctype Operator() {
end:
	do
	:: atomic { jobState == 0 ->
		jobState = 1; jobInc = nextInc; compPre = 1;
		printf("STEP Operator: JobStart (puts started from inc %d on are after it)\n", jobInc); checkInvariants() }
	:: atomic { jobState == 1 ->
		jobState = 2;
#ifdef WEAK_JOB_BY_PUTSTART
		if :: complete != 0 && complete < jobInc -> x = 1 :: else -> x = 0 fi;
#else
		if :: complete != 0 && compPre -> x = 1 :: else -> x = 0 fi;
#endif
		if
		:: x ->
			printf("STEP Operator: job step removes inc %d\n", complete);
			inv_job_spares_later_puts = compPre;
			assert(inv_job_spares_later_puts); /* a put that completed after JobStart survives */
			applyRemove()
		:: else -> printf("STEP Operator: job step passes the key (inc %d kept)\n", complete)
		fi;
		checkInvariants() }
	od
}
#endif

#ifdef RESTORE
/* operator snapshot save, and operator snapshot restore of it later (an
 * older state: the flagged path), replacing the table (fsm/restore.go)
 * through the log (incarnations go on growing); a fresh EpochBegin makes
 * holders replay. The restore abandons, by the operator's decision, the
 * puts acknowledged after the save and the removes whose copies were still
 * live. */
active proctype Operator() {
end:
	do
	:: atomic { !saved && pending == 0 && tasks[0] == 0 && tasks[1] == 0 ->
		saved = 1; sComplete = complete; sCompReps = compReps; sTasks[0] = tasks[0]; sTasks[1] = tasks[1];
		printf("STEP Operator: snapshot save (inc %d complete)\n", complete); checkInvariants() }
	:: atomic { saved && !restored ->
		restored = 1;
		if
		:: sComplete != 0 && sComplete != complete ->
			restInc = B(sComplete);
			/* a remove undone while a copy was still live: the operator's choice */
			if
			:: (removed & B(sComplete)) &&
			   (((sCompReps & REP(0)) && idx[0].st[sComplete] != IDEAD) || ((sCompReps & REP(1)) && idx[1].st[sComplete] != IDEAD)) ->
				removed = removed & ~B(sComplete)
			:: else -> skip
			fi
		:: else -> skip
		fi;
		if :: complete != sComplete -> ackPut = 0 :: else -> skip fi;
		/* (the saved table had no put in flight; one in flight now is dropped
		 * with the table, its copy left to reconciliation) */
		complete = sComplete; compReps = sCompReps; pending = 0; pendReps = 0;
		tasks[0] = sTasks[0]; tasks[1] = sTasks[1];
		maxCompleted = complete;
		restOrphan = 0;
		ai = 1;
		do
		:: ai < nextInc && ai <= NINC ->
			if :: ai != complete && !((tasks[0] | tasks[1]) & B(ai)) -> restOrphan = restOrphan | B(ai) :: else -> skip fi;
			ai++
		:: else -> break
		od;
		masterEpoch++;
		printf("STEP Operator: snapshot restore (inc %d complete again), EpochBegin\n", complete); checkInvariants() }
	od
}
#endif

/* ========================================================================= */
/* Processes                                                                  */
/* ========================================================================= */

/* Clients and the leader's put path. Write deliveries are any time a grant
 * exists: the first one, and late repeats (a retry whose first attempt was
 * only slow), any number of times: a repeat that changes nothing is a
 * state already seen. With NO_GRANT_CHECK, any started incarnation may be
 * written to any holder (a misdirected or stale client). */
#ifdef NO_GRANT_CHECK
#define CANWRITE(h, i) ((i) <= NINC && (i) < nextInc && !gcLock[h])
#else
#define CANWRITE(h, i) ((i) <= NINC && (grant[h] & B(i)) && !gcLock[h])
#endif
#define WRITE(h, i) atomic { CANWRITE(h, i) -> printf("STEP Client: write inc %d to holder %d (handleWrite)\n", i, h); handleWrite(h, i); checkInvariants() }

#ifdef DFS
#define PUTOK 1
/* a released range handed to another key's put: its bytes are overwritten */
#define REUSE(i) atomic { (dok & ~dheld & B(i)) -> dok = dok & ~B(i); printf("STEP Client: DFS range of inc %d reused by another key\n", i); checkInvariants() }
#else
#define PUTOK (segMounted[0] || segMounted[1])
#endif

active proctype Client() {
end:
	do
	:: atomic { pending == 0 && nextInc <= NINC && PUTOK ->
		applyPutStart(); printf("STEP Client: PutStart inc %d replicas %d (grants issued)\n", pending, pendReps); checkInvariants() }
	:: WRITE(0, 1)
	:: WRITE(1, 1)
	:: WRITE(0, 2)
	:: WRITE(1, 2)
#if NINC >= 3
	:: WRITE(0, 3)
	:: WRITE(1, 3)
#endif
#ifdef DFS
	/* the DFS write: the value, then (a crash may come between) its put record */
	:: atomic { pending != 0 && (pendReps & REP_DFS) && !(dok & B(pending)) -> dok = dok | B(pending); printf("STEP Client: DFS value of inc %d written\n", pending); checkInvariants() }
	:: atomic { pending != 0 && (pendReps & REP_DFS) && (dok & B(pending)) && !(drec & B(pending)) -> drec = drec | B(pending); printf("STEP Client: DFS put record of inc %d written\n", pending); checkInvariants() }
	:: REUSE(1)
	:: REUSE(2)
#if NINC >= 3
	:: REUSE(3)
#endif
#define DFSDONE ((pendReps & REP_DFS) == 0 || (drec & B(pending)))
#else
#define DFSDONE 1
#endif
	/* the client ends its put once every replica answered OK */
	:: atomic { pending != 0 && ((pendReps & REP(0)) == 0 || (wok[0] & B(pending))) &&
	                            ((pendReps & REP(1)) == 0 || (wok[1] & B(pending))) && DFSDONE ->
		printf("STEP Client: PutEnd inc %d (supersedes %d)\n", pending, complete); applyPutEnd(); checkInvariants() }
	/* or never ends it: the leader's discardAbandonedPuts revokes it */
	:: atomic { pending != 0 -> printf("STEP Leader: PutRevoke inc %d\n", pending); applyPutRevoke(); checkInvariants() }
	:: atomic { complete != 0 -> printf("STEP Client: Remove inc %d -> OK\n", complete); applyRemove(); checkInvariants() }
#ifdef COMMIT
	/* a one-commit put: the leader reserves a block (ReserveIncarnations,
	 * committed) and grants its incarnation to a mounted segment
	 * (PutGrant, no commit) */
	:: atomic { cinc == 0 && nextInc <= NINC && (segMounted[0] || segMounted[1]) ->
		if
		:: segMounted[0] -> creps = REP(0)
		:: segMounted[1] -> creps = REP(1)
		fi;
		cinc = nextInc; nextInc++;
		blk = blk | B(cinc); orphan = orphan | B(cinc);
		if :: creps & REP(0) -> grant[0] = grant[0] | B(cinc) :: else -> grant[1] = grant[1] | B(cinc) fi;
		printf("STEP Client: ReserveIncarnations block of inc %d, PutGrant to replicas %d (no commit)\n", cinc, creps);
		checkInvariants() }
	/* PutCommit once every granted replica answered OK */
	:: atomic { cinc != 0 && ((creps & REP(0)) == 0 || (wok[0] & B(cinc))) && ((creps & REP(1)) == 0 || (wok[1] & B(cinc))) ->
		applyPutCommit(); checkInvariants() }
	/* or the client gives up (crashed, or after a refusal): its copies
	 * stay orphans until their holder's reconcile */
	:: atomic { cinc != 0 -> printf("STEP Client: gives up the one-commit put of inc %d\n", cinc); cinc = 0; creps = 0; checkInvariants() }
#endif
#if defined(REBUILD) && !defined(DFS)
	/* a one-commit put's block reservation (ReserveIncarnations, for
	 * another key): the block, one incarnation here, is skipped by later
	 * PutStarts, and the incarnation base moves up by its count, past
	 * copies the rebuilt cluster issued before it. Only once it issued
	 * one: a block before that only renumbers the later incarnations.
	 * (Not with DFS: the DFS part of the rebuild is its first run only,
	 * reruns scan holders, which the configuration without DFS checks.) */
	:: atomic { rebuilt && nextInc <= NINC && nextInc - 1 > rebuildBase ->
		nextInc++; incBase++;
		printf("STEP Leader: ReserveIncarnations: block of inc %d; the incarnation base moves to %d (the rebuild's base stays %d)\n", nextInc - 1, incBase, rebuildBase);
		checkInvariants() }
#endif
	od
}

/* The master log's own events: a leader change (EpochBegin: master epoch
 * +1, soft state gone) and acks whose outcome the holder never learned,
 * committed later. */
active proctype Leader() {
	bit stale;
end:
	do
#ifdef COMMIT
	/* the fsm's time passes the oldest live block's expiry (a command's
	 * Now): no incarnation of it can commit any more */
	:: atomic { blk != 0 -> blk = blk & (blk - 1); printf("STEP Leader: the oldest live block expires (live blocks now %d)\n", blk); checkInvariants() }
#endif
	:: atomic { leadLeft > 0 -> leadLeft--; masterEpoch++; printf("STEP Leader: EpochBegin, master epoch %d\n", masterEpoch); checkInvariants() }
	:: atomic { pipe[0] != 0 -> applyAck(0, pipeEpoch[0], pipe[0], stale); pipe[0] = 0; checkInvariants() }
	:: atomic { pipe[1] != 0 -> applyAck(1, pipeEpoch[1], pipe[1], stale); pipe[1] = 0; checkInvariants() }
#ifdef DFS
	/* the leader writes the queued removal records (fdatasync), then
	 * DFSMarked drops them and releases their ranges */
	:: atomic { mthr != 0 || mex != 0 ->
		if :: mthr > dthr -> dthr = mthr :: else -> skip fi;
		dex = dex | mex;
		dheld = dheld & ~mheld;
		printf("STEP Leader: removal records written (through %d, exact %d); DFSMarked releases ranges %d\n", mthr, mex, mheld);
		mthr = 0; mex = 0; mheld = 0;
		checkInvariants() }
#endif
#ifdef RESTORE
	/* the ghost check after a restore: read what the replicas' holders hold
	 * of the COMPLETE incarnation (a tombstone is evidence, absent is not)... */
	:: atomic { restored && gState == 0 && complete != 0 ->
		gInc = complete; gReps = compReps; gTomb = 0;
		if :: (compReps & REP(0)) && idx[0].st[complete] == IDEAD -> gTomb = gTomb | REP(0) :: else -> skip fi;
		if :: (compReps & REP(1)) && idx[1].st[complete] == IDEAD -> gTomb = gTomb | REP(1) :: else -> skip fi;
		if :: gTomb != 0 -> gState = 1 :: else -> skip fi;
		printf("STEP Leader: ghost check of inc %d: tombstoned on replicas %d of %d\n", gInc, gTomb, gReps);
		checkInvariants() }
	/* ...then propose the drop: applied only if the table still holds that
	 * incarnation; the object goes if every replica is tombstoned, else the
	 * tombstoned replicas alone */
	:: atomic { gState == 1 ->
		gState = 0;
#ifdef WEAK_GHOST_UNCONDITIONAL
		if :: complete != 0 -> x = 1 :: else -> x = 0 fi;
#else
		if :: complete == gInc -> x = 1 :: else -> x = 0 fi;
#endif
		if
		:: x && gTomb == gReps ->
			printf("STEP Leader: ghost drop applied: inc %d leaves the table\n", complete);
			/* from here inv1 and inv2 hold for it again, without exception */
			restInc = restInc & ~B(complete);
			complete = 0; compReps = 0
		:: x && gTomb != gReps -> printf("STEP Leader: ghost drop applied: replicas %d of inc %d dropped\n", gTomb, complete); compReps = compReps & ~gTomb
		:: else -> printf("STEP Leader: ghost drop refused: the table no longer holds inc %d\n", gInc)
		fi;
		checkInvariants() }
#endif
	od
}

/* applyMount refuses a holder whose marker names the lost cluster while the
 * rebuilt table does not know its segment (a late holder): it must be
 * adopted by a rebuild that scans it, or retired. WEAK_LATE_MOUNT accepts
 * it (the mount registers the segment) and it reconciles. */
/* Reconcile: with one-commit puts the holder also reconciles periodically
 * and asks about the copies it stored under grants (any time, here), and
 * the answer leaves a live block's copies undecided (FSM.Reconcile). */
#if defined(COMMIT)
#define RECONCILE_ANY_TIME 1
#ifdef WEAK_COMMIT_UNDECIDED
#define UNDECIDED(i) 0
#else
#define UNDECIDED(i) (blk & B(i))
#endif
#else
#define RECONCILE_ANY_TIME 0
#define UNDECIDED(i) 0
#endif

#if defined(REBUILD) && !defined(WEAK_LATE_MOUNT)
#define MOUNTABLE(h) (!rebuilt || known[h])
#else
#define MOUNTABLE(h) 1
#endif

/* One holder process and its GC worker, as steps of one proctype; each step
 * is atomic. A crash may come between any two steps. */
proctype Holder(bit h) {
	byte i, set;
	bit stale;
end:
	do
	/* ---- Service.mount ------------------------------------------------- */
	:: atomic { !hmounted[h] && mode[h] == IDLE && MOUNTABLE(h) ->
		applyMount(h);
		hmounted[h] = 1; hepoch[h] = segEpoch[h]; hmaster[h] = masterEpoch;
		needRec[h] = 1; /* replay after every mount */
		printf("STEP Holder %d: mount, mount epoch %d\n", h, hepoch[h]);
		checkInvariants() }

	/* ---- Service.reconcile: LiveRefs → NotLive (after a barrier) ------- */
	:: atomic { hmounted[h] && mode[h] == IDLE && (needRec[h] || RECONCILE_ANY_TIME) ->
		needRec[h] = 0;
		if
		:: segMounted[h] && segEpoch[h] == hepoch[h] ->
			set = 0;
			i = 1;
			do
			:: i <= NINC ->
				if
#ifdef WEAK_NOTLIVE
				:: idx[h].st[i] == ILIVE && !liveInFSM(h, i) -> set = set | B(i)
#else
				:: idx[h].st[i] == ILIVE && !liveInFSM(h, i) && !olderTask(i) && !UNDECIDED(i) -> set = set | B(i)
#endif
				:: else -> skip
				fi;
				i++
			:: else -> break
			od;
			printf("STEP Holder %d: reconcile, NotLive answers incs %d (bitmask)\n", h, set);
			if :: set != 0 -> todo[h] = set; term[h] = 0; mode[h] = RECON :: else -> skip fi
		:: else -> hmounted[h] = 0 /* STALE_MOUNT_EPOCH: markUnmounted */
		fi;
		checkInvariants() }

	/* ---- Service.fetchOnce: FetchTasks (long poll) + noteMasterEpoch ---- */
	:: atomic { hmounted[h] && mode[h] == IDLE && !needRec[h] &&
	            (!(segMounted[h] && segEpoch[h] == hepoch[h]) || masterEpoch != hmaster[h] || tasks[h] != 0) ->
		if
		:: segMounted[h] && segEpoch[h] == hepoch[h] ->
			fetchTasks(h, set);
			printf("STEP Holder %d: fetchOnce gets tasks for incs %d (bitmask; pending tasks: holder0 %d holder1 %d)\n", h, set, tasks[0], tasks[1]);
			if :: masterEpoch != hmaster[h] -> hmaster[h] = masterEpoch; needRec[h] = 1 :: else -> skip fi;
			if :: set != 0 -> todo[h] = set; term[h] = 0; mode[h] = FETCHED :: else -> skip fi
		:: else -> hmounted[h] = 0
		fi;
		checkInvariants() }

	/* ---- BatchMarkDeleted: resolve (and recordAbsent) ------------------ */
	:: atomic { mode[h] != IDLE && curI[h] == 0 && todo[h] != 0 ->
		if
		:: todo[h] & B(1) -> i = 1
		:: todo[h] & B(2) -> i = 2
		:: todo[h] & B(3) -> i = 3
		fi;
#ifdef WEAK_KEY_ONLY
		/* matching on the key alone: an absent incarnation's task takes
		 * whichever incarnation of the key is live here */
		if
		:: idx[h].st[i] != ILIVE && idx[h].st[1] == ILIVE -> i = 1
		:: idx[h].st[i] != ILIVE && NINC >= 2 && idx[h].st[2] == ILIVE -> i = 2
		:: idx[h].st[i] != ILIVE && NINC >= 3 && idx[h].st[3] == ILIVE -> i = 3
		:: else -> skip
		fi;
#endif
		if
		:: idx[h].st[i] == ILIVE -> curI[h] = i; rb[h] = cur[h]; printf("STEP Holder %d: resolve inc %d: live in bucket slot %d\n", h, i, rb[h])
		:: idx[h].st[i] == IDEAD -> term[h] = term[h] | B(i); todo[h] = todo[h] & ~B(i); printf("STEP Holder %d: resolve inc %d: AlreadyRemoved\n", h, i)
		:: idx[h].st[i] == NONE ->
			/* recordAbsent: raise the floor durably, then StaleVersion */
			raiseFloors(h, i); term[h] = term[h] | B(i); todo[h] = todo[h] & ~B(i);
			printf("STEP Holder %d: resolve inc %d: absent, recordAbsent (floor now %d), StaleVersion\n", h, i, floor[h])
#ifdef IOFAIL
		:: idx[h].st[i] == NONE -> todo[h] = todo[h] & ~B(i)  /* floor write failed: RetryableFailure */
#endif
		fi;
		checkInvariants() }

	/* ---- BatchMarkDeleted: tombstoneBucket (holds the bucket's persistMu) */
	:: atomic { curI[h] != 0 && !(gcLock[h] && rb[h] == isrc[h]) ->
		i = curI[h]; curI[h] = 0;
		printf("STEP Holder %d: tombstoneBucket inc %d\n", h, i);
		if
		:: idx[h].st[i] == ILIVE && cur[h] == rb[h] ->
#ifdef WEAK_ACK_EARLY
			deferred[h] = deferred[h] | B(i);  /* answered Removed now, persisted later */
			term[h] = term[h] | B(i);
#else
			persistTombstone(h, i);
			term[h] = term[h] | B(i);          /* Removed */
#endif
			todo[h] = todo[h] & ~B(i)
#ifdef IOFAIL
		:: idx[h].st[i] == ILIVE && cur[h] == rb[h] -> todo[h] = todo[h] & ~B(i)  /* fsync failed: RetryableFailure */
#endif
		:: idx[h].st[i] == ILIVE && cur[h] != rb[h] -> skip  /* moved by GC: resolve again */
		:: idx[h].st[i] == IDEAD -> term[h] = term[h] | B(i); todo[h] = todo[h] & ~B(i)
		:: idx[h].st[i] == NONE -> skip  /* gone meanwhile: resolve again (recordAbsent) */
		fi;
		checkInvariants() }

#ifdef WEAK_ACK_EARLY
	/* the deferred persistence of an already-acked tombstone */
	:: atomic { deferred[h] != 0 && !gcLock[h] ->
		if
		:: deferred[h] & B(1) -> i = 1
		:: deferred[h] & B(2) -> i = 2
		:: deferred[h] & B(3) -> i = 3
		fi;
		deferred[h] = deferred[h] & ~B(i);
		if :: idx[h].st[i] == ILIVE -> persistTombstone(h, i) :: else -> skip fi;
		checkInvariants() }
#endif

	/* ---- fetchOnce: ack the terminal outcomes ---------------------------- */
	:: atomic { mode[h] != IDLE && todo[h] == 0 && curI[h] == 0 ->
		if
		:: mode[h] == FETCHED && term[h] != 0 ->
			printf("STEP Holder %d: ack incs %d (bitmask) at mount epoch %d\n", h, term[h], hepoch[h]);
			if
			:: applyAck(h, hepoch[h], term[h], stale);
			   if :: stale -> hmounted[h] = 0 :: else -> skip fi
			:: skip  /* lost: never committed; the tasks come back */
#ifdef LATEACK
			:: pipe[h] == 0 -> pipe[h] = term[h]; pipeEpoch[h] = hepoch[h]  /* unknown: commits later */
#endif
			fi
		:: else -> skip
		fi;
		mode[h] = IDLE; term[h] = 0;
		checkInvariants() }

	/* ---- GC runRound ------------------------------------------------------ */
	/* plan (a source with dead records) → raiseFloors(deadInSources) →
	 * intent PREPARED → writeTarget (copy the live records) */
	:: atomic { gcPhase[h] == 0 && gcLeft[h] > 0 &&
	            (idx[h].st[1] == IDEAD || (NINC >= 2 && idx[h].st[2] == IDEAD) || (NINC >= 3 && idx[h].st[3] == IDEAD)) ->
		gcLeft[h]--;
		gcLen[h] = 0;
		i = 1;
		do
		:: i <= NINC ->
			if :: idx[h].st[i] == IDEAD -> raiseFloors(h, i) :: else -> skip fi;
			if :: (cur[h] == 0 && bk0[h].st[i] != ABSENT) || (cur[h] == 1 && bk1[h].st[i] != ABSENT) -> gcLen[h]++ :: else -> skip fi;
			if :: idx[h].st[i] == ILIVE -> tmeta[h].st[i] = LIVE :: else -> tmeta[h].st[i] = ABSENT fi;
			i++
		:: else -> break
		od;
		intent[h] = PREPARED; isrc[h] = cur[h];
		gcPhase[h] = 1;
		printf("STEP Holder %d: GC runRound: floor %d, intent PREPARED, live records copied to the target\n", h, floor[h]);
		checkInvariants() }

	/* lock the sources, check they did not change, carry tombstones that
	 * landed while copying; a changed source aborts the round */
	:: atomic { gcPhase[h] == 1 ->
		set = 0;
		i = 1;
		do
		:: i <= NINC ->
			if :: (cur[h] == 0 && bk0[h].st[i] != ABSENT) || (cur[h] == 1 && bk1[h].st[i] != ABSENT) -> set++ :: else -> skip fi;
#ifndef WEAK_GC_NO_CARRY
			if :: tmeta[h].st[i] == LIVE && idx[h].st[i] != ILIVE -> tmeta[h].st[i] = TOMB :: else -> skip fi;
#endif
			i++
		:: else -> break
		od;
		if
		:: set != gcLen[h] -> /* abortRound: target removed, then the intent */
			intent[h] = NOINTENT; gcPhase[h] = 0;
			i = 1;
			do :: i <= NINC -> tmeta[h].st[i] = ABSENT; i++ :: else -> break od
		:: else -> gcLock[h] = 1; gcPhase[h] = 2
		fi;
		if
#ifdef WEAK_GC_NO_CARRY
		:: gcPhase[h] == 2 -> printf("STEP Holder %d: GC locks the sources (tombstones NOT carried into the target)\n", h)
#else
		:: gcPhase[h] == 2 -> printf("STEP Holder %d: GC locks the sources, carries tombstones into the target\n", h)
#endif
		:: else -> printf("STEP Holder %d: GC round aborted: a source changed\n", h)
		fi;
		checkInvariants() }

	/* persist the target's metadata (durable) */
	:: atomic { gcPhase[h] == 2 ->
		i = 1;
		do :: i <= NINC -> setBucket(h, 1 - isrc[h], i, tmeta[h].st[i]); i++ :: else -> break od;
		gcPhase[h] = 3;
		printf("STEP Holder %d: GC target metadata persisted\n", h);
		checkInvariants() }

	/* intent COMMITTED (durable): the target is authoritative from here */
	:: atomic { gcPhase[h] == 3 -> intent[h] = COMMITTED; gcPhase[h] = 4; printf("STEP Holder %d: GC intent COMMITTED\n", h); checkInvariants() }

	/* switchIndex: the index points into the target; the sources' own
	 * tombstones are reclaimed with their bytes (the floor keeps them out);
	 * then finishCleanup: unlink the sources, fsync the directory, remove
	 * the intent. (The two durable steps after the switch are one step
	 * here: a restart between them recovers the same copies, COMMITTED
	 * keeps the target either way.) */
	:: atomic { gcPhase[h] == 4 ->
		i = 1;
		do
		:: i <= NINC ->
			if :: idx[h].st[i] == IDEAD && tmeta[h].st[i] != TOMB -> idx[h].st[i] = NONE :: else -> skip fi;
			if :: tmeta[h].st[i] == LIVE -> idx[h].st[i] = ILIVE :: else -> skip fi;
			tmeta[h].st[i] = ABSENT;
			setBucket(h, isrc[h], i, ABSENT);
			i++
		:: else -> break
		od;
		cur[h] = 1 - isrc[h];
		intent[h] = NOINTENT;
		gcLock[h] = 0; gcPhase[h] = 0;
		printf("STEP Holder %d: GC switchIndex + unlink sources + remove intent\n", h);
		checkInvariants() }

	/* ---- crash and restart (the directory survives, memory does not) ---- */
	:: atomic { crashLeft > 0 -> crashLeft--; openStore(h); printf("STEP Holder %d: crash + restart (OpenStore recovers from disk)\n", h); checkInvariants() }
	od
}

init {
	atomic {
		byte a;
		a = 0;
		do
		:: a < NH ->
			if :: a == 0 -> gcLeft[a] = NGC :: else -> gcLeft[a] = NGC1 fi;
			a++
		:: else -> break
		od;
		run Holder(0);
		run Holder(1)
	}
}
