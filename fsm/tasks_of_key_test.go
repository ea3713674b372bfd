package fsm

import (
	"testing"

	"sexton/api"
)

// TasksOfKey lists a key's pending tasks, of every incarnation and segment,
// from its removal until each is acknowledged — and nothing of other keys.
func TestTasksOfKeyFollowsTheKeysTasksUntilAcked(t *testing.T) {
	h, e1 := newMountedEpoch(t, 0)
	h.mustMount("c2", "s2", tombstoneCaps...)
	old := h.put("k", "s1")
	h.put("k", "s1", "s2") // overwrite: a task for old on s1
	h.put("other", "s1")
	h.remove("k", "other") // tasks for the new incarnation on s1 and s2
	got := h.f.TasksOfKey("k")
	if len(got) != 3 {
		t.Fatalf("TasksOfKey(k) = %s, want 3 tasks", taskKeys(got))
	}
	for _, x := range got {
		if x.Key != "k" {
			t.Fatalf("TasksOfKey(k) lists %q", x.Key)
		}
	}
	if got[0].Incarnation != old || got[0].ID > got[1].ID {
		t.Fatalf("not in id order, oldest incarnation first: %+v", got)
	}
	h.ackAll("s1", e1, api.AckRemoved, h.fetch("s1", e1)) // the old copy first (invariant 7)
	left := h.f.TasksOfKey("k")
	if len(left) != 2 || left[0].Incarnation == old || left[1].Incarnation == old {
		t.Fatalf("after the old copy was acked: %s, want the newest incarnation's two tasks", taskKeys(left))
	}
	h.ackAll("s1", e1, api.AckRemoved, h.fetch("s1", e1))
	left = h.f.TasksOfKey("k")
	if len(left) != 1 || left[0].Segment != "s2" {
		t.Fatalf("after s1 acked: %s, want only the s2 task", taskKeys(left))
	}
	if n := len(h.f.TasksOfKey("never")); n != 0 {
		t.Fatalf("a key never stored lists %d tasks", n)
	}
}
