package fsm

import (
	"reflect"
	"testing"

	"sexton/api"
)

// The leader's clock is stamped into every command of the table, unless
// the caller chose the instant.
func TestStampNow(t *testing.T) {
	for _, s := range commands {
		if s == nil {
			continue
		}
		c := s.newBody()
		StampNow(c, 42)
		if got := *c.leaderNow(); got != 42 {
			t.Errorf("%s: Now = %d after StampNow(42)", s.name, got)
		}
		StampNow(c, 43)
		if got := *c.leaderNow(); got != 42 {
			t.Errorf("%s: a Now already set was overwritten: %d", s.name, got)
		}
	}
}

// AnswerOf reads a result's refusal and, where the result has one, its
// duplicate flag; anything else answers nothing.
func TestAnswerOfReadsErrAndDuplicate(t *testing.T) {
	refused := api.Errorf(api.CodeInvalidParams, "no")
	for _, c := range []struct {
		name string
		res  any
		want Answer
	}{
		{"refused, sessioned", &PutStartResult{Err: refused}, Answer{Err: refused, Sessioned: true}},
		{"duplicate", &PutEndResult{Duplicate: true}, Answer{Sessioned: true, Duplicate: true}},
		{"refused, no session", &UnmountResult{Err: refused}, Answer{Err: refused}},
		{"applied, no session", &UnmountResult{}, Answer{}},
		{"no Err field", &RemoveResult{Duplicate: true}, Answer{Sessioned: true, Duplicate: true}},
		{"nil result", (*PutEndResult)(nil), Answer{}},
		{"not a struct", new(int), Answer{}},
		{"nothing", nil, Answer{}},
	} {
		if got := AnswerOf(c.res); got != c.want {
			t.Errorf("%s: AnswerOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Every result that can carry a refusal hands it to the proposer through
// AnswerOf.
func TestAnswersCarryErr(t *testing.T) {
	refused := api.Errorf(api.CodeInvalidParams, "no")
	for _, r := range []any{&MountResult{}, &UnmountResult{}, &PutStartResult{}, &PutEndResult{},
		&AckResult{}, &RetireResult{}, &DropResult{}, &PutStartBatchResult{}, &PutEndBatchResult{},
		&SettingsResult{}, &DFSResult{}} {
		f := reflect.ValueOf(r).Elem().FieldByName("Err")
		if !f.IsValid() || !f.CanSet() || f.Type() != reflect.TypeFor[*api.Error]() {
			t.Errorf("%T has no Err *api.Error field", r)
			continue
		}
		f.Set(reflect.ValueOf(refused))
		if got := AnswerOf(r).Err; got != refused {
			t.Errorf("%T: AnswerOf's Err = %v, want the refusal set", r, got)
		}
	}
}
