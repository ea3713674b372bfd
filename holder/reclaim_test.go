package holder

import (
	"slices"
	"testing"
	"time"

	"sexton/api"
)

// TestGrantedWritesSettle: of the writes asked about, the one the master
// names not live is returned for its tombstone, the undecided one is
// asked about again at growing delays up to the longest and never
// dropped, however long it stays undecided, and the live one (named
// neither way) is forgotten after its first ask.
func TestGrantedWritesSettle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var g grantedWrites
	held := api.ObjectRef{Key: "held", Incarnation: api.ObjectIncarnation{High: 1, Low: 2}}
	live := api.ObjectRef{Key: "live", Incarnation: api.ObjectIncarnation{High: 1, Low: 3}}
	dead := api.ObjectRef{Key: "dead", Incarnation: api.ObjectIncarnation{High: 1, Low: 4}}
	for _, r := range []api.ObjectRef{held, live, dead} {
		g.note(r, t0)
	}
	answer := &api.ReconcileResponse{NotLive: []api.ObjectRef{dead}, Undecided: []api.ObjectRef{held}}
	now := t0
	longest := grantedAsks[len(grantedAsks)-1]
	for round := 0; round < 12; round++ {
		ws := g.due(now.Add(longest), 10)
		want := 1
		if round == 0 {
			want = 3
		}
		if len(ws) != want {
			t.Fatalf("round %d: %d writes due, want %d", round, len(ws), want)
		}
		now = now.Add(longest)
		if got := g.due(now.Add(time.Millisecond), 10); len(got) != 0 {
			t.Fatalf("round %d: %d writes due again at once", round, len(got))
		}
		notLive := g.settle(ws, answer, now)
		if round == 0 && !slices.Equal(notLive, []api.ObjectRef{dead}) {
			t.Fatalf("not live: %v, want only %v", notLive, dead)
		}
		if round > 0 && ws[0].ref != held {
			t.Fatalf("round %d: %v asked about again, want only the undecided write", round, ws[0].ref)
		}
	}
	if len(g.list) != 1 || g.list[0].ref != held {
		t.Fatalf("remembered %v, want only the undecided write", g.list)
	}
}

// TestGrantedWritesPutBack: a write whose ask failed is due again at once,
// as it was.
func TestGrantedWritesPutBack(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var g grantedWrites
	g.note(api.ObjectRef{Key: "k"}, t0)
	ws := g.due(t0.Add(grantedAsks[0]), 10)
	g.putBack(ws)
	if again := g.due(t0.Add(grantedAsks[0]), 10); len(again) != 1 || again[0] != ws[0] {
		t.Fatalf("after a failed ask: %v due, want %v", again, ws)
	}
}
