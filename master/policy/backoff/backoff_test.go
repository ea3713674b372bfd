package backoff

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
	"sexton/master/policy/leases"
	"sexton/master/policy/policytest"
)

// verbs is the task deliveries' language: one handler per verb, on a
// fresh state and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	s, l := New(), leases.New()
	ids := func(a *policytest.Args) []uint64 { return a.Uints("ids") }
	epoch := func(a *policytest.Args) uint64 { return uint64(a.Int("epoch", 1)) }
	return policytest.Verbs{
		"grant": func(a *policytest.Args) string {
			l.GrantLease(api.ObjectRef{Key: a.Need("key"), Incarnation: api.ObjectIncarnation{High: 1, Low: uint64(a.Int("inc", 1))}}, clock.At(a, "for"))
			return "ok"
		},
		"give": func(a *policytest.Args) string {
			var tasks []api.LocalDeleteTask
			for _, id := range ids(a) {
				tasks = append(tasks, api.LocalDeleteTask{ID: id, Key: fmt.Sprintf("k%d", id)})
			}
			s.Given(tasks, epoch(a), clock.Now)
			return "ok"
		},
		"fail": func(a *policytest.Args) string {
			for _, id := range ids(a) {
				s.TaskFailed(id, epoch(a), strings.ReplaceAll(a.Str("why", ""), "_", " "), clock.Now)
			}
			return "ok"
		},
		"done": func(a *policytest.Args) string {
			for _, id := range ids(a) {
				s.TaskDone(id)
			}
			return "ok"
		},
		"withheld": func(a *policytest.Args) string {
			var out []string
			for _, id := range ids(a) {
				ref := api.ObjectRef{Key: a.Str("key", fmt.Sprintf("k%d", id)), Incarnation: api.ObjectIncarnation{High: 1, Low: uint64(a.Int("inc", 1))}}
				held, until := s.Withheld(id, epoch(a), l.LeaseEnd(ref, clock.Now), clock.Now)
				if held {
					out = append(out, fmt.Sprintf("%d: held until %s", id, policytest.Rel(until)))
				} else {
					out = append(out, fmt.Sprintf("%d: given", id))
				}
			}
			return strings.Join(out, "\n")
		},
		"attempts": func(a *policytest.Args) string {
			ids := ids(a)
			epochs := make([]uint64, len(ids))
			for i := range epochs {
				epochs[i] = epoch(a)
			}
			var out []string
			for i, at := range s.AttemptsOf(ids, epochs) {
				line := fmt.Sprintf("%d: attempts=%d last=%s", ids[i], at.Attempts, policytest.Rel(at.LastGiven))
				if at.Failing {
					line += fmt.Sprintf(" failing (%s)", at.LastErr)
				}
				out = append(out, line)
			}
			return strings.Join(out, "\n")
		},
	}
}

// TestBackoff runs task delivery and retry backoff, per mount epoch and
// against the read leases, on a fake clock from testdata/*.txt.
func TestBackoff(t *testing.T) { policytest.Run(t, verbs) }
