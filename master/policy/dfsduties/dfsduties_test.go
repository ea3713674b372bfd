package dfsduties

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/master/policy/policytest"
)

// verbs is the DFS duties' language: one handler per verb, on a fresh
// state and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	d := New()
	interval := func(a *policytest.Args) time.Duration { return a.Dur("interval", 5*time.Second) }
	unit := func(a *policytest.Args) uint64 { return uint64(a.Int("unit", 1)) }
	return policytest.Verbs{
		"dfs-read": func(a *policytest.Args) string {
			desc := api.DFSDescriptor{UnitID: unit(a), Path: a.Need("path"), Offset: a.Int("offset", 0)}
			d.NoteRead(a.Need("key"), []api.ReplicaDescriptor{{Kind: api.ReplicaDFS, DFS: &desc}, {Kind: api.ReplicaLocalDisk}}, clock.Now, interval(a))
			return fmt.Sprintf("pending=%d remembered=%d", len(d.touches), len(d.touched))
		},
		"dfs-touches": func(a *policytest.Args) string {
			out := []string{"touches:"}
			for _, r := range d.TakeTouches(clock.Now, interval(a)) {
				out = append(out, fmt.Sprintf("%s %s+%d", r.Key, r.Desc.Path, r.Desc.Offset))
			}
			return fmt.Sprintf("%s\nremembered=%d", strings.Join(out, " "), len(d.touched))
		},
		"dfs-op-due": func(a *policytest.Args) string {
			return fmt.Sprintf("due=%v", d.FileOpDue(unit(a), uint32(a.Int("failures", 0)), clock.Now))
		},
		"dfs-op-done": func(a *policytest.Args) string {
			d.FileOpDone(unit(a), a.Has("failed"), clock.Now)
			return "ok"
		},
		"dfs-strays": func(a *policytest.Args) string {
			known := map[string]bool{}
			for _, k := range strings.Split(a.Str("known", ""), ",") {
				known[k] = k != ""
			}
			seen, due := d.ScanStrays(strings.Split(a.Str("names", ""), ","), known, clock.Now, a.Dur("grace", 10*time.Second))
			out := "seen:" + strings.Join(append([]string{""}, seen...), " ") + "\ndue:"
			for _, st := range due {
				out += fmt.Sprintf(" %s (first %s)", st.Path, policytest.Rel(st.FirstSeen))
			}
			out += "\nstrays:"
			for _, st := range d.Strays() {
				out += " " + st.Path
			}
			return out
		},
		"dfs-stray-removed": func(a *policytest.Args) string {
			d.StrayRemoved(a.Need("path"))
			return "ok"
		},
		"dfs-unready": func(a *policytest.Args) string {
			var units []dfsalloc.UnitStats
			for _, u := range a.List("units") {
				id, file, _ := strings.Cut(u, ":")
				var n uint64
				if _, err := fmt.Sscan(id, &n); err != nil {
					a.Fatalf("units: %q: %v", id, err)
				}
				st := dfsalloc.UnitStats{Unit: n, Path: "u" + id, File: dfsalloc.FileNeeded}
				if file == "ready" {
					st.File = dfsalloc.FileReady
				}
				units = append(units, st)
			}
			var reps []api.ReplicaDescriptor
			for _, id := range a.Uints("reps") {
				reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{UnitID: id, Path: fmt.Sprintf("u%d", id)}})
			}
			if f := UnreadyDFSFile(units, reps); f != "" {
				return "waiting for " + f
			}
			return "ready"
		},
	}
}

// TestDFSDuties runs the DFS duties (read touches, file op retries, stray
// files, and whether a put's DFS files are ready) on a fake clock from
// testdata/*.txt.
func TestDFSDuties(t *testing.T) { policytest.Run(t, verbs) }
