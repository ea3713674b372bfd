package readiness

import (
	"errors"
	"strings"
	"testing"

	"sexton/master/policy/policytest"
)

// verbs is the readiness decision's language: one handler per verb, on a
// fresh state and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	return policytest.Verbs{
		"ready": func(a *policytest.Args) string {
			f := Facts{
				LeaderKnown: a.Has("leader-known"), Leading: a.Has("leading"), LeaderReady: a.Has("leader-ready"),
				Applied: uint64(a.Int("applied", 0)), Commit: uint64(a.Int("commit", 0)),
			}
			if a.Has("store-failing-for") {
				f.StoreCannotWrite = true
				f.StoreFailingSince = clock.Now.Add(-a.Dur("store-failing-for", 0))
				f.StoreErr = errors.New(strings.ReplaceAll(a.Str("store-err", "write failed"), "_", " "))
			}
			ok, why := ReadyFor(f, clock.Now)
			if ok {
				return "ready"
			}
			return "not ready: " + strings.TrimSpace(why)
		},
	}
}

// TestReadiness runs the /readyz decision from testdata/*.txt.
func TestReadiness(t *testing.T) { policytest.Run(t, verbs) }
