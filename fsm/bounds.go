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
// by Apply, not decode errors.
func checkBounds(cmd Command) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s v%d: %s", ErrCorruptCommand, cmd.Type(), versionOf(cmd), fmt.Sprintf(format, args...))
	}
	idLen := func(name, s string) error {
		if len(s) > api.MaxIDLen {
			return bad("%s of %d bytes exceeds %d", name, len(s), api.MaxIDLen)
		}
		return nil
	}
	keyLen := func(name, s string) error {
		if len(s) > api.MaxKeyLen {
			return bad("%s of %d bytes exceeds %d", name, len(s), api.MaxKeyLen)
		}
		return nil
	}
	first := func(errs ...error) error {
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	}
	sess := func(s api.Session) error { return idLen("session client id", s.ClientID) }
	switch c := cmd.(type) {
	case *EpochBegin:
		if n := len(c.GrantKey); n != 0 && n != api.GrantKeyLen {
			return bad("grant key of %d bytes, want %d", n, api.GrantKeyLen)
		}
		return first(idLen("leader id", c.LeaderID), idLen("leader address", c.LeaderAddr))
	case *MountLocalDisk:
		if len(c.Capabilities) > api.MaxCapabilities {
			return bad("%d capabilities exceed %d", len(c.Capabilities), api.MaxCapabilities)
		}
		for _, cp := range c.Capabilities {
			if err := idLen("capability", string(cp)); err != nil {
				return err
			}
		}
		return first(idLen("client id", c.ClientID), idLen("segment id", string(c.Segment)),
			idLen("pool", c.Pool), idLen("endpoint", c.Endpoint), idLen("process", c.Process))
	case *UnmountLocalDisk:
		return idLen("segment id", string(c.Segment))
	case *PutStart:
		return first(sess(c.Session), putStartBounded(bad, c.Key, c.Tenant, c.PutID, c.Replicas))
	case *PutStartBatch:
		if err := sess(c.Session); err != nil {
			return err
		}
		if len(c.Items) > MaxBatchPutItems {
			return bad("%d items exceed %d", len(c.Items), MaxBatchPutItems)
		}
		for _, it := range c.Items {
			if err := putStartBounded(bad, it.Key, it.Tenant, it.PutID, it.Replicas); err != nil {
				return err
			}
		}
		return nil
	case *PutEndBatch:
		if err := sess(c.Session); err != nil {
			return err
		}
		if len(c.Items) > MaxBatchPutItems {
			return bad("%d items exceed %d", len(c.Items), MaxBatchPutItems)
		}
		for _, it := range c.Items {
			if err := keyLen("key", it.Key); err != nil {
				return err
			}
		}
		return nil
	case *PutEnd:
		return first(sess(c.Session), keyLen("key", c.Key))
	case *PutRevoke:
		return first(sess(c.Session), keyLen("key", c.Key))
	case *Remove:
		if len(c.Keys) > api.MaxBatchKeys {
			return bad("%d keys exceed %d", len(c.Keys), api.MaxBatchKeys)
		}
		for _, k := range c.Keys {
			if err := keyLen("key", k); err != nil {
				return err
			}
		}
		if len(c.IfInc) != 0 && len(c.IfInc) != len(c.Keys) {
			return bad("%d expected incarnations for %d keys", len(c.IfInc), len(c.Keys))
		}
		return removeSpansBounded(bad, c, sess)
	case *Settings:
		return sess(c.Session)
	case *LocalDeleteAck:
		if len(c.Results) > MaxAckResults {
			return bad("%d results exceed %d", len(c.Results), MaxAckResults)
		}
		for _, r := range c.Results {
			if err := keyLen("result key", r.Key); err != nil {
				return err
			}
		}
		return idLen("segment id", string(c.Segment))
	case *RetireStorage:
		if len(c.Reason) > MaxReasonLen {
			return bad("reason of %d bytes exceeds %d", len(c.Reason), MaxReasonLen)
		}
		return first(idLen("segment id", string(c.Segment)), idLen("by", c.By))
	case *DropReplicas:
		if len(c.Refs) > api.MaxBatchKeys {
			return bad("%d refs exceed %d", len(c.Refs), api.MaxBatchKeys)
		}
		for _, r := range c.Refs {
			if err := keyLen("ref key", r.Key); err != nil {
				return err
			}
		}
		return idLen("segment id", string(c.Segment))
	case *DFSConfigure:
		return idLen("dfs allocator", c.Settings.Allocator)
	case *DFSTouch:
		if len(c.Refs) > api.MaxBatchKeys {
			return bad("%d refs exceed %d", len(c.Refs), api.MaxBatchKeys)
		}
		return entryRefsBounded(bad, c.Refs)
	case *DFSEvict:
		if len(c.Plan.Candidates) > dfsalloc.MaxPlanCandidates {
			return bad("%d candidates exceed %d", len(c.Plan.Candidates), dfsalloc.MaxPlanCandidates)
		}
		n := 0
		for _, cand := range c.Plan.Candidates {
			n += len(cand.Entries)
			if n > dfsalloc.MaxPlanEntries {
				return bad("plan entries exceed %d", dfsalloc.MaxPlanEntries)
			}
			if err := entryRefsBounded(bad, cand.Entries); err != nil {
				return err
			}
		}
		return idLen("dfs allocator", c.Plan.Allocator)
	case *DFSFileOp, *DFSSetMaxBuckets, *DFSMarkLost:
		return nil
	}
	return fmt.Errorf("%w: %T", ErrUnknownCommand, cmd)
}

// removeSpansBounded checks that a Remove's spans partition its keys and
// that a spanned Remove carries no entry-wide session.
func removeSpansBounded(bad func(string, ...any) error, c *Remove, sess func(api.Session) error) error {
	if err := sess(c.Session); err != nil {
		return err
	}
	if len(c.Spans) == 0 {
		return nil
	}
	if !c.Session.IsZero() {
		return bad("both spans and an entry-wide session")
	}
	if len(c.Spans) > api.MaxBatchKeys {
		return bad("%d spans exceed %d", len(c.Spans), api.MaxBatchKeys)
	}
	total := 0
	for i, sp := range c.Spans {
		if sp.N < 0 || sp.N > len(c.Keys) {
			return bad("span %d of %d keys", i, sp.N)
		}
		if err := sess(sp.Session); err != nil {
			return err
		}
		total += sp.N
	}
	if total != len(c.Keys) {
		return bad("spans cover %d keys of %d", total, len(c.Keys))
	}
	return nil
}

// entryRefsBounded checks the strings of DFS entry refs.
func entryRefsBounded(bad func(string, ...any) error, refs []dfsalloc.EntryRef) error {
	for _, r := range refs {
		switch {
		case len(r.Key) > api.MaxKeyLen:
			return bad("ref key of %d bytes exceeds %d", len(r.Key), api.MaxKeyLen)
		case len(r.Desc.Path) > MaxDFSPathLen:
			return bad("dfs path of %d bytes exceeds %d", len(r.Desc.Path), MaxDFSPathLen)
		case len(r.Desc.Allocator) > api.MaxIDLen:
			return bad("dfs allocator of %d bytes exceeds %d", len(r.Desc.Allocator), api.MaxIDLen)
		}
	}
	return nil
}

// putStartBounded checks the sizes of one PutStart (or PutStartBatch item).
func putStartBounded(bad func(string, ...any) error, key, tenant, putID string, rs []api.ReplicaDescriptor) error {
	if len(rs) > api.MaxReplicas {
		return bad("%d replicas exceed %d", len(rs), api.MaxReplicas)
	}
	if len(tenant) > api.MaxTenantLen {
		return bad("tenant of %d bytes exceeds %d", len(tenant), api.MaxTenantLen)
	}
	if len(key) > api.MaxKeyLen {
		return bad("key of %d bytes exceeds %d", len(key), api.MaxKeyLen)
	}
	if len(putID) > api.MaxIDLen {
		return bad("put id of %d bytes exceeds %d", len(putID), api.MaxIDLen)
	}
	for _, r := range rs {
		switch {
		case len(r.Segment) > api.MaxIDLen:
			return bad("replica segment of %d bytes exceeds %d", len(r.Segment), api.MaxIDLen)
		case len(r.Pool) > api.MaxIDLen:
			return bad("replica pool of %d bytes exceeds %d", len(r.Pool), api.MaxIDLen)
		case r.DFS != nil && len(r.DFS.Allocator) > api.MaxIDLen:
			return bad("dfs allocator of %d bytes exceeds %d", len(r.DFS.Allocator), api.MaxIDLen)
		case r.DFS != nil && len(r.DFS.Path) > api.MaxKeyLen:
			return bad("dfs path of %d bytes exceeds %d", len(r.DFS.Path), api.MaxKeyLen)
		}
	}
	return nil
}
