package api

import (
	"fmt"
	"strconv"
	"strings"
)

// ObjectIncarnation names one life of a key. High is the cluster id, Low the
// Raft index of the PutStart entry that created it. Both are decided by the
// FSM at apply time, so every master computes the same value. Every object
// of one PutStartBatch entry shares that entry's index: an incarnation only
// has to be unique and ordered per key (tasks are unique per segment, key
// and incarnation), and a batch holds each key at most once. The zero value
// is the legacy incarnation carried by data written before incarnations
// existed (a 1.0.0 snapshot, a legacy bucket .meta).
type ObjectIncarnation struct {
	High uint64 `msgpack:"h"`
	Low  uint64 `msgpack:"l"`
}

// IsZero reports whether this is the legacy incarnation.
func (i ObjectIncarnation) IsZero() bool { return i.High == 0 && i.Low == 0 }

// Less orders incarnations: within one cluster by Raft index, which is the
// order in which the PutStarts were applied.
func (i ObjectIncarnation) Less(o ObjectIncarnation) bool {
	if i.Low != o.Low {
		return i.Low < o.Low
	}
	return i.High < o.High
}

func (i ObjectIncarnation) String() string { return fmt.Sprintf("%016x:%d", i.High, i.Low) }

// ObjectRef names one incarnation of one key, as a holder reports what it
// stores during reconciliation.
type ObjectRef struct {
	Key         string            `msgpack:"k"`
	Incarnation ObjectIncarnation `msgpack:"i"`
}

// ParseIncarnation reads an incarnation as String prints it: the cluster
// id in 16 hex digits, a colon, the index in decimal.
func ParseIncarnation(s string) (ObjectIncarnation, error) {
	hi, lo, ok := strings.Cut(s, ":")
	if !ok || len(hi) != 16 {
		return ObjectIncarnation{}, Errorf(CodeInvalidParams, "incarnation %q is not HIGH:LOW (16 hex digits, a colon, a decimal index)", s)
	}
	h, err := strconv.ParseUint(hi, 16, 64)
	if err != nil {
		return ObjectIncarnation{}, Errorf(CodeInvalidParams, "incarnation %q: cluster id: %v", s, err)
	}
	l, err := strconv.ParseUint(lo, 10, 64)
	if err != nil {
		return ObjectIncarnation{}, Errorf(CodeInvalidParams, "incarnation %q: index: %v", s, err)
	}
	return ObjectIncarnation{High: h, Low: l}, nil
}

// IfIncMismatch checks the shape of a batch remove's expected
// incarnations against its keys: none (every remove unconditional) or
// one per key. It returns "" when they fit, else what is wrong, for the
// caller to wrap in its own error (the client, the master's handler and
// group commit, and the fsm's bounds all check it).
func IfIncMismatch(ifInc, keys int) string {
	if ifInc == 0 || ifInc == keys {
		return ""
	}
	return fmt.Sprintf("%d expected incarnations for %d keys (want none or one per key)", ifInc, keys)
}
