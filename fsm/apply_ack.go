package fsm

import "sexton/api"

// applyAck applies a holder's outcomes. The segment must be mounted at
// exactly the presented epoch and advertise OBJECT_TOMBSTONE_V1. A result
// drops a task only if the task has that id, segment, key and incarnation
// (anything else is counted Unknown and touches nothing) and the outcome is
// terminal; RetryableFailure keeps it. One invalid outcome rejects the whole
// ack.
func (st *state) applyAck(c *LocalDeleteAck) *AckResult {
	seg, err := st.checkFetcher("ack", c.Segment, c.Epoch)
	if err != nil {
		return &AckResult{Err: api.AsError(err)}
	}
	for i, r := range c.Results {
		if !r.Outcome.Valid() {
			return &AckResult{Err: api.Errorf(api.CodeInvalidParams, "ack: result %d (task %d) has invalid outcome %d", i, r.TaskID, r.Outcome)}
		}
	}
	res := &AckResult{}
	for _, r := range c.Results {
		t := st.reg.byID.get(r.TaskID)
		if t == nil || t.seg != seg.id || t.key != r.Key || t.inc != r.Incarnation {
			res.Unknown++
			continue
		}
		if !r.Outcome.Terminal() {
			res.Kept++
			continue
		}
		res.DroppedCreated = append(res.DroppedCreated, t.created)
		st.reg.drop(t)
		res.Dropped++
	}
	return res
}
