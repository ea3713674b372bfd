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

// AnswerOf reads res's Answer. Anything but a result of the command table
// (nil, a nil pointer, another type) answers nothing.
func AnswerOf(res any) Answer {
	a, ok := res.(answerer)
	if !ok || reflect.ValueOf(a).IsNil() {
		return Answer{}
	}
	return a.answer()
}
