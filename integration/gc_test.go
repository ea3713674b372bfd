package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/holder"
)

// A holder SIGKILLed at every GC crash point in turn, during a real round
// that merges two partly dead buckets, then restarted: every live object
// reads back byte-identical, no removed object is visible, the next rounds
// reclaim the dead bytes, and fsck is clean.
func TestHolderKilledAtEveryGCCrashPoint(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client(0)
	listed := runCLI(t, "debug", "crash-points")
	for _, p := range holder.GCCrashPoints {
		if !strings.Contains(listed, p+"\n") {
			t.Fatalf("crash point %s not listed by sexton debug crash-points", p)
		}
	}
	// Four records a bucket, so eight puts fill two buckets.
	env := []string{holder.EnvBucketKeysLimit + "=4"}
	for i, point := range holder.GCCrashPoints {
		pool := fmt.Sprintf("gcpool%d", i)
		h := c.startHolder(t, fmt.Sprintf("gc%d", i), pool, append(env, "SEXTON_CRASH_AT="+point)...)
		live := map[string][]byte{}
		incs := map[string]api.ObjectIncarnation{}
		for j := 0; j < 8; j++ {
			key := fmt.Sprintf("gc/%d/%d", i, j)
			v := bytes.Repeat([]byte{byte(i), byte(j)}, 2048+j*100)
			incs[key] = putValue(t, c, cl, key, pool, v)
			live[key] = v
		}
		// Half of each bucket dies: the dead ratio (0.5) starts a merge.
		var removed []string
		for j := 0; j < 8; j += 2 {
			key := fmt.Sprintf("gc/%d/%d", i, j)
			mustRemove(t, c, key)
			removed = append(removed, key)
			delete(live, key)
		}
		code, exited := h.wait(30 * time.Second)
		if !exited {
			t.Fatalf("%s: the GC round never reached the crash point", point)
		}
		if code != -1 { // -1: killed by a signal (the crash point's SIGKILL)
			t.Fatalf("%s: holder exited with code %d instead of dying at the crash point:\n%s", point, code, tail(h.logText(), 2000))
		}
		// A removal the holder acknowledged before it died (its task is
		// gone) is a durable tombstone: it must hold straight after the
		// restart. One whose task the holder had not run yet (the round
		// can start before the last tombstone lands) is run after it.
		acked := map[string]bool{}
		for _, key := range removed {
			acked[key] = !hasTask(t, cl, key, incs[key])
		}
		c.restartHolder(t, h, env...)
		for key, v := range live {
			got, err := readFromHolder(h, c.token, key, incs[key])
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: live %s after recovery: %v (%d bytes, want %d)", point, key, err, len(got), len(v))
			}
		}
		for _, key := range removed {
			if !acked[key] {
				waitNoTasks(t, cl, key, 30*time.Second)
			}
			if _, err := readFromHolder(h, c.token, key, incs[key]); api.CodeOf(err) != api.CodeObjectNotFound {
				t.Fatalf("%s: removed %s (acknowledged before the kill: %v) visible after recovery: %v", point, key, acked[key], err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := holderStatus(h.addr, c.token)
			if err == nil && st.DeadBytes == 0 && st.LiveObjects == len(live) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: dead bytes not reclaimed after restart: %+v %v", point, st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The holder runs on while the directory is inspected: a GC round
		// it has just begun (an intent on disk) is its own, not one the
		// recovery left, so the intent must be gone within the deadline.
		for {
			rep, err := holder.Inspect(h.dir)
			if err == nil && len(rep.Problems) == 0 && !rep.GCIntentPending {
				break
			}
			if err != nil || len(rep.Problems) > 0 || time.Now().After(deadline) {
				t.Fatalf("%s: inspect after recovery: %v %+v (GC intent pending: %v)", point, err, rep.Problems, rep.GCIntentPending)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fsckClean(t, c)
}
