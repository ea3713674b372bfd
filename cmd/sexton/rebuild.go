package main

import (
	"flag"
	"fmt"
	"strings"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm"
	"sexton/internal/cliflag"
	"sexton/rebuild"
)

// setupRebuild is `operator rebuild`: a freshly bootstrapped, empty
// cluster takes over the cluster whose masters all lost their state,
// from the records its holders keep (docs/DESIGN.md §11; package rebuild
// has the rules and runs it, rebuild.Run). Run again on the rebuilt
// cluster it adopts late holders; --close ends that window.
func setupRebuild(fs *flag.FlagSet) runFunc {
	holders := fs.String("holders", "", "holder data addresses A,B,C to scan, besides the holders that tried to mount this cluster")
	dryRun := fs.Bool("dry-run", false, "print what would be adopted, dropped and deleted; change nothing")
	allowMissing := fs.Bool("allow-missing", false, "go on when a holder address does not answer (its segment must then be named by --allow-missing-segments if other holders know it)")
	allowSegs := fs.String("allow-missing-segments", "", "segment ids S1,S2 the holders' records name that are not scanned: lost for good, or to be adopted later by a rerun; their copies are not adopted now")
	closeWindow := fs.Bool("close", false, "end the adoption window of a finished rebuild: late holders of the lost cluster can then only be retired or wiped")
	batch := fs.Int("batch", 512, fmt.Sprintf("items per Raft entry (1 to %d)", fsm.MaxRebuildItems))
	dfsRoot := fs.String("dfs-root", cliflag.EnvString(dfsio.EnvRoot, ""), "the lost cluster's DFS root, whose range records the rebuild adopts DFS replicas from (env "+dfsio.EnvRoot+")")
	dfsDrop := fs.Bool("dfs-drop", false, "adopt nothing from the DFS root: objects that had only DFS replicas are lost")
	return func(e *env, _ []string) error {
		if *closeWindow {
			return closeRebuild(e)
		}
		var allow []api.SegmentID
		for _, s := range cliflag.SplitList(*allowSegs) {
			allow = append(allow, api.SegmentID(s))
		}
		env, err := rebuildEnv(e)
		if err != nil {
			return err
		}
		rep, err := rebuild.Run(env, rebuild.RunOptions{Holders: cliflag.SplitList(*holders), DryRun: *dryRun, AllowMissing: *allowMissing, AllowSegments: allow, Batch: *batch, DFSRoot: *dfsRoot, DFSDrop: *dfsDrop})
		if rep != nil {
			if oerr := e.output(rep, func() error { printRebuild(rep); return nil }); oerr != nil && err == nil {
				err = oerr
			}
		}
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		if rep.Failed > 0 {
			return fmt.Errorf("rebuild: %d items failed (listed above); rerun the rebuild to retry them", rep.Failed)
		}
		return nil
	}
}

// rebuildEnv is what package rebuild works with: this verb's cluster
// flags and the progress writer.
func rebuildEnv(e *env) (rebuild.Env, error) {
	cc, err := e.clientConfig()
	return rebuild.Env{Call: e.call, Holders: cc, Timeout: e.timeout, Progress: progressTo, JSONProgress: e.json}, err
}

// closeRebuild is `operator rebuild --close`.
func closeRebuild(e *env) error {
	env, err := rebuildEnv(e)
	if err != nil {
		return err
	}
	out, err := rebuild.Close(env)
	if err != nil {
		return fmt.Errorf("rebuild --close: %w", err)
	}
	return e.output(out, func() error {
		what := "closed"
		if out.Already {
			what = "was already closed"
		}
		fmt.Printf("the adoption window of the rebuild of cluster %s %s: late holders of the lost cluster can now only be retired or wiped\n", out.ClusterID, what)
		return nil
	})
}

func printRebuild(r *rebuild.Report) {
	printRebuildDFS(r)
	for _, a := range r.Adopt {
		fmt.Printf("adopt  %s %s size=%d replicas=%s\n", a.Key, a.Incarnation, a.Size, strings.Join(a.Segments, ","))
	}
	for _, d := range r.Delete {
		fmt.Printf("delete %s %s on %s\n", d.Key, d.Incarnation, d.Segment)
	}
	for _, d := range r.Drop {
		fmt.Printf("drop   %s: %s\n", d.Key, d.Reason)
	}
	for _, c := range r.Conflicts {
		fmt.Printf("conflict %s %s: copies on %s differ; verified %s; kept %s\n", c.Key, c.Incarnation,
			strings.Join(c.Segments, ","), strings.Join(c.Verified, ","), strings.Join(c.Kept, ","))
	}
	for _, f := range r.Failures {
		fmt.Printf("failed %s %s %s: %s\n", f.Key, f.Incarnation, f.Segment, f.Error)
	}
	for _, h := range r.Scanned {
		fmt.Printf("scanned holder %s segment %s pool %s: %d records\n", h.Endpoint, h.Segment, h.Pool, h.Records)
	}
	for _, h := range r.HoldersMissing {
		fmt.Printf("missing holder %s (did not answer)\n", h)
	}
	for _, s := range r.SegmentsMissing {
		fmt.Printf("missing segment %s (allowed; its holder's mount is refused until a rerun adopts it, or retire it)\n", s)
	}
	what := "rebuilt"
	if r.Rerun {
		what = "adopted into rebuilt"
	}
	if r.DryRun {
		what = "dry run, nothing changed:"
	}
	fmt.Printf("%s cluster %s from %d holders: %d records, %d keys (%d bytes), %d deletes, %d dropped, %d conflicts, incarnations above %d, in %.1fs\n",
		what, r.ClusterID, r.HoldersScanned, r.Records, r.Keys, r.Bytes, r.Deletes, r.Dropped, len(r.Conflicts), r.IncFloor, r.Seconds)
	if r.Own > 0 {
		fmt.Printf("left %d keys to the serving cluster: every copy of them is one it issued itself\n", r.Own)
	}
	if !r.DryRun {
		fmt.Printf("adopted %d, already there %d, superseded %d, failed %d; %d delete tasks created\n", r.Adopted, r.Already, r.Superseded, r.Failed, r.TasksCreated)
	}
}

func printRebuildDFS(r *rebuild.Report) {
	if r.DFSRoot == "" {
		return
	}
	for _, x := range r.DFSRejected {
		fmt.Printf("dfs    %s %s at %s offset %d not adopted: %s\n", x.Key, x.Incarnation, x.Path, x.Offset, x.Reason)
	}
	if r.DFSDropped {
		fmt.Printf("dfs    %s: %d files, %d range records dropped (--dfs-drop): objects that had only DFS replicas are lost\n", r.DFSRoot, len(r.DFSFiles), r.DFSRecords)
		return
	}
	fmt.Printf("dfs    %s: %d files, %d range records (%d torn), %d objects with a DFS replica, %d records rejected, %d put records not adopted killed by a removal record\n",
		r.DFSRoot, len(r.DFSFiles), r.DFSRecords, r.DFSTorn, r.DFSAdopted, len(r.DFSRejected), r.DFSKilled)
}
