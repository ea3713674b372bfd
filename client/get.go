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
	var lastErr error
	for attempt := 0; attempt < c.cfg.ReadAttempts; attempt++ {
		var g api.GetResponse
		if err := c.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g); err != nil {
			return nil, api.ObjectInfo{}, err
		}
		v, gone, err := c.readReplicas(ctx, g.Object)
		if err == nil {
			return v, g.Object, nil
		}
		lastErr = err
		if !gone {
			return nil, g.Object, err
		}
	}
	return nil, api.ObjectInfo{}, api.Errorf(api.CodeUnavailable, "get %s: the replicas kept losing the incarnation the master named (%d attempts): %v", key, c.cfg.ReadAttempts, lastErr)
}

// readReplicas returns the value from the first replica that has it. gone
// reports that some replica answered that it no longer holds the
// incarnation, which is worth asking the master again about.
func (c *Client) readReplicas(ctx context.Context, obj api.ObjectInfo) (value []byte, gone bool, err error) {
	return c.readReplicasInto(ctx, obj, nil)
}

// readReplicasInto is readReplicas reading into buf when buf is not nil
// (the caller checked it holds obj.Size bytes): a holder's answer is
// decoded straight into it, a DFS read copied.
func (c *Client) readReplicasInto(ctx context.Context, obj api.ObjectInfo, buf []byte) (value []byte, gone bool, err error) {
	var errs []string
	var only error
	for _, r := range c.readOrder(obj.Replicas) {
		var v []byte
		var err error
		switch {
		case r.Kind == api.ReplicaDFS && c.cfg.DFS != nil:
			v, err = c.cfg.DFS.Read(ctx, r)
			if err == nil && buf != nil && len(v) <= len(buf) {
				v = buf[:copy(buf, v)]
			}
		case r.Kind == api.ReplicaDFS:
			err = api.Errorf(api.CodeInvalidParams, "DFS replica, but this client has no DFS data path")
		case r.Endpoint == "":
			err = api.Errorf(api.CodeUnavailable, "segment %s: no holder mounted", r.Segment)
		default:
			var resp api.HolderReadResponse
			if buf != nil {
				// The decoder fills a []byte field's own array when it is
				// large enough: the value lands in buf.
				resp.Value = buf[:0]
			}
			hctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
			err = c.holders.Call(hctx, r.Endpoint, api.MethodHolderRead, &api.HolderReadRequest{Key: obj.Key, Incarnation: obj.Incarnation}, &resp)
			cancel()
			v = resp.Value
		}
		if err == nil && int64(len(v)) != obj.Size {
			err = api.Errorf(api.CodeCorrupt, "replica returned %d bytes, object has %d", len(v), obj.Size)
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
