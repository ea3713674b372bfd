package snapshot

import (
	"fmt"

	"sexton/api"
)

// Strict decoders for the records other than Object. They are written by
// reflection (msgpack.Encoder) and read here so that every array length is
// bounded before its slice is allocated and unknown fields are refused.

// maxAuditEntries bounds State.Audit; a longer audit log would not fit one
// chunk anyway.
const maxAuditEntries = 1 << 16

// maxReasonLen bounds free text in an audit entry.
const maxReasonLen = 4096

// decodeSegment decodes a segment record of format, admitting the fields
// that format has.
//
// A 1.0.0 segment has fewer fields: it comes with mount epoch zero, no
// capabilities (so no delete tasks until the holder remounts and
// advertises them), not retired.
func decodeSegment(r *mpReader, s *Segment, format string) error {
	rec, v100 := "segment", format == Format100
	if v100 {
		rec = "segment (1.0.0)"
		*s = Segment{}
	}
	return r.eachField(rec, func(name []byte) (err error) {
		if v100 && !segmentFields100[string(name)] {
			return errUnknownField(rec, name)
		}
		var str string
		switch string(name) {
		case "id":
			str, err = r.str("segment id", api.MaxIDLen)
			s.ID = api.SegmentID(str)
		case "client":
			s.ClientID, err = r.str("segment client", api.MaxIDLen)
		case "pool":
			s.Pool, err = r.str("segment pool", api.MaxIDLen)
		case "cap":
			s.Capacity, err = r.int("segment capacity")
		case "caps":
			s.Capabilities, err = decodeCapabilities(r)
		case "ep":
			s.Endpoint, err = r.str("segment endpoint", api.MaxIDLen)
		case "epoch":
			s.MountEpoch, err = r.uint("segment mount epoch")
		case "mounted":
			s.Mounted, err = r.bool("segment mounted")
		case "retired":
			s.Retired, err = r.bool("segment retired")
		case "process":
			if !atLeast120(format) {
				return errNewerField(rec, name, format, Format120)
			}
			s.Process, err = r.str("segment process", api.MaxIDLen)
		case "rebuild_member":
			if !atLeast140(format) {
				return errNewerField(rec, name, format, Format140)
			}
			s.RebuildMember, err = r.bool("segment rebuild_member")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

// errNewerField refuses a field that format does not have because a later
// format (since) added it: reading on without it would drop what the
// writer recorded.
func errNewerField(record string, name []byte, format, since string) error {
	return fmt.Errorf("%w: %s: unknown field %q in a format %s snapshot (the field is format %s's)", ErrCorrupt, record, name, format, since)
}

func decodeCapabilities(r *mpReader) ([]api.Capability, error) {
	return arrayOf(r, "segment capabilities", api.MaxCapabilities, "segment", "capabilities", func(r *mpReader, c *api.Capability) (err error) {
		*c, err = as[api.Capability](r.str("segment capability", api.MaxIDLen))
		return err
	})
}

// appendTask appends t's msgpack encoding to b: the bytes of msgpack's
// reflection encoding of the struct (fields in declaration order, the
// tenant left out when empty), by hand because a master with a backlog
// writes as many task records as objects, and through reflection they
// were two thirds of such a snapshot's encoding time
// (TestFastTaskEncodingMatchesReflection, BenchmarkSnapshotWriteBacklog).
func appendTask(b []byte, t *Task) []byte {
	if t.Tenant == "" {
		b = append(b, 0x85)
	} else {
		b = append(b, 0x86)
	}
	b = appendStr(b, "id")
	b = appendUint(b, t.ID)
	b = appendStr(b, "seg")
	b = appendStr(b, string(t.Segment))
	b = appendStr(b, "k")
	b = appendStr(b, t.Key)
	if t.Tenant != "" {
		b = appendStr(b, "t")
		b = appendStr(b, t.Tenant)
	}
	b = appendStr(b, "i")
	b = appendIncarnation(b, t.Incarnation)
	b = appendStr(b, "c")
	return appendInt(b, t.Created)
}

func decodeTask(r *mpReader, t *Task) error {
	const rec = "task"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "id":
			t.ID, err = r.uint("task id")
		case "seg":
			t.Segment, err = as[api.SegmentID](r.strShared("task segment", api.MaxIDLen))
		case "k":
			t.Key, err = r.str("task key", api.MaxKeyLen)
		case "t":
			t.Tenant, err = r.strShared("task tenant", api.MaxTenantLen)
		case "i":
			err = decodeIncarnation(r, &t.Incarnation)
		case "c":
			t.Created, err = r.int("task created")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

// decodeState decodes the state record of format, admitting the fields
// that format has.
func decodeState(r *mpReader, s *State, format string) error {
	const rec = "state"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "master_epoch":
			s.MasterEpoch, err = r.uint("state master_epoch")
		case "next_task_id":
			s.NextTaskID, err = r.uint("state next_task_id")
		case "leader":
			s.LeaderID, err = r.str("state leader", api.MaxIDLen)
		case "leader_rpc":
			s.LeaderAddr, err = r.str("state leader_rpc", api.MaxIDLen)
		case "last_now":
			s.LastNow, err = r.int("state last_now")
		case "audit":
			s.Audit, err = decodeAudit(r)
		case "settings", "grant_key", "session_clock", "inc_base", "rebuild_cluster":
			if !atLeast120(format) {
				return errNewerField(rec, name, format, Format120)
			}
			switch string(name) {
			case "settings":
				s.Settings, err = optional(r, decodeSettings)
			case "grant_key":
				s.GrantKey, err = r.binBytes("state grant_key", api.GrantKeyLen)
			case "inc_base":
				s.IncBase, err = r.uint("state inc_base")
			case "rebuild_cluster":
				s.RebuildCluster, err = r.uint("state rebuild_cluster")
			default:
				s.SessionClock, err = r.int("state session_clock")
			}
		case "legacy_settings", "rebuild_closed", "rebuild_removed", "rebuild_overflow", "inc_blocks", "rebuild_base":
			if !atLeast140(format) {
				return errNewerField(rec, name, format, Format140)
			}
			switch string(name) {
			case "legacy_settings":
				s.Legacy, err = optional(r, decodeSettings)
			case "rebuild_closed":
				s.RebuildClosed, err = r.bool("state rebuild_closed")
			case "rebuild_removed":
				s.RebuildRemoved, err = r.binBytes("state rebuild_removed", MaxRebuildRemoved*RebuildRemovedDigestLen)
			case "inc_blocks":
				s.IncBlocks, err = decodeIncBlocks(r)
			case "rebuild_base":
				s.RebuildBase, err = r.uint("state rebuild_base")
			default:
				s.RebuildOverflow, err = r.bool("state rebuild_overflow")
			}
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeSettings(r *mpReader, s *api.Settings) error {
	const rec = "settings"
	return r.eachField(rec, func(name []byte) error {
		// Every field is an integer under its key in api.SettingsTable.
		sp, ok := api.SettingByKey(string(name))
		if !ok {
			return errUnknownField(rec, name)
		}
		v, err := r.int("settings " + sp.Key)
		if err != nil {
			return err
		}
		sp.Set(s, v)
		return nil
	})
}

// Bounds of session records (section sessions).
const (
	// maxErrCodeLen and maxErrMessageLen bound a stored error.
	maxErrCodeLen    = 64
	maxErrMessageLen = 2048
	// maxSessionItems bounds the per-key or per-item parts of one stored
	// result: a Remove span has at most api.MaxBatchKeys keys.
	maxSessionItems = api.MaxBatchKeys
)

func decodeSessionRecord(r *mpReader, s *SessionRecord) error {
	const rec = "session"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "client":
			s.ClientID, err = r.str("session client", api.MaxIDLen)
		case "floor":
			s.Floor, err = r.uint("session floor")
		case "active":
			s.LastActive, err = r.int("session active")
		case "result":
			s.Result, err = optional(r, decodeSessionResult)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeSessionResult(r *mpReader, s *SessionResult) error {
	const rec = "session result"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "seq":
			s.Seq, err = r.uint("session result seq")
		case "kind":
			s.Kind, err = r.uint8("session result kind")
		case "err":
			s.Err, err = optional(r, decodeAPIError)
		case "inc":
			err = decodeIncarnation(r, &s.Inc)
		case "n":
			s.Count, err = r.int("session result n")
		case "reps":
			s.Replicas, err = decodeReplicas(r, nil)
		case "items":
			s.Items, err = decodeSessionItems(r)
		case "settings":
			s.Settings, err = optional(r, decodeSettings)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeSessionItems(r *mpReader) ([]SessionItem, error) {
	return arrayOf(r, "session result items", maxSessionItems, "session result", "items", decodeSessionItem)
}

func decodeSessionItem(r *mpReader, it *SessionItem) error {
	const rec = "session item"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "i":
			it.I, err = r.int("session item i")
		case "tasks":
			it.Tasks, err = r.int("session item tasks")
		case "err":
			it.Err, err = optional(r, decodeAPIError)
		case "reps":
			it.Replicas, err = decodeReplicas(r, nil)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeAPIError(r *mpReader, e *api.Error) error {
	const rec = "error"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "code":
			e.Code, err = as[api.Code](r.strShared("error code", maxErrCodeLen))
		case "msg":
			e.Message, err = r.str("error msg", maxErrMessageLen)
		case "leader":
			e.Leader, err = r.str("error leader", api.MaxIDLen)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeIncBlocks(r *mpReader) ([]IncBlock, error) {
	return arrayOf(r, "state inc_blocks", MaxIncBlocks, "state", "incarnation blocks", decodeIncBlock)
}

func decodeIncBlock(r *mpReader, b *IncBlock) error {
	const rec = "incarnation block"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "lo":
			b.Lo, err = r.uint("incarnation block lo")
		case "hi":
			b.Hi, err = r.uint("incarnation block hi")
		case "exp":
			b.Expires, err = r.int("incarnation block exp")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeAudit(r *mpReader) ([]AuditEntry, error) {
	return arrayOf(r, "state audit", maxAuditEntries, "state", "audit entries", decodeAuditEntry)
}

func decodeAuditEntry(r *mpReader, a *AuditEntry) error {
	const rec = "audit entry"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "index":
			a.Index, err = r.uint("audit index")
		case "seg":
			a.Segment, err = as[api.SegmentID](r.str("audit segment", api.MaxIDLen))
		case "by":
			a.By, err = r.str("audit by", api.MaxIDLen)
		case "reason":
			a.Reason, err = r.str("audit reason", maxReasonLen)
		case "dropped":
			var d int64
			d, err = r.int("audit dropped")
			a.DroppedTasks = int(d)
		case "at":
			a.At, err = r.int("audit at")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

// maxFormatLen bounds the header's format string.
const maxFormatLen = 32

// decodeHeader decodes the header strictly. A header of an unknown format
// is refused as ErrUnknownFormat even if it carries fields this build does
// not know, so the operator is told the real problem.
func decodeHeader(b []byte) (Header, error) {
	var h Header
	format, err := peekFormat(b)
	if err != nil {
		return h, err
	}
	if _, ok := formatSpecs[format]; !ok {
		return h, fmt.Errorf("%w: %q (this build reads %s, %s, %s, %s and %s)", ErrUnknownFormat, format, Format140, Format130, Format120, Format110, Format100)
	}
	r := &mpReader{b: b}
	const rec = "header"
	err = r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "format":
			h.Format, err = r.str("header format", maxFormatLen)
		case "cluster":
			h.ClusterID, err = r.uint("header cluster")
		case "index":
			h.LastIndex, err = r.uint("header index")
		case "term":
			h.LastTerm, err = r.uint("header term")
		case "created":
			h.Created, err = r.int("header created")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
	if err != nil {
		return h, err
	}
	if r.remaining() != 0 {
		return h, fmt.Errorf("%w: %d bytes after the header record", ErrCorrupt, r.remaining())
	}
	return h, nil
}

// peekFormat finds the header's "format" field without judging the rest.
func peekFormat(b []byte) (string, error) {
	r := &mpReader{b: b}
	n, err := r.recordMap("header")
	if err != nil {
		return "", err
	}
	for i := 0; i < n; i++ {
		name, err := r.strBytes("header field name")
		if err != nil {
			return "", err
		}
		if string(name) == "format" {
			return r.str("header format", maxFormatLen)
		}
		if err := r.skip(); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: header names no format", ErrCorrupt)
}
