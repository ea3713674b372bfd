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

func (d *ddRunner) jobStart(_ *testing.T, a ddArgs) string {
	return fmtJobResult(d.h.apply(&JobStart{Prefix: a.str("prefix"), Session: a.session(), Now: d.h.now}).(*JobResult))
}

func (d *ddRunner) jobCancel(_ *testing.T, a ddArgs) string {
	return fmtJobResult(d.h.apply(&JobCancel{Job: a.u64("job"), Session: a.session(), Now: d.h.now}).(*JobResult))
}

func fmtJobResult(r *JobResult) string {
	return fmt.Sprintf("%s %s%s", fmtErr(r.Err), fmtJob(r.Job), fmtDup(r.Duplicate))
}

func (d *ddRunner) jobStep(_ *testing.T, a ddArgs) string {
	id := a.u64("job")
	step := &JobAdvance{Job: id, After: a.str("after"), Keys: a.list("keys"), Last: a.has("last"), Pause: a.has("pause"), Now: d.h.now}
	if a.has("auto") {
		j, cands, last, ok := d.h.f.JobCandidates(id, int(a.i64("auto")))
		if !ok {
			a.fatalf("job-step auto: no job %d", id)
		}
		step.After, step.Keys, step.Last = j.Cursor, candidateKeys(cands), last
	}
	r := d.h.apply(step).(*JobAdvanceResult)
	stale := ""
	if r.Stale {
		stale = " stale"
	}
	return fmt.Sprintf("%s keys=%s removed=%d skipped=%d%s\n%s", fmtErr(r.Err), strings.Join(step.Keys, ","), r.Removed, r.Skipped, stale, fmtJob(r.Job))
}

func (d *ddRunner) jobs(*testing.T, ddArgs) string {
	var b strings.Builder
	for _, j := range d.h.f.Jobs() {
		b.WriteString(fmtJob(j) + "\n")
	}
	b.WriteString("end")
	return b.String()
}
