package fsm

import (
	"fmt"
	"github.com/vmihailenco/msgpack/v5"
	"reflect"
)

// commands is the one table of command types: everything the codec knows
// about a type byte. Adding a command is a body type (with its Type method
// and bounds function), one row here and one case in FSM.Apply; see
// DESIGN.md "How to add a command".
var commands = [...]*commandSpec{
	CmdEpochBegin:          spec[EpochBegin]("EpochBegin", EpochBeginV2, boundsEpochBegin, "grant_key"),
	CmdMountLocalDisk:      spec[MountLocalDisk]("MountLocalDisk", MountLocalDiskV2, boundsMountLocalDisk, "process", "marker"),
	CmdUnmountLocalDisk:    spec[UnmountLocalDisk]("UnmountLocalDisk", UnmountLocalDiskV1, boundsUnmountLocalDisk),
	CmdPutStart:            spec[PutStart]("PutStart", PutStartV2, boundsPutStart, "sess"),
	CmdPutEnd:              spec[PutEnd]("PutEnd", PutEndV2, boundsPutEnd, "sess"),
	CmdPutRevoke:           spec[PutRevoke]("PutRevoke", PutRevokeV2, boundsPutRevoke, "sess"),
	CmdRemove:              spec[Remove]("Remove", RemoveV2, boundsRemove, "if_inc", "spans", "sess").fast(decodeRemoveFast),
	CmdLocalDeleteAck:      spec[LocalDeleteAck]("LocalDeleteAck", LocalDeleteAckV1, boundsLocalDeleteAck).fast(decodeAckFast),
	CmdRetireStorage:       spec[RetireStorage]("RetireStorage", RetireStorageV1, boundsRetireStorage),
	CmdDropReplicas:        spec[DropReplicas]("DropReplicas", DropReplicasV1, boundsDropReplicas),
	CmdDFSConfigure:        spec[DFSConfigure]("DFSConfigure", DFSConfigureV1, boundsDFSConfigure),
	CmdDFSTouch:            spec[DFSTouch]("DFSTouch", DFSTouchV1, boundsDFSTouch),
	CmdDFSEvict:            spec[DFSEvict]("DFSEvict", DFSEvictV1, boundsDFSEvict),
	CmdDFSFileOp:           spec[DFSFileOp]("DFSFileOp", DFSFileOpV1, nil),
	CmdDFSSetMaxBuckets:    spec[DFSSetMaxBuckets]("DFSSetMaxBuckets", DFSSetMaxBucketsV1, nil),
	CmdDFSMarkLost:         spec[DFSMarkLost]("DFSMarkLost", DFSMarkLostV1, nil),
	CmdPutStartBatch:       spec[PutStartBatch]("PutStartBatch", PutStartBatchV2, boundsPutStartBatch, "sess"),
	CmdPutEndBatch:         spec[PutEndBatch]("PutEndBatch", PutEndBatchV2, boundsPutEndBatch, "sess"),
	CmdSettings:            spec[Settings]("Settings", SettingsV2, boundsSettings, "legacy"),
	CmdRebuildBegin:        spec[RebuildBegin]("RebuildBegin", RebuildBeginV1, boundsRebuildBegin),
	CmdRebuildAdopt:        spec[RebuildAdopt]("RebuildAdopt", RebuildAdoptV1, boundsRebuildAdopt),
	CmdJobStart:            spec[JobStart]("JobStart", JobStartV1, boundsJobStart),
	CmdJobAdvance:          spec[JobAdvance]("JobAdvance", JobAdvanceV1, boundsJobAdvance),
	CmdJobCancel:           spec[JobCancel]("JobCancel", JobCancelV1, boundsJobCancel),
	CmdDropTombstoned:      spec[DropTombstoned]("DropTombstoned", DropTombstonedV1, boundsDropTombstoned),
	CmdRebuildClose:        spec[RebuildClose]("RebuildClose", RebuildCloseV1, nil),
	CmdDFSMarked:           spec[DFSMarked]("DFSMarked", DFSMarkedV1, boundsDFSMarked),
	CmdReserveIncarnations: spec[ReserveIncarnations]("ReserveIncarnations", ReserveIncarnationsV1, nil),
	CmdPutCommit:           spec[PutCommit]("PutCommit", PutCommitV1, boundsPutCommit).fast(decodePutCommitFast).fastEncode(encodePutCommitFast),
	CmdPutCommitBatch:      spec[PutCommitBatch]("PutCommitBatch", PutCommitBatchV1, boundsPutCommitBatch),
}

// commandSpec describes one command type.
type commandSpec struct {
	name string
	// current is the newest schema version, the one Encode writes for a V
	// of zero; every version from 1 up to it decodes, any other is refused.
	current uint8
	// v2Fields are the body fields version 2 added: a version 1 body
	// carrying one of them is refused, never read with the field dropped.
	v2Fields []string
	// newBody returns an empty body for the reflection decoder.
	newBody func() Command
	// decodeFast, if set, replaces reflection for a hot entry.
	decodeFast func(*fieldDecoder) (Command, error)
	// encodeFast, if set, replaces reflection for a hot entry; it writes
	// exactly the bytes reflection writes.
	encodeFast func(*msgpack.Encoder, Command) error
	// bounds refuses a body whose sizes exceed the limits (nil: nothing
	// in the body can be too large).
	bounds func(Command, bounder) error
	// ptr is *T, the only Go type a body of this command may have.
	ptr reflect.Type
	// vField and nowField index the body's "v" and "now" fields, which
	// every body has (checked when the table is built).
	vField, nowField int
}

// spec builds a row for body type T. The version field must be T's first
// field (V uint8 `msgpack:"v"`, so the encoder writes it first and Decode
// can read it without decoding the rest) and T must have the leader's
// time (Now int64 `msgpack:"now"`); a body without them stops the program
// at start-up rather than misbehave on its first entry.
func spec[T any, P interface {
	*T
	Command
}](name string, current uint8, bounds func(P, bounder) error, v2Fields ...string) *commandSpec {
	rt := reflect.TypeFor[T]()
	field := func(goName, wire string, kind reflect.Kind) int {
		f, ok := rt.FieldByName(goName)
		if !ok || len(f.Index) != 1 || f.Type.Kind() != kind || f.Tag.Get("msgpack") != wire {
			panic(fmt.Sprintf("fsm: command %s: body %s needs a field %s %s `msgpack:%q`", name, rt, goName, kind, wire))
		}
		return f.Index[0]
	}
	s := &commandSpec{
		name:     name,
		current:  current,
		v2Fields: v2Fields,
		newBody:  func() Command { return P(new(T)) },
		ptr:      reflect.TypeFor[P](),
		vField:   field("V", "v", reflect.Uint8),
		nowField: field("Now", "now", reflect.Int64),
	}
	if s.vField != 0 {
		panic(fmt.Sprintf("fsm: command %s: V must be the first field of %s", name, rt))
	}
	if bounds != nil {
		s.bounds = func(c Command, b bounder) error { return bounds(c.(P), b) }
	}
	return s
}

func (s *commandSpec) fast(dec func(*fieldDecoder) (Command, error)) *commandSpec {
	s.decodeFast = dec
	return s
}

func (s *commandSpec) fastEncode(enc func(*msgpack.Encoder, Command) error) *commandSpec {
	s.encodeFast = enc
	return s
}

// specOf returns the row of type t, or nil for a type byte no command has.
func specOf(t CommandType) *commandSpec {
	if int(t) < len(commands) {
		return commands[t]
	}
	return nil
}

// specOfBody returns the row of cmd's type, refusing a body whose Go type
// is not the one the table has for its type byte.
func specOfBody(cmd Command) (*commandSpec, error) {
	s := specOf(cmd.Type())
	if s == nil || reflect.TypeOf(cmd) != s.ptr {
		return nil, fmt.Errorf("%w: %T", ErrUnknownCommand, cmd)
	}
	return s, nil
}

// version returns the body's "v".
func (s *commandSpec) version(c Command) uint8 {
	return uint8(reflect.ValueOf(c).Elem().Field(s.vField).Uint())
}

// leaderTime returns the body's "now".
func (s *commandSpec) leaderTime(c Command) int64 {
	return reflect.ValueOf(c).Elem().Field(s.nowField).Int()
}

// withVersion returns a copy of c with its version set to v.
func (s *commandSpec) withVersion(c Command, v uint8) Command {
	cp := reflect.New(reflect.TypeOf(c).Elem())
	cp.Elem().Set(reflect.ValueOf(c).Elem())
	cp.Elem().Field(s.vField).SetUint(uint64(v))
	return cp.Interface().(Command)
}

// versionOf returns cmd's "v" (zero for a body not in the table).
func versionOf(cmd Command) uint8 {
	if s, err := specOfBody(cmd); err == nil {
		return s.version(cmd)
	}
	return 0
}
