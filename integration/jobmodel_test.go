package integration

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// A prefix-delete job is not one register operation: it removes, one
// step at a time, every key whose put was acknowledged before its JobStart
// applied, and keeps every put acknowledged after (docs/CLI.md, rm
// --prefix). The history records the job as one "jobrm" operation per key,
// spanning the job from its JobStart call to the moment the client saw it
// finish, and the model below says what that operation may do to the
// register at its step: remove a value whose put returned before the job
// was called, keep a value whose put was called after JobStart returned,
// and either for a put that overlapped JobStart (the client cannot tell
// which side of JobStart its PutEnd applied on).

// putSpan is a put's call and return in the history's nanoseconds.
type putSpan struct{ call, ret int64 }

// modelFor is registerModel, or, when the history has prefix jobs, the
// register with the jobs' nondeterministic step.
func modelFor(ops []porcupine.Operation) porcupine.Model {
	spans := map[string]putSpan{}
	jobs := false
	for _, op := range ops {
		switch in := op.Input.(regOp); in.Kind {
		case "put":
			spans[in.Value] = putSpan{op.Call, op.Return}
		case "jobrm":
			jobs = true
		}
	}
	if !jobs {
		return registerModel
	}
	nm := porcupine.NondeterministicModel{
		Partition: registerModel.Partition,
		Init:      func() []any { return []any{""} },
		Step: func(state, input, output any) []any {
			s, in := state.(string), input.(regOp)
			if in.Kind != "jobrm" {
				if ok, next := registerModel.Step(state, input, output); ok {
					return []any{next}
				}
				return nil
			}
			if s == "" {
				return []any{""}
			}
			sp, known := spans[s]
			switch {
			case known && sp.ret < in.JobCall:
				return []any{""} // acknowledged before the job: the job removes it
			case known && sp.call > in.JobStarted:
				return []any{s} // begun after JobStart: the job keeps it
			}
			return []any{"", s}
		},
		Equal:             registerModel.Equal,
		DescribeOperation: registerModel.DescribeOperation,
		DescribeState:     registerModel.DescribeState,
	}
	return nm.ToModel()
}

// recordJob adds a prefix job's removal of each key: called at call, its
// JobStart answered at started (zero: outcome unknown), seen finished at
// done (zero: unknown, so it may take effect any time after its call).
func (h *history) recordJob(clientID int, keys []string, call, started, done time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	jobStarted := int64(1 << 62)
	if !started.IsZero() {
		jobStarted = started.Sub(h.start).Nanoseconds()
	}
	out := regOut{Outcome: "unknown"}
	if !done.IsZero() {
		out.Outcome = "ok"
	}
	for _, k := range keys {
		in := regOp{Kind: "jobrm", Key: k, JobCall: call.Sub(h.start).Nanoseconds(), JobStarted: jobStarted}
		h.recordLocked(clientID, in, call, out)
		if out.Outcome == "ok" {
			h.ops[len(h.ops)-1].Return = done.Sub(h.start).Nanoseconds()
		}
	}
}
