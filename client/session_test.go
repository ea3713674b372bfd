package client

import "testing"

// The floor is the oldest request still waiting for its answer, so the
// masters never forget a result the client may still ask for again.
func TestSessionFloorIsOldestOutstanding(t *testing.T) {
	s := newSessions()
	a, b, c := s.begin(), s.begin(), s.begin()
	if a.Seq != 1 || b.Seq != 2 || c.Seq != 3 || a.Floor != 1 || c.Floor != 1 {
		t.Fatalf("sessions %+v %+v %+v", a, b, c)
	}
	s.end(b.Seq)
	if d := s.begin(); d.Floor != 1 {
		t.Fatalf("floor %d with request 1 unanswered, want 1", d.Floor)
	}
	s.end(a.Seq)
	if e := s.begin(); e.Floor != 3 {
		t.Fatalf("floor %d with 3 the oldest unanswered, want 3", e.Floor)
	}
	for _, seq := range []uint64{3, 4, 5} {
		s.end(seq)
	}
	if f := s.begin(); f.Floor != f.Seq || f.Valid() != nil {
		t.Fatalf("with nothing outstanding the floor is the new request itself: %+v (%v)", f, f.Valid())
	}
}
