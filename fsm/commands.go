package fsm

import (
	"fmt"
	"github.com/vmihailenco/msgpack/v5"
	"reflect"
)

// commands is the one table of command types: everything the codec knows
// about a type byte and the one place Apply finds what to do with it. Adding a
// command is a body type (with its Type and leaderNow methods, its bounds
// function and its apply function) and one row here; see
// DESIGN.md "How to add a command".
var commands = [...]*commandSpec{
	CmdEpochBegin:          row(EpochBeginV2, boundsEpochBegin, anyIndex((*state).applyEpochBegin), "grant_key"),
	CmdMountLocalDisk:      row(MountLocalDiskV2, boundsMountLocalDisk, anyIndex((*state).applyMount), "process", "marker"),
	CmdUnmountLocalDisk:    row(UnmountLocalDiskV1, boundsUnmountLocalDisk, anyIndex((*state).applyUnmount)),
	CmdPutStart:            row(PutStartV2, boundsPutStart, (*state).applyPutStartSessioned, "sess"),
	CmdPutEnd:              row(PutEndV2, boundsPutEnd, anyIndex((*state).applyPutEndSessioned), "sess"),
	CmdPutRevoke:           row(PutRevokeV2, boundsPutRevoke, anyIndex((*state).applyPutRevokeSessioned), "sess"),
	CmdRemove:              row(RemoveV2, boundsRemove, anyIndex((*state).applyRemove), "if_inc", "spans", "sess").fast(decodeRemoveFast),
	CmdLocalDeleteAck:      row(LocalDeleteAckV1, boundsLocalDeleteAck, anyIndex((*state).applyAck)).fast(decodeAckFast),
	CmdRetireStorage:       row(RetireStorageV1, boundsRetireStorage, (*state).applyRetire),
	CmdDropReplicas:        row(DropReplicasV1, boundsDropReplicas, anyIndex((*state).applyDropReplicas)),
	CmdDFSConfigure:        row(DFSConfigureV1, boundsDFSConfigure, anyIndex((*state).applyDFSConfigure)),
	CmdDFSTouch:            row(DFSTouchV1, boundsDFSTouch, anyIndex((*state).applyDFSTouch)),
	CmdDFSEvict:            row(DFSEvictV1, boundsDFSEvict, anyIndex((*state).applyDFSEvict)),
	CmdDFSFileOp:           row(DFSFileOpV1, nil, anyIndex((*state).applyDFSFileOp)),
	CmdDFSSetMaxBuckets:    row(DFSSetMaxBucketsV1, nil, anyIndex((*state).applyDFSSetMaxBuckets)),
	CmdDFSMarkLost:         row(DFSMarkLostV1, nil, anyIndex((*state).applyDFSMarkLost)),
	CmdPutStartBatch:       row(PutStartBatchV2, boundsPutStartBatch, (*state).applyPutStartBatchSessioned, "sess"),
	CmdPutEndBatch:         row(PutEndBatchV2, boundsPutEndBatch, anyIndex((*state).applyPutEndBatchSessioned), "sess"),
	CmdSettings:            row(SettingsV2, boundsSettings, anyIndex((*state).applySettingsSessioned), "legacy"),
	CmdRebuildBegin:        row(RebuildBeginV1, boundsRebuildBegin, anyIndex((*state).applyRebuildBegin)),
	CmdRebuildAdopt:        row(RebuildAdoptV1, boundsRebuildAdopt, anyIndex((*state).applyRebuildAdopt)),
	CmdJobStart:            row(JobStartV1, boundsJobStart, (*state).applyJobStartSessioned),
	CmdJobAdvance:          row(JobAdvanceV1, boundsJobAdvance, anyIndex((*state).applyJobAdvance)),
	CmdJobCancel:           row(JobCancelV1, boundsJobCancel, anyIndex((*state).applyJobCancelSessioned)),
	CmdDropTombstoned:      row(DropTombstonedV1, boundsDropTombstoned, anyIndex((*state).applyDropTombstoned)),
	CmdRebuildClose:        row(RebuildCloseV1, nil, anyIndex((*state).applyRebuildClose)),
	CmdDFSMarked:           row(DFSMarkedV1, boundsDFSMarked, anyIndex((*state).applyDFSMarked)),
	CmdReserveIncarnations: row(ReserveIncarnationsV1, nil, (*state).applyReserve),
	CmdPutCommit:           row(PutCommitV1, boundsPutCommit, anyIndex((*state).applyPutCommitSessioned)).fast(decodePutCommitFast).fastEncode(encodePutCommitFast),
	CmdPutCommitBatch:      row(PutCommitBatchV1, boundsPutCommitBatch, anyIndex((*state).applyPutCommitBatchSessioned)),
}

// The methods every body of the table has: its type byte and where its
// leader time is.
func (*EpochBegin) Type() CommandType            { return CmdEpochBegin }
func (c *EpochBegin) leaderNow() *int64          { return &c.Now }
func (*MountLocalDisk) Type() CommandType        { return CmdMountLocalDisk }
func (c *MountLocalDisk) leaderNow() *int64      { return &c.Now }
func (*UnmountLocalDisk) Type() CommandType      { return CmdUnmountLocalDisk }
func (c *UnmountLocalDisk) leaderNow() *int64    { return &c.Now }
func (*PutStart) Type() CommandType              { return CmdPutStart }
func (c *PutStart) leaderNow() *int64            { return &c.Now }
func (*PutEnd) Type() CommandType                { return CmdPutEnd }
func (c *PutEnd) leaderNow() *int64              { return &c.Now }
func (*PutRevoke) Type() CommandType             { return CmdPutRevoke }
func (c *PutRevoke) leaderNow() *int64           { return &c.Now }
func (*Remove) Type() CommandType                { return CmdRemove }
func (c *Remove) leaderNow() *int64              { return &c.Now }
func (*LocalDeleteAck) Type() CommandType        { return CmdLocalDeleteAck }
func (c *LocalDeleteAck) leaderNow() *int64      { return &c.Now }
func (*RetireStorage) Type() CommandType         { return CmdRetireStorage }
func (c *RetireStorage) leaderNow() *int64       { return &c.Now }
func (*DropReplicas) Type() CommandType          { return CmdDropReplicas }
func (c *DropReplicas) leaderNow() *int64        { return &c.Now }
func (*DFSConfigure) Type() CommandType          { return CmdDFSConfigure }
func (c *DFSConfigure) leaderNow() *int64        { return &c.Now }
func (*DFSTouch) Type() CommandType              { return CmdDFSTouch }
func (c *DFSTouch) leaderNow() *int64            { return &c.Now }
func (*DFSEvict) Type() CommandType              { return CmdDFSEvict }
func (c *DFSEvict) leaderNow() *int64            { return &c.Now }
func (*DFSFileOp) Type() CommandType             { return CmdDFSFileOp }
func (c *DFSFileOp) leaderNow() *int64           { return &c.Now }
func (*DFSSetMaxBuckets) Type() CommandType      { return CmdDFSSetMaxBuckets }
func (c *DFSSetMaxBuckets) leaderNow() *int64    { return &c.Now }
func (*DFSMarkLost) Type() CommandType           { return CmdDFSMarkLost }
func (c *DFSMarkLost) leaderNow() *int64         { return &c.Now }
func (*PutStartBatch) Type() CommandType         { return CmdPutStartBatch }
func (c *PutStartBatch) leaderNow() *int64       { return &c.Now }
func (*PutEndBatch) Type() CommandType           { return CmdPutEndBatch }
func (c *PutEndBatch) leaderNow() *int64         { return &c.Now }
func (*Settings) Type() CommandType              { return CmdSettings }
func (c *Settings) leaderNow() *int64            { return &c.Now }
func (*RebuildBegin) Type() CommandType          { return CmdRebuildBegin }
func (c *RebuildBegin) leaderNow() *int64        { return &c.Now }
func (*RebuildAdopt) Type() CommandType          { return CmdRebuildAdopt }
func (c *RebuildAdopt) leaderNow() *int64        { return &c.Now }
func (*JobStart) Type() CommandType              { return CmdJobStart }
func (c *JobStart) leaderNow() *int64            { return &c.Now }
func (*JobAdvance) Type() CommandType            { return CmdJobAdvance }
func (c *JobAdvance) leaderNow() *int64          { return &c.Now }
func (*JobCancel) Type() CommandType             { return CmdJobCancel }
func (c *JobCancel) leaderNow() *int64           { return &c.Now }
func (*DropTombstoned) Type() CommandType        { return CmdDropTombstoned }
func (c *DropTombstoned) leaderNow() *int64      { return &c.Now }
func (*RebuildClose) Type() CommandType          { return CmdRebuildClose }
func (c *RebuildClose) leaderNow() *int64        { return &c.Now }
func (*DFSMarked) Type() CommandType             { return CmdDFSMarked }
func (c *DFSMarked) leaderNow() *int64           { return &c.Now }
func (*ReserveIncarnations) Type() CommandType   { return CmdReserveIncarnations }
func (c *ReserveIncarnations) leaderNow() *int64 { return &c.Now }
func (*PutCommit) Type() CommandType             { return CmdPutCommit }
func (c *PutCommit) leaderNow() *int64           { return &c.Now }
func (*PutCommitBatch) Type() CommandType        { return CmdPutCommitBatch }
func (c *PutCommitBatch) leaderNow() *int64      { return &c.Now }

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
	// apply applies a body of this type, the entry at index, to the state
	// and returns its result (an answerer).
	apply func(st *state, index uint64, c Command) answerer
	// ptr is *T, the only Go type a body of this command may have.
	ptr reflect.Type
	// vField indexes the body's "v" field, which every body has (checked
	// when the table is built).
	vField int
}

// row builds the row of body type T (the command's name), applied by
// apply. The version field
// must be T's first field (V uint8 `msgpack:"v"`, so the encoder writes it
// first and Decode can read it without decoding the rest) and T must have
// the leader's time (Now int64 `msgpack:"now"`, the field its leaderNow
// method points at); a body without them stops the program at start-up
// rather than misbehave on its first entry.
func row[T any, P interface {
	*T
	Command
}, R answerer](current uint8, bounds func(P, bounder) error, apply func(*state, uint64, P) R, v2Fields ...string) *commandSpec {
	rt := reflect.TypeFor[T]()
	name := rt.Name()
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
		apply:    func(st *state, index uint64, c Command) answerer { return apply(st, index, c.(P)) },
		ptr:      reflect.TypeFor[P](),
		vField:   field("V", "v", reflect.Uint8),
	}
	if s.vField != 0 {
		panic(fmt.Sprintf("fsm: command %s: V must be the first field of %s", name, rt))
	}
	body := P(new(T))
	if now := field("Now", "now", reflect.Int64); reflect.ValueOf(body).Elem().Field(now).Addr().Interface() != any(body.leaderNow()) {
		panic(fmt.Sprintf("fsm: command %s: leaderNow of %s must point at its Now", name, rt))
	}
	if bounds != nil {
		s.bounds = func(c Command, b bounder) error { return bounds(c.(P), b) }
	}
	return s
}

// anyIndex adapts an apply function that does not depend on the entry's
// index to a row's.
func anyIndex[P any, R answerer](apply func(*state, P) R) func(*state, uint64, P) R {
	return func(st *state, _ uint64, c P) R { return apply(st, c) }
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
