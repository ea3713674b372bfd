package master

import (
	"context"
	"sync"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/grant"
	"sexton/transport"
)

// One-commit puts (docs/DESIGN.md §8 "One-commit puts"): the leader hands
// out incarnations of a block it reserved through the log, with no commit
// per put, and a put commits once, after its bytes are written.

// incBlockCount is how many incarnations one reservation takes: one
// ReserveIncarnations entry per that many one-commit puts at most.
const incBlockCount = 4096

// incAllocator is the leader's in-memory cursor over its reserved blocks.
// A block belongs to the term that reserved it: a node that lost and won
// leadership, or a new leader, reserves its own and never hands out an
// incarnation another term may have handed out.
type incAllocator struct {
	mu   sync.Mutex
	term uint64
	cur  allocBlock
	// spare is a block reserved ahead of need, taken when cur runs out.
	spare allocBlock
	// reserving is closed when the reservation in flight ends; nil when
	// none is.
	reserving chan struct{}
	// lastUse is when an incarnation was last handed out: blocks are
	// reserved ahead only while one-commit puts are being made.
	lastUse time.Time
}

type allocBlock struct {
	cluster   uint64
	next, hi  uint64
	expires   time.Time
	available bool
}

// usable reports whether b can hand out an incarnation whose grants live
// ttl from now: grants never outlive their block.
func (b *allocBlock) usable(now time.Time, ttl time.Duration) bool {
	return b.available && b.next <= b.hi && !now.Add(ttl).After(b.expires)
}

// takeIncarnation hands out the next incarnation of this term's block
// above the key's newest one and the expiry of its grants, reserving a
// block first if none is usable. A block reserved now is above every
// incarnation that exists, so a key put through PutStart (whose
// incarnation is above the blocks reserved before it) gets a new block
// rather than a grant PutCommit would refuse.
func (n *Node) takeIncarnation(ctx context.Context, above api.ObjectIncarnation) (api.ObjectIncarnation, time.Time, error) {
	a := &n.incs
	ttl := n.cfg.CommitGrantTTL
	for {
		term := n.readyTerm.Load()
		if term == 0 {
			return api.ObjectIncarnation{}, time.Time{}, n.requireLeader()
		}
		now := time.Now()
		a.mu.Lock()
		if a.term != term {
			a.term, a.cur, a.spare = term, allocBlock{}, allocBlock{}
		}
		if a.cur.usable(now, ttl) && a.cur.hi <= above.Low {
			a.cur = allocBlock{} // every incarnation left is below the key's
		}
		if !a.cur.usable(now, ttl) && a.spare.usable(now, ttl) && a.spare.hi > above.Low {
			a.cur, a.spare = a.spare, allocBlock{}
		}
		if a.cur.usable(now, ttl) {
			if a.cur.next <= above.Low {
				a.cur.next = above.Low + 1
			}
			inc := api.ObjectIncarnation{High: a.cur.cluster, Low: a.cur.next}
			a.cur.next++
			a.lastUse = now
			// Reserve the next block while this one still has a quarter
			// of its incarnations or of its life left, so puts rarely wait
			// for a reservation.
			low := a.cur.hi+1-a.cur.next < incBlockCount/4 || a.cur.expires.Sub(now) < ttl+ttl/2
			if low && !a.spare.available && a.reserving == nil {
				a.reserving = make(chan struct{})
				go n.reserveBlock(term)
			}
			a.mu.Unlock()
			return inc, now.Add(ttl), nil
		}
		wait := a.reserving
		if wait == nil {
			wait = make(chan struct{})
			a.reserving = wait
			go n.reserveBlock(term)
		}
		a.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return api.ObjectIncarnation{}, time.Time{}, api.Errorf(api.CodeTimeout, "put grant: waiting for an incarnation block: %v", ctx.Err())
		case <-n.stopped:
			return api.ObjectIncarnation{}, time.Time{}, api.Errorf(api.CodeUnavailable, "master shutting down")
		}
		if err := n.requireLeader(); err != nil {
			return api.ObjectIncarnation{}, time.Time{}, err
		}
		a.mu.Lock()
		failed := !a.cur.usable(time.Now(), ttl) && !a.spare.usable(time.Now(), ttl) && a.reserving == nil
		a.mu.Unlock()
		if failed {
			// The reservation just made failed (its error is logged);
			// a caller retries rather than spin here.
			return api.ObjectIncarnation{}, time.Time{}, api.Errorf(api.CodeUnavailable, "put grant: no incarnation block could be reserved; retry")
		}
	}
}

// reserveBlock proposes a block for term and installs it (as cur if cur is
// used up, else as spare) unless the term changed meanwhile.
func (n *Node) reserveBlock(term uint64) {
	a := &n.incs
	ttl := n.cfg.CommitGrantTTL
	now := time.Now()
	expires := now.Add(2 * ttl)
	r, err := proposeFor[fsm.ReserveResult](n, &fsm.ReserveIncarnations{V: fsm.ReserveIncarnationsV1, Count: incBlockCount,
		Expires: expires.UnixNano(), Now: now.UnixNano()})
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.reserving)
	a.reserving = nil
	if err != nil {
		n.log.Warn("reserving an incarnation block failed", "error", err)
		return
	}
	if a.term != term || r.Lo > r.Hi {
		return
	}
	b := allocBlock{cluster: r.Cluster, next: r.Lo, hi: r.Hi, expires: time.Unix(0, r.Expires), available: true}
	if a.cur.usable(time.Now(), ttl) {
		a.spare = b
	} else {
		a.cur = b
	}
}

// expireIncBlocks proposes the leader's time once it passed a live
// block's expiry, so the fsm drops that block and reconcile answers name
// its uncommitted incarnations (a leader duty, every second).
func (n *Node) expireIncBlocks() {
	count, earliest := n.fsm.LiveBlocks()
	if count == 0 || time.Now().UnixNano() <= earliest {
		return
	}
	if _, err := n.propose(&fsm.ReserveIncarnations{V: fsm.ReserveIncarnationsV1}); err != nil {
		n.log.Warn("expiring incarnation blocks failed", "error", err)
	}
}

// handlePutGrant checks and places a LOCAL_DISK put like PutStart and
// answers an incarnation of the leader's block with a grant per replica;
// nothing is committed. A put with a DFS replica is refused: its space is
// allocated by PutStart.
func (n *Node) handlePutGrant(ctx context.Context, req *api.PutStartRequest) (*api.PutStartResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if err := n.checkPut(req); err != nil {
		return nil, err
	}
	if req.DFSReplicaNum != 0 {
		return nil, api.Errorf(api.CodeInvalidParams, "put grant: a put with a DFS replica uses PutStart and PutEnd")
	}
	if len(n.fsm.GrantKey()) != api.GrantKeyLen {
		return nil, api.Errorf(api.CodeUnavailable, "put grant: the cluster has no grant key yet")
	}
	now := time.Now()
	reps, err := n.placeReplicas(req, now, placementRand(now))
	if err != nil {
		return nil, err
	}
	inc, expires, err := n.takeIncarnation(ctx, n.fsm.NewestOf(req.Key))
	if err != nil {
		return nil, err
	}
	out := n.locations(reps)
	gk := n.fsm.GrantKey()
	for i := range out {
		g := grant.Sign(gk, api.WriteGrant{Segment: out[i].Segment, Key: req.Key, Incarnation: inc, Expires: expires.UnixNano(), Size: req.Size})
		out[i].Grant = &g
	}
	return &api.PutStartResponse{Incarnation: inc, Replicas: out}, nil
}

// handlePutCommit commits a granted, written put in one entry. Each
// replica must carry this cluster's grant for its segment, the key and
// the incarnation (its expiry is not checked here: the fsm refuses an
// incarnation whose block expired), so only segments the leader granted
// are recorded. It is an asynchronous handler answered from the fsm
// goroutine (proposeAsync): every put ends in one, so each goroutine and
// wake-up it saves is saved per put.
func (n *Node) handlePutCommit(req *api.PutCommitRequest, reply transport.Reply) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		reply(nil, err)
		return
	}
	item, err := n.commitItem(req)
	if err != nil {
		reply(nil, err)
		return
	}
	n.proposeAsync(&fsm.PutCommit{V: fsm.PutCommitV1, PutCommitItem: item, Session: req.Session},
		func(res any, err error) {
			if err == nil {
				_, err = answerOf[fsm.PutEndResult](n, fsm.CmdPutCommit, res)
			}
			if err != nil {
				reply(nil, err)
				return
			}
			reply(&api.Empty{}, nil)
		})
}

// commitItem checks a commit request and turns it into the fsm's item:
// each replica must carry this cluster's grant for its segment, the key
// and the incarnation. What it refuses depends on the request alone (and
// the cluster's grant key, which never changes), so a repeat of a batch
// proposes the same items.
func (n *Node) commitItem(req *api.PutCommitRequest) (fsm.PutCommitItem, error) {
	if err := api.ValidKey(req.Key); err != nil {
		return fsm.PutCommitItem{}, err
	}
	if len(req.Tenant) > api.MaxTenantLen || len(req.PutID) > api.MaxIDLen {
		return fsm.PutCommitItem{}, api.Errorf(api.CodeInvalidParams, "put commit: tenant of %d bytes or put id of %d bytes too long", len(req.Tenant), len(req.PutID))
	}
	if len(req.Replicas) == 0 || len(req.Replicas) > api.MaxReplicas {
		return fsm.PutCommitItem{}, api.Errorf(api.CodeInvalidParams, "put commit: %d replicas outside 1..%d", len(req.Replicas), api.MaxReplicas)
	}
	gk := n.fsm.GrantKey()
	reps := make([]api.ReplicaDescriptor, len(req.Replicas))
	for i, r := range req.Replicas {
		if r.Kind != api.ReplicaLocalDisk {
			return fsm.PutCommitItem{}, api.Errorf(api.CodeInvalidParams, "put commit: replica %d is not LOCAL_DISK", i)
		}
		if err := grant.Verify(gk, r.Grant, r.Segment, req.Key, req.Incarnation, req.Size, time.Unix(0, 0)); err != nil {
			return fsm.PutCommitItem{}, api.Errorf(api.CodeInvalidParams, "put commit: replica %d on %s: %v", i, r.Segment, err)
		}
		pool := r.Pool
		if seg, ok := n.fsm.Segment(r.Segment); ok {
			pool = seg.Pool
		}
		reps[i] = api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: r.Segment, Pool: pool}
	}
	return fsm.PutCommitItem{Key: req.Key, Incarnation: req.Incarnation, Tenant: req.Tenant, Size: req.Size, Replicas: reps,
		PutID: req.PutID, IfAbsent: req.IfAbsent}, nil
}

// handleBatchPutCommit commits many puts in one entry: items that fail
// commitItem are answered here and never proposed, the rest are one
// fsm.PutCommitBatch answered per item.
func (n *Node) handleBatchPutCommit(_ context.Context, req *api.BatchPutCommitRequest) (*api.BatchPutEndResponse, error) {
	out, err := n.openPutEndBatch(len(req.Items), req.Session)
	if err != nil {
		return nil, err
	}
	items := newBatchSubset[fsm.PutCommitItem](len(req.Items))
	for i := range req.Items {
		out.Results[i].Key = req.Items[i].Key
		it, err := n.commitItem(&req.Items[i])
		if err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		items.add(i, it)
	}
	return proposeEndBatch(n, items, &fsm.PutCommitBatch{V: fsm.PutCommitBatchV1, Items: items.items, Session: req.Session}, "put-commit batch", out)
}
