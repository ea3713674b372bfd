package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sexton/internal/ctxsleep"
	"sexton/internal/holderwire"

	"sexton/api"
)

// PutOptions shape a put.
type PutOptions struct {
	Tenant string
	// Replicas is the number of LOCAL_DISK replicas (1 if both it and
	// DFSReplicas are 0).
	Replicas int
	// DFSReplicas is 0 or 1.
	DFSReplicas int
	// IfAbsent fails with OBJECT_ALREADY_EXISTS instead of overwriting.
	IfAbsent bool
	// Pool restricts placement to one pool.
	Pool string
	// Prefer names where the first replica should go when one of them can
	// take it: a segment id, a holder endpoint, or a host ("host" or
	// "host:port", the port being ignored). Segments named exactly win
	// over segments on a named host; with none live with room, the put is
	// placed as if nothing were preferred. Mooncake's preferred_segment;
	// at most 16 entries.
	Prefer []string
}

// startRequest is the PutStart (and PutGrant) body of a put of size bytes.
func (opt PutOptions) startRequest(key string, size int) api.PutStartRequest {
	return api.PutStartRequest{Key: key, Tenant: opt.Tenant, Size: int64(size), ReplicaNum: opt.Replicas,
		DFSReplicaNum: opt.DFSReplicas, IfAbsent: opt.IfAbsent, Pool: opt.Pool, Prefer: opt.Prefer}
}

// Put stores value under key and returns the new incarnation once the
// leader has committed it as the key's newest value.
//
// A LOCAL_DISK write that a holder fails (it crashed, is full, or refused
// the grant) revokes the attempt — so the master queues deletes for any
// bytes that did land — and places the put again away from that holder, up
// to Config.PutAttempts times. A failed DFS write is not placed again.
//
// A put of LOCAL_DISK replicas only costs one Raft commit: PutGrant, the
// holder writes, then PutCommit. A commit refused because its incarnation
// can no longer commit (INCARNATION_STALE: the key moved past it, or its
// block expired while the writes ran) asks for a new grant and writes
// again. A master that does not know PutGrant gets PutStart and PutEnd.
func (c *Client) Put(ctx context.Context, key string, value []byte, opt PutOptions) (api.ObjectIncarnation, error) {
	return c.put(ctx, key, valueParts{value}, opt)
}

// PutFrom is Put of a value split across the caller's slices: the value
// is parts one after the other, and each holder write sends them from
// where they are, one after the other after the request's head, without
// joining them into one slice (a DFS replica, written through
// Config.DFS, gets them joined). The slices must not change until PutFrom
// returns.
func (c *Client) PutFrom(ctx context.Context, key string, parts [][]byte, opt PutOptions) (api.ObjectIncarnation, error) {
	return c.put(ctx, key, valueParts(parts), opt)
}

func (c *Client) put(ctx context.Context, key string, value valueParts, opt PutOptions) (api.ObjectIncarnation, error) {
	req := opt.startRequest(key, value.size())
	if opt.DFSReplicas == 0 && !c.noPutGrant.Load() {
		inc, err := c.putOneCommit(ctx, key, value, req)
		if !unknownMethod(err) {
			return inc, err
		}
		c.noPutGrant.Store(true)
	}
	return c.putTwoCommits(ctx, key, value, req)
}

// valueParts is a put's value: its slices one after the other.
type valueParts [][]byte

func (v valueParts) size() int {
	n := 0
	for _, p := range v {
		n += len(p)
	}
	return n
}

// joined is the value in one slice (the one slice itself when it is one).
func (v valueParts) joined() []byte {
	if len(v) == 1 {
		return v[0]
	}
	return slices.Concat(v...)
}

// body is the HolderWrite body of req with this value.
func (v valueParts) body(req *api.HolderWriteRequest) holderwire.Body {
	if len(v) == 1 {
		req.Value = v[0]
		return holderwire.Body{Req: req}
	}
	return holderwire.Body{Req: req, Parts: v}
}

// maxStaleCommits bounds how often one put is granted and written again
// after INCARNATION_STALE: each time, another put of the key committed a
// newer incarnation first, or the writes outlived the grant's block.
const maxStaleCommits = 8

// putOneCommit is a LOCAL_DISK put through PutGrant and PutCommit. A
// grant that is not committed needs no revoke: its bytes are reclaimed by
// the holders' reconcile once its block expired.
func (c *Client) putOneCommit(ctx context.Context, key string, value valueParts, req api.PutStartRequest) (api.ObjectIncarnation, error) {
	var lastWriteErr error
	stale := 0
	for attempt := 0; attempt < c.cfg.PutAttempts; {
		var g api.PutStartResponse
		if err := c.masters.Call(ctx, api.MethodPutGrant, &req, &g); err != nil {
			if err := c.placeAgain(ctx, api.MethodPutGrant, err, lastWriteErr, &req, attempt); err != nil {
				return api.ObjectIncarnation{}, err
			}
			attempt++
			continue
		}
		failedSeg, err := c.writeReplicas(ctx, key, req.Tenant, g, value)
		if err != nil {
			if failedSeg == "" || !replaceable(err) {
				return api.ObjectIncarnation{}, err
			}
			lastWriteErr = err
			req.Exclude = append(req.Exclude, failedSeg)
			attempt++
			continue
		}
		cr := api.PutCommitRequest{Key: key, Tenant: req.Tenant, Size: req.Size, IfAbsent: req.IfAbsent, PutID: req.PutID,
			Incarnation: g.Incarnation, Replicas: g.Replicas}
		err = c.mutate(ctx, api.MethodPutCommit, &cr, func(s api.Session) { cr.Session = s }, nil)
		if err == nil {
			return g.Incarnation, nil
		}
		if api.CodeOf(err) == api.CodeIncarnationStale && stale < maxStaleCommits {
			stale++
			continue
		}
		return api.ObjectIncarnation{}, fmt.Errorf("PutCommit %s: %w", g.Incarnation, err)
	}
	return api.ObjectIncarnation{}, fmt.Errorf("put %s: every placement failed (%d attempts): %w", key, c.cfg.PutAttempts, lastWriteErr)
}

// unknownMethod reports whether err is a master's refusal of a method it
// does not know (a build older than PutGrant).
func unknownMethod(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.CodeInvalidParams && strings.Contains(e.Message, "unknown method")
}

// putTwoCommits is a put through PutStart and PutEnd: every put with a DFS
// replica, and every put against a master without PutGrant.
func (c *Client) putTwoCommits(ctx context.Context, key string, value valueParts, req api.PutStartRequest) (api.ObjectIncarnation, error) {
	var lastWriteErr error
	for attempt := 0; attempt < c.cfg.PutAttempts; attempt++ {
		var start api.PutStartResponse
		if err := c.mutate(ctx, api.MethodPutStart, &req, func(s api.Session) { req.Session = s }, &start); err != nil {
			if err := c.placeAgain(ctx, api.MethodPutStart, err, lastWriteErr, &req, attempt); err != nil {
				return api.ObjectIncarnation{}, err
			}
			continue
		}
		failedSeg, err := c.writeReplicas(ctx, key, req.Tenant, start, value)
		if err != nil {
			c.revoke(ctx, key, start.Incarnation)
			if failedSeg == "" || !replaceable(err) {
				return api.ObjectIncarnation{}, err
			}
			lastWriteErr = err
			req.Exclude = append(req.Exclude, failedSeg)
			continue
		}
		end := api.PutEndRequest{Key: key, Incarnation: start.Incarnation}
		if err := c.mutate(ctx, api.MethodPutEnd, &end, func(s api.Session) { end.Session = s }, nil); err != nil {
			return api.ObjectIncarnation{}, fmt.Errorf("PutEnd %s: %w", start.Incarnation, err)
		}
		return start.Incarnation, nil
	}
	return api.ObjectIncarnation{}, fmt.Errorf("put %s: every placement failed (%d attempts): %w", key, c.cfg.PutAttempts, lastWriteErr)
}

// placeAgain answers a PutStart or PutGrant (method) that failed with err:
// nil to place the put again, or the error that ends it. A first placement
// that fails ends the put. One that fails after a write failure
// (lastWriteErr) moved the put away from its holder may find nothing left
// once the failed holders are excluded (a one-holder cluster, or every
// holder tried): the failure may have been passing (a holder's GC replaced
// the bucket a write was queued for), so, while attempts remain, it clears
// req.Exclude, waits a moment and tries them again.
func (c *Client) placeAgain(ctx context.Context, method string, err, lastWriteErr error, req *api.PutStartRequest, attempt int) error {
	if lastWriteErr == nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if noPlacement(err) && attempt+1 < c.cfg.PutAttempts {
		req.Exclude = nil
		if !ctxsleep.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
		return nil
	}
	return fmt.Errorf("%s away from %v: %w (after: %v)", method, req.Exclude, err, lastWriteErr)
}

// writeReplicas writes value to every replica of a started put. On a
// LOCAL_DISK failure it names the segment that failed.
func (c *Client) writeReplicas(ctx context.Context, key, tenant string, start api.PutStartResponse, value valueParts) (api.SegmentID, error) {
	for _, r := range start.Replicas {
		switch r.Kind {
		case api.ReplicaLocalDisk:
			if err := c.writeHolder(ctx, key, tenant, start.Incarnation, r, value); err != nil {
				return r.Segment, fmt.Errorf("write replica on segment %s: %w", r.Segment, err)
			}
		case api.ReplicaDFS:
			if c.cfg.DFS == nil {
				return "", api.Errorf(api.CodeInvalidParams, "the master placed a DFS replica but this client has no DFS data path")
			}
			if r.DFS == nil {
				return "", api.Errorf(api.CodeCorrupt, "DFS replica without a descriptor")
			}
			if err := c.cfg.DFS.Write(ctx, key, tenant, start.Incarnation, r, value.joined()); err != nil {
				return "", fmt.Errorf("write DFS replica %s: %w", r.DFS.Path, err)
			}
		}
	}
	return "", nil
}

func (c *Client) writeHolder(ctx context.Context, key, tenant string, inc api.ObjectIncarnation, r api.ReplicaLocation, value valueParts) error {
	if r.Endpoint == "" {
		return api.Errorf(api.CodeUnavailable, "segment %s has no mounted holder", r.Segment)
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	// The value goes to the socket from the caller's slices after a short
	// msgpack head that carries the grant (holderwire.Body).
	err := c.holders.Call(hctx, r.Endpoint, api.MethodHolderWrite,
		value.body(&api.HolderWriteRequest{Key: key, Tenant: tenant, Incarnation: inc, Grant: r.Grant}), nil)
	traceHolderWrite(ctx, r, value.size(), start, err)
	return err
}

// replaceable reports whether a failed holder write is worth placing the
// put elsewhere: the holder is gone, slow, full or refused this grant
// (remounted, fenced). A malformed request would fail anywhere.
func replaceable(err error) bool {
	var e *api.Error
	if !errors.As(err, &e) {
		return true // a connection error
	}
	return slices.Contains([]api.Code{api.CodeUnavailable, api.CodeTimeout, api.CodeNoSpace, api.CodeGrantRefused, api.CodeInternal}, e.Code)
}

// noPlacement reports whether PutStart found no holder to place on.
func noPlacement(err error) bool {
	c := api.CodeOf(err)
	return c == api.CodeNoSpace || c == api.CodeUnavailable
}

// revoke abandons a started put; best effort: if it fails the master's
// discard of abandoned puts revokes it later.
func (c *Client) revoke(ctx context.Context, key string, inc api.ObjectIncarnation) {
	rev := api.PutRevokeRequest{Key: key, Incarnation: inc}
	_ = c.mutate(context.WithoutCancel(ctx), api.MethodPutRevoke, &rev, func(s api.Session) { rev.Session = s }, nil)
}
