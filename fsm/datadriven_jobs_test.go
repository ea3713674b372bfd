package fsm

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
)

func fmtJob(j api.JobInfo) string {
	return fmt.Sprintf("job %d prefix=%q start=%d state=%s cursor=%q removed=%d skipped=%d steps=%d",
		j.ID, j.Prefix, j.Start.Low, j.State, j.Cursor, j.Removed, j.Skipped, j.Steps)
}

func candidateKeys(cs []JobCandidate) []string {
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = c.Key
	}
	return keys
}

// runJobs runs the bulk-delete job verbs:
//
//	job-start prefix=P [sess=c:s]
//	job-step job=ID [after=C] [keys=a,b] [last] [pause]   (a step as given)
//	job-step job=ID auto=N                                (the leader's step: the fsm's candidates)
//	job-cancel job=ID [sess=c:s]
//	jobs
func (d *ddRunner) runJobs(t *testing.T, verb string, a ddArgs) (string, bool) {
	h := d.h
	switch verb {
	case "job-start":
		r := h.apply(&JobStart{Prefix: a["prefix"], Session: d.session(t, a["sess"]), Now: h.now}).(*JobResult)
		return fmt.Sprintf("%s %s%s", fmtErr(r.Err), fmtJob(r.Job), fmtDup(r.Duplicate)), true
	case "job-step":
		id := a.u64(t, "job")
		step := &JobAdvance{Job: id, After: a["after"], Keys: a.list("keys"), Last: a.has("last"), Pause: a.has("pause"), Now: h.now}
		if a.has("auto") {
			j, cands, last, ok := h.f.JobCandidates(id, int(a.i64(t, "auto")))
			if !ok {
				t.Fatalf("job-step auto: no job %d", id)
			}
			step.After, step.Keys, step.Last = j.Cursor, candidateKeys(cands), last
		}
		r := h.apply(step).(*JobAdvanceResult)
		stale := ""
		if r.Stale {
			stale = " stale"
		}
		return fmt.Sprintf("%s keys=%s removed=%d skipped=%d%s\n%s", fmtErr(r.Err), strings.Join(step.Keys, ","), r.Removed, r.Skipped, stale, fmtJob(r.Job)), true
	case "job-cancel":
		r := h.apply(&JobCancel{Job: a.u64(t, "job"), Session: d.session(t, a["sess"]), Now: h.now}).(*JobResult)
		return fmt.Sprintf("%s %s%s", fmtErr(r.Err), fmtJob(r.Job), fmtDup(r.Duplicate)), true
	case "jobs":
		var b strings.Builder
		for _, j := range h.f.Jobs() {
			b.WriteString(fmtJob(j) + "\n")
		}
		b.WriteString("end")
		return b.String(), true
	}
	return "", false
}
