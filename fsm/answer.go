package fsm

import (
	"reflect"

	"sexton/api"
)

// StampNow sets cmd's leader time (the Now every body of the command table
// has) to now, unless the caller set it.
func StampNow(cmd Command, now int64) {
	if p := cmd.leaderNow(); *p == 0 {
		*p = now
	}
}

// Answer is what Apply's result tells the proposer: the fsm's refusal
// (nil when the command applied) and, for the result of a command that
// carries a session, whether the session table answered it (nothing
// executed).
type Answer struct {
	Err *api.Error
	// Sessioned says the result has a Duplicate field.
	Sessioned, Duplicate bool
}

// answerer is what every result type of the command table has: its
// Answer, read from its own Err and Duplicate fields.
type answerer interface{ answer() Answer }

// sessioned is the Answer of a result with a Duplicate field.
func sessioned(err *api.Error, dup bool) Answer {
	return Answer{Err: err, Sessioned: true, Duplicate: dup}
}

// The answer of every result type of the command table.
func (r *PutStartBatchResult) answer() Answer  { return sessioned(r.Err, r.Duplicate) }
func (r *PutEndBatchResult) answer() Answer    { return sessioned(r.Err, r.Duplicate) }
func (r *ReserveResult) answer() Answer        { return Answer{Err: r.Err} }
func (r *DFSResult) answer() Answer            { return Answer{Err: r.Err} }
func (r *JobResult) answer() Answer            { return sessioned(r.Err, r.Duplicate) }
func (r *JobAdvanceResult) answer() Answer     { return Answer{Err: r.Err} }
func (r *RebuildBeginResult) answer() Answer   { return Answer{Err: r.Err} }
func (r *RebuildAdoptResult) answer() Answer   { return Answer{Err: r.Err} }
func (r *RebuildCloseResult) answer() Answer   { return Answer{Err: r.Err} }
func (r *SettingsResult) answer() Answer       { return sessioned(r.Err, r.Duplicate) }
func (r *DropTombstonedResult) answer() Answer { return Answer{Err: r.Err} }
func (*EpochBeginResult) answer() Answer       { return Answer{} }
func (r *MountResult) answer() Answer          { return Answer{Err: r.Err} }
func (r *UnmountResult) answer() Answer        { return Answer{Err: r.Err} }
func (r *PutStartResult) answer() Answer       { return sessioned(r.Err, r.Duplicate) }
func (r *PutEndResult) answer() Answer         { return sessioned(r.Err, r.Duplicate) }
func (r *RemoveResult) answer() Answer         { return sessioned(nil, r.Duplicate) }
func (r *AckResult) answer() Answer            { return Answer{Err: r.Err} }
func (r *RetireResult) answer() Answer         { return Answer{Err: r.Err} }
func (r *DropResult) answer() Answer           { return Answer{Err: r.Err} }

// AnswerOf reads res's Answer. Anything but a result of the command table
// (nil, a nil pointer, another type) answers nothing.
func AnswerOf(res any) Answer {
	a, ok := res.(answerer)
	if !ok || reflect.ValueOf(a).IsNil() {
		return Answer{}
	}
	return a.answer()
}
