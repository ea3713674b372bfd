package leases

import (
	"fmt"
	"testing"
	"time"

	"sexton/api"
	"sexton/master/policy/policytest"
)

// ref is the incarnation a command names: key=K [inc=N].
func ref(a *policytest.Args) api.ObjectRef {
	return api.ObjectRef{Key: a.Need("key"), Incarnation: api.ObjectIncarnation{High: 1, Low: uint64(a.Int("inc", 1))}}
}

// verbs is the lease table's language: one handler per verb, on a fresh
// table whose sweep reads the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	s := New()
	s.clock = func() time.Time { return clock.Now }
	sizes := func() string {
		return fmt.Sprintf("leases=%d keys=%d next-sweep=%d", len(s.leases), len(s.keyLeases), s.sweepAt)
	}
	return policytest.Verbs{
		"begin-term": func(a *policytest.Args) string {
			var floor time.Time
			if a.Has("floor") {
				floor = clock.At(a, "floor")
			}
			s.BeginTerm(floor)
			return "floor " + policytest.Rel(floor)
		},
		"grant": func(a *policytest.Args) string {
			s.GrantLease(ref(a), clock.At(a, "for"))
			return sizes()
		},
		"grant-many": func(a *policytest.Args) string {
			for i := range a.Int("n", 0) {
				s.GrantLease(api.ObjectRef{Key: fmt.Sprintf("%s%d", a.Need("prefix"), i)}, clock.At(a, "for"))
			}
			return sizes()
		},
		"begin-read": func(a *policytest.Args) string {
			s.BeginRead(a.List("keys")...)
			return "ok"
		},
		"end-read": func(a *policytest.Args) string {
			var refs []api.ObjectRef
			if a.Has("inc") {
				refs = append(refs, ref(a))
			}
			s.EndRead([]string{a.Need("key")}, refs, clock.At(a, "for"))
			return "ok"
		},
		"leased": func(a *policytest.Args) string {
			r := ref(a)
			out := "incarnation: free"
			if end := s.LeaseEnd(r, clock.Now); !end.IsZero() {
				out = "incarnation: leased until " + policytest.Rel(end)
			}
			return out + fmt.Sprintf("; key: leased=%v", s.LeasedKey(r.Key, clock.Now))
		},
	}
}

// TestLeases runs the read leases (a term's floor, grants, reads in
// flight and the sweep) on a fake clock from testdata/*.txt.
func TestLeases(t *testing.T) { policytest.Run(t, verbs) }
