package fsm

import (
	"reflect"
	"sync"

	"sexton/api"
)

// StampNow sets cmd's leader time (the Now every row of the command table
// has, at the field index the table checked at start-up) to now, unless
// the caller set it. A body not in the table is left alone: Encode
// refuses it.
func StampNow(cmd Command, now int64) {
	s, err := specOfBody(cmd)
	if err != nil {
		return
	}
	if f := reflect.ValueOf(cmd).Elem().Field(s.nowField); f.Int() == 0 {
		f.SetInt(now)
	}
}

// Answer is what Apply's result tells the proposer: the fsm's refusal
// (nil when the command applied) and, for a result with a Duplicate
// field, whether the session table answered it (nothing executed).
type Answer struct {
	Err *api.Error
	// Sessioned says the result has a Duplicate field.
	Sessioned, Duplicate bool
}

// answerFields are the indexes of a result type's Err (*api.Error) and
// Duplicate (bool) fields, -1 for none.
type answerFields struct{ err, dup int }

// answerFieldsOf caches answerFields by result type: every result is a
// pointer to a plain struct, and the two fields are found once per type.
var answerFieldsOf sync.Map // reflect.Type → answerFields

// AnswerOf reads res's Answer. A result that is not a pointer to a
// struct, or has neither field of the right type, answers nothing.
func AnswerOf(res any) Answer {
	v := reflect.ValueOf(res)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return Answer{}
	}
	v = v.Elem()
	af, ok := answerFieldsOf.Load(v.Type())
	if !ok {
		af, _ = answerFieldsOf.LoadOrStore(v.Type(), findAnswerFields(v.Type()))
	}
	f := af.(answerFields)
	var a Answer
	if f.err >= 0 {
		a.Err, _ = v.Field(f.err).Interface().(*api.Error)
	}
	if f.dup >= 0 {
		a.Sessioned, a.Duplicate = true, v.Field(f.dup).Bool()
	}
	return a
}

func findAnswerFields(t reflect.Type) answerFields {
	f := answerFields{err: -1, dup: -1}
	if e, ok := t.FieldByName("Err"); ok && len(e.Index) == 1 && e.Type == reflect.TypeFor[*api.Error]() {
		f.err = e.Index[0]
	}
	if d, ok := t.FieldByName("Duplicate"); ok && len(d.Index) == 1 && d.Type.Kind() == reflect.Bool {
		f.dup = d.Index[0]
	}
	return f
}
