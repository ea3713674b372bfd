package revokegate

import (
	"fmt"
	"testing"

	"sexton/master/policy/policytest"
)

// verbs is the revoke gate's language: one handler per verb, on a fresh
// state and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	var g Gate
	registry := func(a *policytest.Args) (int, int) { return int(a.Int("tasks", 0)), int(a.Int("cap", 0)) }
	return policytest.Verbs{
		"revoke-open": func(a *policytest.Args) string {
			tasks, capacity := registry(a)
			return fmt.Sprintf("open=%v", g.RevokeOpen(tasks, capacity, clock.Now))
		},
		"revoke-full": func(a *policytest.Args) string {
			tasks, capacity := registry(a)
			g.RevokeFull(tasks, capacity, clock.Now)
			return "closed until " + policytest.Rel(g.until)
		},
		"revoke-done": func(*policytest.Args) string {
			g.RevokeDone()
			return "ok"
		},
	}
}

// TestRevokeGate runs the gate on a fake clock from testdata/*.txt.
func TestRevokeGate(t *testing.T) { policytest.Run(t, verbs) }
