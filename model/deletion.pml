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

/* bounds */
byte crashLeft = NCRASH;
byte leadLeft = NLEAD;
byte gcLeft[NH];

/* named results of the invariant check: spin prints the name of the one that fails */
hidden byte inv1_no_resurrection, inv2_no_wrong_victim, inv3_no_lost_intent,
           inv7_latest_copy_last, inv8_gc_keeps_visible;
/* scratch (not part of the state) */
hidden byte ch, ci, cm, rk0, rk1, x, j;
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
#define olderTask(i) (((tasks[0] | tasks[1]) & (B(i) - 2)) != 0)

inline setBucket(h, s, i, v) {
	if :: s == 0 -> bk0[h].st[i] = v :: else -> bk1[h].st[i] = v fi
}

/* The invariants, checked after every step (every step is atomic). */
inline checkInvariants() {
	d_step {
	inv1_no_resurrection = 1; inv2_no_wrong_victim = 1; inv3_no_lost_intent = 1;
	inv7_latest_copy_last = 1; inv8_gc_keeps_visible = 1;
	cm = 0;
	ch = 0;
	do
	:: ch < NH ->
		ci = 1;
		do
		:: ci <= NINC ->
			recoveredLive(ch, ci, cl);
			/* 1: a removed incarnation is never visible again, and a copy once
			 * tombstoned never reads as live again (restart, GC, late write). */
			if :: (tombstoned[ch] & B(ci)) && cl -> inv1_no_resurrection = 0 :: else -> skip fi;
			/* 3: a task's effect outlives its ack: acked → never live again. */
			if :: (acked[ch] & B(ci)) && cl -> inv3_no_lost_intent = 0 :: else -> skip fi;
			/* 8: a restart now (at any GC step) serves exactly the live copies:
			 * GC loses none and revives none; the memory index agrees. */
			if :: cl != (logical[ch].st[ci] == LIVE) -> inv8_gc_keeps_visible = 0 :: else -> skip fi;
			if :: (idx[ch].st[ci] == ILIVE) != (logical[ch].st[ci] == LIVE) -> inv8_gc_keeps_visible = 0 :: else -> skip fi;
			if :: cl && ci > cm -> cm = ci :: else -> skip fi;
			ci++
		:: else -> break
		od;
		/* 2: the COMPLETE incarnation's copies are never the victim, so a Get
		 * is always served. */
		if
		:: complete != 0 && (compReps & REP(ch)) && logical[ch].st[complete] != LIVE -> inv2_no_wrong_victim = 0
		:: else -> skip
		fi;
		ch++
	:: else -> break
	od;
	/* 1: the master never shows a removed incarnation. */
	if :: complete != 0 && (removed & B(complete)) -> inv1_no_resurrection = 0 :: else -> skip fi;
	/* 7: the newest copy that survives on any disk is never an overwritten
	 * value (cm = newest incarnation a restart of some holder would serve). */
	if :: cm != 0 && cm < maxCompleted -> inv7_latest_copy_last = 0 :: else -> skip fi;
	};
	assert(inv8_gc_keeps_visible);
	assert(inv3_no_lost_intent);
	assert(inv2_no_wrong_victim);
	assert(inv7_latest_copy_last);
	assert(inv1_no_resurrection)
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
	fi;
	pending = nextInc;
	nextInc++;
	if :: pendReps & REP(0) -> grant[0] = grant[0] | B(pending) :: else -> skip fi;
	if :: pendReps & REP(1) -> grant[1] = grant[1] | B(pending) :: else -> skip fi
}

/* applyPutEnd: the pending incarnation becomes COMPLETE; the one it
 * supersedes (maybe in the other pool) gets delete tasks. */
inline applyPutEnd() {
	if :: complete != 0 -> createTasks(compReps, complete) :: else -> skip fi;
	complete = pending; compReps = pendReps;
	pending = 0; pendReps = 0;
	maxCompleted = complete
}

/* applyPutRevoke (discardAbandonedPuts): the pending incarnation is dropped;
 * its replicas may hold bytes, so they get tasks. */
inline applyPutRevoke() {
	createTasks(pendReps, pending);
	pending = 0; pendReps = 0
}

/* applyRemove / removeKey: logical delete + tasks, then Remove returns OK. */
inline applyRemove() {
	createTasks(compReps, complete);
	removed = removed | B(complete);
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
	x = tasks[0] | tasks[1];
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
	inv2_no_wrong_victim = !liveInFSM(h, i);
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

active proctype Client() {
end:
	do
	:: atomic { pending == 0 && nextInc <= NINC && (segMounted[0] || segMounted[1]) ->
		applyPutStart(); printf("STEP Client: PutStart inc %d replicas %d (grants issued)\n", pending, pendReps); checkInvariants() }
	:: WRITE(0, 1)
	:: WRITE(1, 1)
	:: WRITE(0, 2)
	:: WRITE(1, 2)
	:: WRITE(0, 3)
	:: WRITE(1, 3)
	/* the client ends its put once every replica answered OK */
	:: atomic { pending != 0 && ((pendReps & REP(0)) == 0 || (wok[0] & B(pending))) &&
	                            ((pendReps & REP(1)) == 0 || (wok[1] & B(pending))) ->
		printf("STEP Client: PutEnd inc %d (supersedes %d)\n", pending, complete); applyPutEnd(); checkInvariants() }
	/* or never ends it: the leader's discardAbandonedPuts revokes it */
	:: atomic { pending != 0 -> printf("STEP Leader: PutRevoke inc %d\n", pending); applyPutRevoke(); checkInvariants() }
	:: atomic { complete != 0 -> printf("STEP Client: Remove inc %d -> OK\n", complete); applyRemove(); checkInvariants() }
	od
}

/* The master log's own events: a leader change (EpochBegin: master epoch
 * +1, soft state gone) and acks whose outcome the holder never learned,
 * committed later. */
active proctype Leader() {
	bit stale;
end:
	do
	:: atomic { leadLeft > 0 -> leadLeft--; masterEpoch++; printf("STEP Leader: EpochBegin, master epoch %d\n", masterEpoch); checkInvariants() }
	:: atomic { pipe[0] != 0 -> applyAck(0, pipeEpoch[0], pipe[0], stale); pipe[0] = 0; checkInvariants() }
	:: atomic { pipe[1] != 0 -> applyAck(1, pipeEpoch[1], pipe[1], stale); pipe[1] = 0; checkInvariants() }
	od
}

/* One holder process and its GC worker, as steps of one proctype; each step
 * is atomic. A crash may come between any two steps. */
proctype Holder(bit h) {
	byte i, set;
	bit stale;
end:
	do
	/* ---- Service.mount ------------------------------------------------- */
	:: atomic { !hmounted[h] && mode[h] == IDLE ->
		applyMount(h);
		hmounted[h] = 1; hepoch[h] = segEpoch[h]; hmaster[h] = masterEpoch;
		needRec[h] = 1; /* replay after every mount */
		printf("STEP Holder %d: mount, mount epoch %d\n", h, hepoch[h]);
		checkInvariants() }

	/* ---- Service.reconcile: LiveRefs → NotLive (after a barrier) ------- */
	:: atomic { hmounted[h] && mode[h] == IDLE && needRec[h] ->
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
				:: idx[h].st[i] == ILIVE && !liveInFSM(h, i) && !olderTask(i) -> set = set | B(i)
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
