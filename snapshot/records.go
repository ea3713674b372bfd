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

func decodeSegment(r *mpReader, s *Segment) error {
	const rec = "segment"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		var str string
		switch string(name) {
		case "id":
			if err = seen.add(0, rec, "id"); err == nil {
				str, err = r.str("segment id", api.MaxIDLen)
				s.ID = api.SegmentID(str)
			}
		case "client":
			if err = seen.add(1, rec, "client"); err == nil {
				s.ClientID, err = r.str("segment client", api.MaxIDLen)
			}
		case "pool":
			if err = seen.add(2, rec, "pool"); err == nil {
				s.Pool, err = r.str("segment pool", api.MaxIDLen)
			}
		case "cap":
			if err = seen.add(3, rec, "cap"); err == nil {
				s.Capacity, err = r.int("segment capacity")
			}
		case "caps":
			if err = seen.add(4, rec, "caps"); err == nil {
				s.Capabilities, err = decodeCapabilities(r)
			}
		case "ep":
			if err = seen.add(5, rec, "ep"); err == nil {
				s.Endpoint, err = r.str("segment endpoint", api.MaxIDLen)
			}
		case "epoch":
			if err = seen.add(6, rec, "epoch"); err == nil {
				s.MountEpoch, err = r.uint("segment mount epoch")
			}
		case "mounted":
			if err = seen.add(7, rec, "mounted"); err == nil {
				s.Mounted, err = r.bool("segment mounted")
			}
		case "retired":
			if err = seen.add(8, rec, "retired"); err == nil {
				s.Retired, err = r.bool("segment retired")
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeCapabilities(r *mpReader) ([]api.Capability, error) {
	n, err := r.arrayLen("segment capabilities")
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxCapabilities {
		return nil, fmt.Errorf("%w: segment has %d capabilities, more than %d", ErrTooLarge, n, api.MaxCapabilities)
	}
	caps := make([]api.Capability, n)
	for i := range caps {
		c, err := r.str("segment capability", api.MaxIDLen)
		if err != nil {
			return nil, err
		}
		caps[i] = api.Capability(c)
	}
	return caps, nil
}

func decodeTask(r *mpReader, t *Task) error {
	const rec = "task"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "id":
			if err = seen.add(0, rec, "id"); err == nil {
				t.ID, err = r.uint("task id")
			}
		case "seg":
			if err = seen.add(1, rec, "seg"); err == nil {
				var s string
				s, err = r.strShared("task segment", api.MaxIDLen)
				t.Segment = api.SegmentID(s)
			}
		case "k":
			if err = seen.add(2, rec, "k"); err == nil {
				t.Key, err = r.str("task key", api.MaxKeyLen)
			}
		case "t":
			if err = seen.add(3, rec, "t"); err == nil {
				t.Tenant, err = r.strShared("task tenant", api.MaxTenantLen)
			}
		case "i":
			if err = seen.add(4, rec, "i"); err == nil {
				err = decodeIncarnation(r, &t.Incarnation)
			}
		case "c":
			if err = seen.add(5, rec, "c"); err == nil {
				t.Created, err = r.int("task created")
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeState(r *mpReader, s *State) error {
	const rec = "state"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "master_epoch":
			if err = seen.add(0, rec, "master_epoch"); err == nil {
				s.MasterEpoch, err = r.uint("state master_epoch")
			}
		case "next_task_id":
			if err = seen.add(1, rec, "next_task_id"); err == nil {
				s.NextTaskID, err = r.uint("state next_task_id")
			}
		case "leader":
			if err = seen.add(2, rec, "leader"); err == nil {
				s.LeaderID, err = r.str("state leader", api.MaxIDLen)
			}
		case "leader_rpc":
			if err = seen.add(3, rec, "leader_rpc"); err == nil {
				s.LeaderAddr, err = r.str("state leader_rpc", api.MaxIDLen)
			}
		case "last_now":
			if err = seen.add(4, rec, "last_now"); err == nil {
				s.LastNow, err = r.int("state last_now")
			}
		case "audit":
			if err = seen.add(5, rec, "audit"); err == nil {
				s.Audit, err = decodeAudit(r)
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeAudit(r *mpReader) ([]AuditEntry, error) {
	n, err := r.arrayLen("state audit")
	if err != nil || n < 0 {
		return nil, err
	}
	if n > maxAuditEntries {
		return nil, fmt.Errorf("%w: state has %d audit entries, more than %d", ErrTooLarge, n, maxAuditEntries)
	}
	// Every entry is a map of at least one byte; the array length is already
	// bounded by the chunk, so this allocation is too.
	out := make([]AuditEntry, n)
	for i := range out {
		if err := decodeAuditEntry(r, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeAuditEntry(r *mpReader, a *AuditEntry) error {
	const rec = "audit entry"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "index":
			if err = seen.add(0, rec, "index"); err == nil {
				a.Index, err = r.uint("audit index")
			}
		case "seg":
			if err = seen.add(1, rec, "seg"); err == nil {
				var s string
				s, err = r.str("audit segment", api.MaxIDLen)
				a.Segment = api.SegmentID(s)
			}
		case "by":
			if err = seen.add(2, rec, "by"); err == nil {
				a.By, err = r.str("audit by", api.MaxIDLen)
			}
		case "reason":
			if err = seen.add(3, rec, "reason"); err == nil {
				a.Reason, err = r.str("audit reason", maxReasonLen)
			}
		case "dropped":
			if err = seen.add(4, rec, "dropped"); err == nil {
				var d int64
				d, err = r.int("audit dropped")
				a.DroppedTasks = int(d)
			}
		case "at":
			if err = seen.add(5, rec, "at"); err == nil {
				a.At, err = r.int("audit at")
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
		return h, fmt.Errorf("%w: %q (this build reads %s and %s)", ErrUnknownFormat, format, Format110, Format100)
	}
	r := &mpReader{b: b}
	const rec = "header"
	n, err := r.recordMap(rec)
	if err != nil {
		return h, err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return h, err
		}
		switch string(name) {
		case "format":
			if err = seen.add(0, rec, "format"); err == nil {
				h.Format, err = r.str("header format", maxFormatLen)
			}
		case "cluster":
			if err = seen.add(1, rec, "cluster"); err == nil {
				h.ClusterID, err = r.uint("header cluster")
			}
		case "index":
			if err = seen.add(2, rec, "index"); err == nil {
				h.LastIndex, err = r.uint("header index")
			}
		case "term":
			if err = seen.add(3, rec, "term"); err == nil {
				h.LastTerm, err = r.uint("header term")
			}
		case "created":
			if err = seen.add(4, rec, "created"); err == nil {
				h.Created, err = r.int("header created")
			}
		default:
			return h, errUnknownField(rec, name)
		}
		if err != nil {
			return h, err
		}
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
		if err := r.skip(0); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: header names no format", ErrCorrupt)
}
