package client

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"sexton/api"
)

// Get reads the key's newest value. It never reports a key absent while
// the key holds a value: when the replicas no longer have the incarnation
// the master named (an overwrite or a remove completed after the master
// answered, and the holders already tombstoned it), it asks the master
// again, and answers with what the master says then.
func (c *Client) Get(ctx context.Context, key string) ([]byte, api.ObjectInfo, error) {
	var v []byte
	obj, err := c.getOne(ctx, key, func(obj api.ObjectInfo) (gone bool, err error) {
		v, gone, err = c.readReplicas(ctx, obj)
		return gone, err
	})
	if err != nil {
		v = nil
	}
	return v, obj, err
}

// getOne asks the master where the key's newest value is and reads it
// with read, asking again while read reports its replicas gone (Get's
// loop). It returns the object read, or the object and read's error, or
// the master's error.
func (c *Client) getOne(ctx context.Context, key string, read func(api.ObjectInfo) (gone bool, err error)) (api.ObjectInfo, error) {
	var lastErr error
	for attempt := 0; attempt < c.cfg.ReadAttempts; attempt++ {
		var g api.GetResponse
		if err := c.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g); err != nil {
			return api.ObjectInfo{}, err
		}
		gone, err := read(g.Object)
		if err == nil {
			return g.Object, nil
		}
		lastErr = err
		if !gone {
			return g.Object, err
		}
	}
	return api.ObjectInfo{}, api.Errorf(api.CodeUnavailable, "get %s: the replicas kept losing the incarnation the master named (%d attempts): %v", key, c.cfg.ReadAttempts, lastErr)
}

// readReplicas returns the value from the first replica that has it. gone
// reports that some replica answered that it no longer holds the
// incarnation, which is worth asking the master again about.
func (c *Client) readReplicas(ctx context.Context, obj api.ObjectInfo) (value []byte, gone bool, err error) {
	return c.readReplicasInto(ctx, obj, nil, nil)
}

// readReplicasInto is readReplicas reading into buf when buf is not nil
// (the caller checked it holds obj.Size bytes): a holder's answer is
// decoded straight into it, a DFS read copied. With ranges (checked to lie
// inside the value) only those bytes are kept, each in its range's Buf,
// and the value returned is nil.
func (c *Client) readReplicasInto(ctx context.Context, obj api.ObjectInfo, buf []byte, ranges []ByteRange) (value []byte, gone bool, err error) {
	var errs []string
	var only error
	for _, r := range c.readOrder(obj.Replicas) {
		var v []byte
		var n int64 // bytes the replica answered
		var err error
		switch {
		case r.Kind == api.ReplicaDFS && c.cfg.DFS != nil:
			v, err = c.cfg.DFS.Read(ctx, r)
			n = int64(len(v))
			switch {
			case err != nil:
			case ranges != nil:
				if n == obj.Size {
					copyRanges(ranges, v)
				}
				v = nil
			case buf != nil && len(v) <= len(buf):
				v = buf[:copy(buf, v)]
			}
		case r.Kind == api.ReplicaDFS:
			err = api.Errorf(api.CodeInvalidParams, "DFS replica, but this client has no DFS data path")
		case r.Endpoint == "":
			err = api.Errorf(api.CodeUnavailable, "segment %s: no holder mounted", r.Segment)
		default:
			var resp api.HolderReadResponse
			var into any = &resp
			if ranges != nil {
				a := &rangesAnswer{ranges: ranges, size: obj.Size}
				into = a
			} else if buf != nil {
				// The decoder fills a []byte field's own array when it is
				// large enough: the value lands in buf.
				resp.Value = buf[:0]
			}
			hctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
			err = c.holders.Call(hctx, r.Endpoint, api.MethodHolderRead, &api.HolderReadRequest{Key: obj.Key, Incarnation: obj.Incarnation}, into)
			cancel()
			v, n = resp.Value, int64(len(resp.Value))
			if a, ok := into.(*rangesAnswer); ok {
				n = a.n
			}
		}
		if err == nil && n != obj.Size {
			err = api.Errorf(api.CodeCorrupt, "replica returned %d bytes, object has %d", n, obj.Size)
		}
		if err == nil {
			return v, false, nil
		}
		if api.CodeOf(err) == api.CodeObjectNotFound {
			gone = true
		}
		only = err
		errs = append(errs, fmt.Sprintf("%s: %v", replicaName(r), err))
	}
	if len(errs) == 1 && api.CodeOf(only) == api.CodeDFSMismatch {
		return nil, false, only // the one replica is refused: say why
	}
	return nil, gone, api.Errorf(api.CodeUnavailable, "no replica of %s (%s) could be read: %s", obj.Key, obj.Incarnation, strings.Join(errs, "; "))
}

// readOrder is replicas in the order reads try them: Config.ReadPrefer's
// exact names first, then its hosts, each group in the master's order.
func (c *Client) readOrder(replicas []api.ReplicaLocation) []api.ReplicaLocation {
	if len(c.cfg.ReadPrefer) == 0 || len(replicas) < 2 {
		return replicas
	}
	rank := func(r api.ReplicaLocation) int {
		switch {
		case r.Kind != api.ReplicaLocalDisk:
			return 2
		case slices.ContainsFunc(c.cfg.ReadPrefer, func(p string) bool { return p == string(r.Segment) || (r.Endpoint != "" && p == r.Endpoint) }):
			return 0
		case r.Endpoint != "" && slices.ContainsFunc(c.cfg.ReadPrefer, func(p string) bool { return hostOf(p) == hostOf(r.Endpoint) }):
			return 1
		}
		return 2
	}
	out := slices.Clone(replicas)
	slices.SortStableFunc(out, func(a, b api.ReplicaLocation) int { return rank(a) - rank(b) })
	return out
}

// hostOf is the host of "host:port", or the string itself when it has no port.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

func replicaName(r api.ReplicaLocation) string {
	if r.Kind == api.ReplicaDFS {
		return "DFS"
	}
	if r.Endpoint != "" {
		return r.Endpoint
	}
	return "segment " + string(r.Segment)
}
