package holder

import (
	"testing"
	"time"

	"sexton/api"
)

// TestGrantedWritesHeldAreNeverDropped: a write the master cannot decide
// yet is asked about again at growing delays up to the longest and never
// dropped, however long it stays undecided; one it does not name (live)
// is dropped after the last ask.
func TestGrantedWritesHeldAreNeverDropped(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var g grantedWrites
	held := api.ObjectRef{Key: "held", Incarnation: api.ObjectIncarnation{High: 1, Low: 2}}
	live := api.ObjectRef{Key: "live", Incarnation: api.ObjectIncarnation{High: 1, Low: 3}}
	g.note(held, t0)
	g.note(live, t0)
	now := t0
	longest := grantedAsks[len(grantedAsks)-1]
	for round := 0; round < 12; round++ {
		ws := g.due(now.Add(longest), 10)
		var h, rest []grantedWrite
		for _, w := range ws {
			if w.ref == held {
				h = append(h, w)
			} else {
				rest = append(rest, w)
			}
		}
		if len(h) != 1 {
			t.Fatalf("round %d: the undecided write was not asked about (%d due)", round, len(ws))
		}
		now = now.Add(longest)
		if got := g.due(now.Add(time.Millisecond), 10); len(got) != 0 {
			t.Fatalf("round %d: %d writes due again at once", round, len(got))
		}
		g.again(rest)
		g.hold(h, now)
	}
	for _, w := range g.list {
		if w.ref == live {
			t.Fatalf("the write the master never named was kept past its %d asks", len(grantedAsks))
		}
	}
}
