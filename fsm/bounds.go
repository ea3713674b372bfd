package fsm

import (
	"fmt"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// Limits for command fields that api/limits.go does not name.
const (
	// MaxReasonLen bounds RetireStorage's free-text reason.
	MaxReasonLen = 1024
	// MaxAckResults bounds the results of one LocalDeleteAck (a holder acks
	// what it fetched, at most api.MaxFetchLimit per fetch, possibly several
	// fetches at once).
	MaxAckResults = api.MaxBatchKeys
	// MaxDFSPathLen bounds a DFS descriptor's path.
	MaxDFSPathLen = api.MaxKeyLen
)

// checkBounds refuses a body whose sizes exceed the limits, so no field read
// from a log entry can make Apply allocate or loop without bound. Semantic
// problems (an empty id, an unknown segment) are business rejections decided
// by Apply, not decode errors. Each command's check is the bounds function
// of its row in the command table.
func checkBounds(cmd Command) error {
	s, err := specOfBody(cmd)
	if err != nil {
		return err
	}
	if s.bounds == nil {
		return nil
	}
	return s.bounds(cmd, bounder{t: cmd.Type(), v: s.version(cmd)})
}

// bounder words a bounds refusal for one body.
type bounder struct {
	t CommandType
	v uint8
}

func (b bounder) bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s v%d: %s", ErrCorruptCommand, b.t, b.v, fmt.Sprintf(format, args...))
}

func (b bounder) idLen(name, s string) error {
	if len(s) > api.MaxIDLen {
		return b.bad("%s of %d bytes exceeds %d", name, len(s), api.MaxIDLen)
	}
	return nil
}

func (b bounder) keyLen(name, s string) error {
	if len(s) > api.MaxKeyLen {
		return b.bad("%s of %d bytes exceeds %d", name, len(s), api.MaxKeyLen)
	}
	return nil
}

func (b bounder) session(s api.Session) error { return b.idLen("session client id", s.ClientID) }

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func boundsEpochBegin(c *EpochBegin, b bounder) error {
	if n := len(c.GrantKey); n != 0 && n != api.GrantKeyLen {
		return b.bad("grant key of %d bytes, want %d", n, api.GrantKeyLen)
	}
	return firstErr(b.idLen("leader id", c.LeaderID), b.idLen("leader address", c.LeaderAddr))
}

func boundsMountLocalDisk(c *MountLocalDisk, b bounder) error {
	if len(c.Capabilities) > api.MaxCapabilities {
		return b.bad("%d capabilities exceed %d", len(c.Capabilities), api.MaxCapabilities)
	}
	for _, cp := range c.Capabilities {
		if err := b.idLen("capability", string(cp)); err != nil {
			return err
		}
	}
	return firstErr(b.idLen("client id", c.ClientID), b.idLen("segment id", string(c.Segment)),
		b.idLen("pool", c.Pool), b.idLen("endpoint", c.Endpoint), b.idLen("process", c.Process))
}

func boundsUnmountLocalDisk(c *UnmountLocalDisk, b bounder) error {
	return b.idLen("segment id", string(c.Segment))
}

func boundsPutStart(c *PutStart, b bounder) error {
	return firstErr(b.session(c.Session), putStartBounded(b, c.Key, c.Tenant, c.PutID, c.Replicas))
}

func boundsPutStartBatch(c *PutStartBatch, b bounder) error {
	return boundsBatch(b, c.Session, c.Items, func(it PutStartItem) error {
		return putStartBounded(b, it.Key, it.Tenant, it.PutID, it.Replicas)
	})
}

func boundsPutEndBatch(c *PutEndBatch, b bounder) error {
	return boundsBatch(b, c.Session, c.Items, func(it PutEndItem) error { return b.keyLen("key", it.Key) })
}

// boundsBatch checks a batch of puts: its session, at most
// MaxBatchPutItems items, and each item.
func boundsBatch[T any](b bounder, s api.Session, items []T, item func(T) error) error {
	if err := b.session(s); err != nil {
		return err
	}
	if len(items) > MaxBatchPutItems {
		return b.bad("%d items exceed %d", len(items), MaxBatchPutItems)
	}
	for _, it := range items {
		if err := item(it); err != nil {
			return err
		}
	}
	return nil
}

func boundsPutEnd(c *PutEnd, b bounder) error {
	return firstErr(b.session(c.Session), b.keyLen("key", c.Key))
}

func boundsPutRevoke(c *PutRevoke, b bounder) error {
	return firstErr(b.session(c.Session), b.keyLen("key", c.Key))
}

func boundsRemove(c *Remove, b bounder) error {
	if len(c.Keys) > api.MaxBatchKeys {
		return b.bad("%d keys exceed %d", len(c.Keys), api.MaxBatchKeys)
	}
	for _, k := range c.Keys {
		if err := b.keyLen("key", k); err != nil {
			return err
		}
	}
	if m := api.IfIncMismatch(len(c.IfInc), len(c.Keys)); m != "" {
		return b.bad("%s", m)
	}
	return removeSpansBounded(b, c)
}

func boundsSettings(c *Settings, b bounder) error { return b.session(c.Session) }

func boundsLocalDeleteAck(c *LocalDeleteAck, b bounder) error {
	if len(c.Results) > MaxAckResults {
		return b.bad("%d results exceed %d", len(c.Results), MaxAckResults)
	}
	for _, r := range c.Results {
		if err := b.keyLen("result key", r.Key); err != nil {
			return err
		}
	}
	return b.idLen("segment id", string(c.Segment))
}

func boundsRetireStorage(c *RetireStorage, b bounder) error {
	if len(c.Reason) > MaxReasonLen {
		return b.bad("reason of %d bytes exceeds %d", len(c.Reason), MaxReasonLen)
	}
	return firstErr(b.idLen("segment id", string(c.Segment)), b.idLen("by", c.By))
}

func boundsDropReplicas(c *DropReplicas, b bounder) error {
	return boundsSegmentRefs(b, c.Segment, c.Refs)
}

// boundsSegmentRefs bounds a batch of one segment's refs (DropReplicas,
// DropTombstoned): at most api.MaxBatchKeys, each key and the segment id
// within their lengths.
func boundsSegmentRefs(b bounder, seg api.SegmentID, refs []api.ObjectRef) error {
	if len(refs) > api.MaxBatchKeys {
		return b.bad("%d refs exceed %d", len(refs), api.MaxBatchKeys)
	}
	for _, r := range refs {
		if err := b.keyLen("ref key", r.Key); err != nil {
			return err
		}
	}
	return b.idLen("segment id", string(seg))
}

func boundsDFSConfigure(c *DFSConfigure, b bounder) error {
	return b.idLen("dfs allocator", c.Settings.Allocator)
}

func boundsDFSTouch(c *DFSTouch, b bounder) error {
	if len(c.Refs) > api.MaxBatchKeys {
		return b.bad("%d refs exceed %d", len(c.Refs), api.MaxBatchKeys)
	}
	return entryRefsBounded(b, c.Refs)
}

func boundsDFSEvict(c *DFSEvict, b bounder) error {
	if len(c.Plan.Candidates) > dfsalloc.MaxPlanCandidates {
		return b.bad("%d candidates exceed %d", len(c.Plan.Candidates), dfsalloc.MaxPlanCandidates)
	}
	n := 0
	for _, cand := range c.Plan.Candidates {
		n += len(cand.Entries)
		if n > dfsalloc.MaxPlanEntries {
			return b.bad("plan entries exceed %d", dfsalloc.MaxPlanEntries)
		}
		if err := entryRefsBounded(b, cand.Entries); err != nil {
			return err
		}
	}
	return b.idLen("dfs allocator", c.Plan.Allocator)
}

// removeSpansBounded checks that a Remove's spans partition its keys and
// that a spanned Remove carries no entry-wide session.
func removeSpansBounded(b bounder, c *Remove) error {
	if err := b.session(c.Session); err != nil {
		return err
	}
	if len(c.Spans) == 0 {
		return nil
	}
	if !c.Session.IsZero() {
		return b.bad("both spans and an entry-wide session")
	}
	if len(c.Spans) > api.MaxBatchKeys {
		return b.bad("%d spans exceed %d", len(c.Spans), api.MaxBatchKeys)
	}
	total := 0
	for i, sp := range c.Spans {
		if sp.N < 0 || sp.N > len(c.Keys) {
			return b.bad("span %d of %d keys", i, sp.N)
		}
		if err := b.session(sp.Session); err != nil {
			return err
		}
		total += sp.N
	}
	if total != len(c.Keys) {
		return b.bad("spans cover %d keys of %d", total, len(c.Keys))
	}
	return nil
}

// entryRefsBounded checks the strings of DFS entry refs.
func entryRefsBounded(b bounder, refs []dfsalloc.EntryRef) error {
	for _, r := range refs {
		switch {
		case len(r.Key) > api.MaxKeyLen:
			return b.bad("ref key of %d bytes exceeds %d", len(r.Key), api.MaxKeyLen)
		case len(r.Desc.Path) > MaxDFSPathLen:
			return b.bad("dfs path of %d bytes exceeds %d", len(r.Desc.Path), MaxDFSPathLen)
		case len(r.Desc.Allocator) > api.MaxIDLen:
			return b.bad("dfs allocator of %d bytes exceeds %d", len(r.Desc.Allocator), api.MaxIDLen)
		}
	}
	return nil
}

// putStartBounded checks the sizes of one PutStart (or PutStartBatch item).
func putStartBounded(b bounder, key, tenant, putID string, rs []api.ReplicaDescriptor) error {
	if len(rs) > api.MaxReplicas {
		return b.bad("%d replicas exceed %d", len(rs), api.MaxReplicas)
	}
	if len(tenant) > api.MaxTenantLen {
		return b.bad("tenant of %d bytes exceeds %d", len(tenant), api.MaxTenantLen)
	}
	if len(key) > api.MaxKeyLen {
		return b.bad("key of %d bytes exceeds %d", len(key), api.MaxKeyLen)
	}
	if len(putID) > api.MaxIDLen {
		return b.bad("put id of %d bytes exceeds %d", len(putID), api.MaxIDLen)
	}
	for _, r := range rs {
		switch {
		case len(r.Segment) > api.MaxIDLen:
			return b.bad("replica segment of %d bytes exceeds %d", len(r.Segment), api.MaxIDLen)
		case len(r.Pool) > api.MaxIDLen:
			return b.bad("replica pool of %d bytes exceeds %d", len(r.Pool), api.MaxIDLen)
		case r.DFS != nil && len(r.DFS.Allocator) > api.MaxIDLen:
			return b.bad("dfs allocator of %d bytes exceeds %d", len(r.DFS.Allocator), api.MaxIDLen)
		case r.DFS != nil && len(r.DFS.Path) > api.MaxKeyLen:
			return b.bad("dfs path of %d bytes exceeds %d", len(r.DFS.Path), api.MaxKeyLen)
		}
	}
	return nil
}
