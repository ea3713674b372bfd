//go:build invariants || race

package fsm

import (
	"errors"
	"fmt"
	"strings"

	"sexton/api"
)

const invariantsEnabled = true

// InvariantsEnabled tells other packages whether this build runs the
// expensive checks (the master decodes every entry before proposing it).
const InvariantsEnabled = invariantsEnabled

// checkInvariants cross-checks every index of the state against the others.
// It is O(state) and runs after every Apply when built with -tags
// invariants or -race (the way pebble guards its expensive checks): every
// race-detector run, `make test` included, checks them.
func (st *state) checkInvariants() error {
	// The removal memory exists only in an open, not overflowed window,
	// within its bound.
	if len(st.rebuildRemoved) > 0 && (!st.rebuildWindowOpen() || st.rebuildOverflow || len(st.rebuildRemoved) > maxRebuildRemoved) {
		return fmt.Errorf("rebuild removal memory of %d keys (bound %d) with window open=%v overflowed=%v", len(st.rebuildRemoved), maxRebuildRemoved, st.rebuildWindowOpen(), st.rebuildOverflow)
	}
	r := st.reg
	if r.len() > r.capacity {
		return fmt.Errorf("registry holds %d tasks, capacity %d", r.len(), r.capacity)
	}
	counted := 0
	for no, p := range r.byID.pages {
		live := 0
		for i, t := range p.slots {
			if t != nil {
				live++
				if t.id != no<<taskPageBits|uint64(i) {
					return fmt.Errorf("task %d filed under id %d", t.id, no<<taskPageBits|uint64(i))
				}
			}
		}
		if live == 0 || live != p.live {
			return fmt.Errorf("task page %d counts %d live, holds %d", no, p.live, live)
		}
		counted += live
	}
	if counted != r.len() {
		return fmt.Errorf("task index counts %d, pages hold %d", r.len(), counted)
	}
	perKey, perSeg := 0, map[string]int{}
	if err := st.objects.tasks.check(); err != nil {
		return err
	}
	var listErr error
	st.objects.tasks.each(func(key string, head *task) {
		if listErr == nil {
			listErr = checkTaskList(r, key, head, &perKey)
		}
	})
	if listErr != nil {
		return listErr
	}
	if perKey != r.len() {
		return fmt.Errorf("task lists hold %d tasks, byID %d", perKey, r.len())
	}
	var all []*task
	r.byID.ascend(func(t *task) bool { all = append(all, t); return true })
	if len(all) != r.len() {
		return fmt.Errorf("byID walks %d tasks, counts %d", len(all), r.len())
	}
	for i, t := range all {
		if i > 0 && all[i-1].id >= t.id {
			return fmt.Errorf("byID walks task %d after task %d", t.id, all[i-1].id)
		}
		if t.id >= st.nextTaskID {
			return fmt.Errorf("task %d not below next id %d", t.id, st.nextTaskID)
		}
		seg := st.segments[t.seg]
		if seg == nil || seg.retired {
			return fmt.Errorf("task %d on unknown or retired segment %s", t.id, t.seg)
		}
		perSeg[string(t.seg)]++
	}
	for seg, q := range r.bySeg {
		if q.live != perSeg[string(seg)] {
			return fmt.Errorf("segment %s queue counts %d live, tasks say %d", seg, q.live, perSeg[string(seg)])
		}
		for i := 1; i < len(q.ids); i++ {
			if q.ids[i] <= q.ids[i-1] {
				return fmt.Errorf("segment %s queue out of order", seg)
			}
		}
	}
	for seg, n := range perSeg {
		if q := r.bySeg[api.SegmentID(seg)]; q == nil || q.live != n {
			return fmt.Errorf("segment %s has %d tasks but no matching queue", seg, n)
		}
	}
	for client, id := range st.clients {
		seg := st.segments[id]
		if seg == nil || !seg.mounted || seg.client != client {
			return fmt.Errorf("client %s bound to %s, which it does not hold", client, id)
		}
	}
	for id, seg := range st.segments {
		if seg.mounted && st.clients[seg.client] != id {
			return fmt.Errorf("mounted segment %s's client %s is bound elsewhere", id, seg.client)
		}
		if seg.retired && seg.mounted {
			return fmt.Errorf("segment %s retired and mounted", id)
		}
	}
	return errors.Join(st.objects.check(), st.checkJobs())
}

// check cross-checks the table's parts: every PENDING incarnation is in
// pendingPuts under its creation time, as that same object, and newer
// than the key's COMPLETE one; pendingPuts holds nothing else. A snapshot
// writes what the two trees hold.
func (t *objectTable) check() error {
	for key, p := range t.pending {
		if p == nil {
			return fmt.Errorf("key %q: a nil PENDING incarnation kept", key)
		}
		ref, ok := t.pendingPuts.Get(pendingRef{created: p.created, key: key})
		if !ok {
			return fmt.Errorf("key %q: PENDING %s (created %d) not in the index of puts in progress", key, p.inc, p.created)
		}
		if ref.obj != p {
			return fmt.Errorf("key %q: the index of puts in progress holds another incarnation (%s) than the table (%s)", key, ref.obj.inc, p.inc)
		}
		if c, ok := t.complete.Get(completeItem{key: key}); ok && !c.obj.inc.Less(p.inc) {
			return fmt.Errorf("key %q: pending %s not newer than complete %s", key, p.inc, c.obj.inc)
		}
	}
	if n := t.pendingPuts.Len(); n != len(t.pending) {
		return fmt.Errorf("index of puts in progress holds %d, the table %d", n, len(t.pending))
	}
	return nil
}

// checkJobs: job ids increasing, the kept jobs within their bounds, every
// cursor under its prefix, no negative count.
func (st *state) checkJobs() error {
	t := &st.jobs
	active := t.active()
	if active > MaxActiveJobs || len(t.jobs)-active > MaxFinishedJobs {
		return fmt.Errorf("%d active and %d finished jobs kept", active, len(t.jobs)-active)
	}
	for i, j := range t.jobs {
		if i > 0 && j.ID <= t.jobs[i-1].ID {
			return fmt.Errorf("job %d after job %d", j.ID, t.jobs[i-1].ID)
		}
		if j.Cursor != "" && !strings.HasPrefix(j.Cursor, j.Prefix) {
			return fmt.Errorf("job %d: cursor %q not under prefix %q", j.ID, j.Cursor, j.Prefix)
		}
		if j.Removed < 0 || j.Skipped < 0 {
			return fmt.Errorf("job %d: negative count", j.ID)
		}
		if len(j.Kept) != 0 {
			return fmt.Errorf("job %d: the state's record carries kept keys", j.ID)
		}
	}
	for id, ks := range t.kept {
		j := t.find(id)
		if j == nil || !j.Active() {
			return fmt.Errorf("kept keys of job %d, which is not active", id)
		}
		bytes := 0
		for k, inc := range ks.inc {
			if k <= j.Cursor || !strings.HasPrefix(k, j.Prefix) || !inc.Less(j.Start) {
				return fmt.Errorf("job %d keeps %q@%s: not under prefix %q after cursor %q, or not older than %s", id, k, inc, j.Prefix, j.Cursor, j.Start)
			}
			bytes += api.JobKeptCost(k)
		}
		if len(ks.inc) == 0 || bytes != ks.bytes || bytes > api.MaxJobKeptBytes {
			return fmt.Errorf("job %d keeps %d keys of %d bytes, counted %d (at most %d)", id, len(ks.inc), bytes, ks.bytes, api.MaxJobKeptBytes)
		}
	}
	return nil
}

// checkTaskList checks key's task list, head first: every task carries
// key and is the one byID files under its id, in incarnation order, no
// two sharing an ident; it adds the tasks to *count.
func checkTaskList(r *registry, key string, head *task, count *int) error {
	if head == nil {
		return fmt.Errorf("key %q: an empty task list kept", key)
	}
	for t := head; t != nil; t = t.keyNext {
		if t.key != key || r.byID.get(t.id) != t {
			return fmt.Errorf("task list of %q holds task %d not in byID", key, t.id)
		}
		// Ordered oldest incarnation first (linkTask), so tasks
		// sharing an ident are in one run of equal incarnations.
		if n := t.keyNext; n != nil && n.inc.Less(t.inc) {
			return fmt.Errorf("task list of %q out of order: %s before %s", key, t.inc, n.inc)
		}
		for o := t.keyNext; o != nil && o.inc == t.inc; o = o.keyNext {
			if o.ident() == t.ident() {
				return fmt.Errorf("tasks %d and %d share (segment, key, incarnation)", t.id, o.id)
			}
		}
		*count++
	}
	return nil
}
