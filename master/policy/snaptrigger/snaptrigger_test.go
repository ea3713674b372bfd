package snaptrigger

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"sexton/master/policy/policytest"
)

// verbs is the snapshot triggers' language: one handler per verb, on a
// fresh state and the file's clock.
func verbs(*policytest.Clock) policytest.Verbs {
	var m Meter
	u64 := func(a *policytest.Args, k string) uint64 { return uint64(a.Int(k, 0)) }
	return policytest.Verbs{
		"meter": func(a *policytest.Args) string {
			m.AppliedBytes.Store(uint64(a.Int("applied", int64(m.AppliedBytes.Load()))))
			m.AppliedAtSnap.Store(uint64(a.Int("at-snap", int64(m.AppliedAtSnap.Load()))))
			m.LastSnapBytes.Store(uint64(a.Int("last-snap", int64(m.LastSnapBytes.Load()))))
			return fmt.Sprintf("since-snapshot=%d", m.SinceSnapshot())
		},
		"due": func(a *policytest.Args) string {
			return fmt.Sprintf("due=%v", m.Due(u64(a, "min"), a.Float("stagger", 1)))
		},
		"stagger": func(a *policytest.Args) string {
			var out []string
			for _, id := range a.List("ids") {
				out = append(out, fmt.Sprintf("%s=%.3f", id, StaggerOf(id, a.List("voters"))))
			}
			return strings.Join(out, " ")
		},
		"count-trigger": func(a *policytest.Args) string {
			return strconv.FormatUint(CountTrigger(u64(a, "configured"), u64(a, "last-snap")), 10)
		},
		"trailing-count": func(a *policytest.Args) string {
			return strconv.FormatUint(TrailingCount(u64(a, "configured"), u64(a, "budget"), a.Float("avg", 0)), 10)
		},
		"log-sizing": func(a *policytest.Args) string {
			cur := raft.ReloadableConfig{SnapshotThreshold: u64(a, "threshold"), TrailingLogs: u64(a, "trailing")}
			cfg := LogSizes{Threshold: u64(a, "cfg-threshold"), Trailing: u64(a, "cfg-trailing"), TrailingBytes: u64(a, "trailing-bytes")}
			want, move := LogSizing(cur, cfg, u64(a, "last-snap"), a.Float("avg", 0))
			return fmt.Sprintf("threshold=%d trailing=%d reload=%v", want.SnapshotThreshold, want.TrailingLogs, move)
		},
	}
}

// TestSnapTrigger runs the snapshot triggers and raft's log sizing from
// testdata/*.txt.
func TestSnapTrigger(t *testing.T) { policytest.Run(t, verbs) }
