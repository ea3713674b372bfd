package fsm

import "sexton/api"

// applyRemove is the REMOVE intent: per key, in request order, reserve one
// task slot per COMPLETE LOCAL_DISK replica on a capable segment; if they
// all fit, drop the COMPLETE incarnation and create the tasks, else fail
// that key with LOCAL_DELETE_REGISTRY_FULL and leave it untouched. Keys are
// independent: there is no batch-wide transaction. A pending put is not
// touched.
func (st *state) applyRemove(c *Remove) *RemoveResult {
	res := &RemoveResult{Results: make([]api.KeyResult, len(c.Keys))}
	for i, key := range c.Keys {
		res.Results[i].Key = key
		if err := api.ValidKey(key); err != nil {
			res.Results[i].Err = api.AsError(err)
			continue
		}
		old := st.objects.get(key)
		e := old
		if e.complete == nil {
			res.Results[i].Err = api.Errorf(api.CodeObjectNotFound, "key %q", key)
			continue
		}
		plan := st.planTasks(key, e, e.complete)
		if !st.reg.fits(len(plan)) {
			res.Results[i].Err = registryFull(key, len(plan), st.reg.len(), st.reg.capacity)
			continue
		}
		res.TasksCreated += st.createTasks(&e, plan, e.complete.tenant, c.Now)
		st.freeDFS(key, e.complete, c.Now)
		e.complete = nil
		st.objects.set(key, old, e)
	}
	return res
}
