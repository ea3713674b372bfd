package rebuild

import (
	"errors"
	"fmt"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/fsm"
	"sexton/internal/progress"
	"sexton/transport"
)

// Env is what Run and Close work with: the rebuilt cluster's leader, the
// lost cluster's holders and where progress goes.
type Env struct {
	// Call calls a master method on the rebuilt cluster's leader
	// (leader-following, bounded by Timeout).
	Call func(method string, req, resp any) error
	// Holders dials the lost cluster's holders (its MaxFrame is raised to
	// a value's frame, client.DataMaxFrame).
	Holders transport.ClientConfig
	// Timeout bounds each holder call; Call's retries give up after four
	// times it.
	Timeout time.Duration
	// Progress receives the scan's and the adoption's progress and the
	// notes of holders skipped and calls retried; JSONProgress makes the
	// progress one JSON object a line (RunProgress).
	Progress     progress.Sink
	JSONProgress bool
}

// RunOptions are what the operator chose (`sexton operator rebuild`).
type RunOptions struct {
	Holders       []string // data addresses to scan besides the ones the cluster knows
	DryRun        bool
	AllowMissing  bool            // go on when a holder does not answer
	AllowSegments []api.SegmentID // segments named by records that are not scanned
	Batch         int             // items per Raft entry, 1 to fsm.MaxRebuildItems
	DFSRoot       string          // the lost cluster's DFS root, if any
	DFSDrop       bool            // adopt nothing from DFSRoot
}

// Run rebuilds a freshly bootstrapped, empty cluster's object table from
// the records the lost cluster's holders keep (docs/DESIGN.md §11). The
// holders are the ones o names plus every segment endpoint the cluster
// knows (a holder of the lost cluster pointed at the new masters tries to
// mount, which registers it) and every late holder whose mount the
// rebuilt cluster refused; run again on a rebuilt cluster it adopts late
// holders. Run scans them, merges their records (MergeWith), and unless
// o.DryRun sends the plan through the leader: RebuildBegin, the batches
// of RebuildAdopt, then RebuildBegin with Finish, after which the lost
// cluster's holders may mount. The report comes back also with an error
// once anything was sent, saying how far it got; a rerun resumes.
func Run(env Env, o RunOptions) (*Report, error) {
	if o.Batch < 1 || o.Batch > fsm.MaxRebuildItems {
		return nil, fmt.Errorf("--batch %d is outside 1..%d", o.Batch, fsm.MaxRebuildItems)
	}
	start := time.Now()
	endpoints := append([]string(nil), o.Holders...)
	var segs api.ListSegmentsResponse
	if err := env.Call(api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		return nil, fmt.Errorf("list the segments of this cluster: %w", err)
	}
	for _, s := range segs.Segments {
		if !s.Retired && s.Endpoint != "" {
			endpoints = append(endpoints, s.Endpoint)
		}
	}
	// Late holders the rebuilt cluster refused are the ones a rerun adopts.
	for _, r := range segs.Refused {
		if r.Endpoint != "" {
			endpoints = append(endpoints, r.Endpoint)
		}
	}
	var st api.StatusResponse
	if err := env.Call(api.MethodStatus, &api.Empty{}, &st); err != nil {
		return nil, fmt.Errorf("status of this cluster: %w", err)
	}
	rerun := st.Rebuild != nil && st.Rebuild.Finished
	var ownAbove uint64
	if rerun {
		if st.Rebuild.IncBase == 0 {
			return nil, errors.New("this cluster serves a rebuilt table but its leader reports no incarnation base (an older master): upgrade every master before a rerun")
		}
		ownAbove = st.Rebuild.IncBase
	}
	if st.Rebuild != nil && st.Rebuild.Closed {
		return nil, fmt.Errorf("the adoption window of the rebuild of cluster %016x is closed (operator rebuild --close): nothing more can be adopted; retire late holders (operator retire) or wipe them", st.Rebuild.Cluster)
	}
	endpoints = dedupe(endpoints)
	if len(endpoints) == 0 && o.DFSRoot == "" {
		return nil, errors.New("no holder to scan: name them with --holders, or start the lost cluster's holders against this cluster's masters")
	}
	cc := env.Holders
	cc.MaxFrame = client.DataMaxFrame
	pool := transport.NewPool(cc)
	defer pool.Close()

	prog := NewRunProgress(env.Progress, env.JSONProgress)
	rep := &Report{DryRun: o.DryRun, Rerun: rerun, HoldersMissing: []string{}, SegmentsMissing: []string{}, Scanned: []ReportHolder{},
		Conflicts: []ReportConflict{}, Failures: []ReportFailure{}}
	dfsOpt, err := loadDFSRoot(env.Call, o, rep)
	if err != nil {
		return nil, err
	}
	var scans []Scan
	records := 0
	prog.Scan(0, len(endpoints), 0)
	for i, ep := range endpoints {
		s, err := ScanHolder(pool, ep, env.Timeout)
		if err != nil {
			if !o.AllowMissing {
				prog.Abort()
				return nil, fmt.Errorf("holder %s: %w (start it and rerun, or pass --allow-missing)", ep, err)
			}
			fmt.Fprintf(env.Progress.W, "rebuild: holder %s does not answer, going on without it: %v\n", ep, err)
			rep.HoldersMissing = append(rep.HoldersMissing, ep)
		} else {
			scans = append(scans, s)
			records += len(s.Records)
		}
		prog.Scan(i+1, len(endpoints), records)
	}
	prog.Done()
	rep.HoldersScanned = len(scans)
	plan, err := MergeWith(scans, Options{
		Verify: func(key string, inc api.ObjectIncarnation, c Copy) bool {
			return VerifyCopy(pool, key, inc, c, env.Timeout)
		},
		OwnAbove:     ownAbove,
		AllowMissing: o.AllowSegments,
		DFS:          dfsOpt,
	})
	if err != nil {
		return nil, err
	}
	rep.describe(plan)
	if o.DryRun {
		rep.listPlan(plan)
		rep.Seconds = time.Since(start).Seconds()
		return rep, nil
	}

	if err := writeDFSKills(o.DFSRoot, plan); err != nil {
		return rep, err
	}
	var begin api.RebuildBeginResponse
	if err := env.callRetrying(api.MethodRebuildBegin, &api.RebuildBeginRequest{ClusterID: plan.ClusterID, IncFloor: plan.IncFloor, Segments: plan.Segments}, &begin); err != nil {
		return rep, fmt.Errorf("adopt cluster %016x: %w", plan.ClusterID, err)
	}
	rep.IncBase = begin.IncBase
	total := len(plan.Objects) + len(plan.Deletes)
	done, bytes := 0, int64(0)
	prog.Adopt(0, total, 0, plan.Bytes)
	for _, b := range plan.Batches(o.Batch) {
		var resp api.RebuildAdoptResponse
		if err := env.callRetrying(api.MethodRebuildAdopt, &api.RebuildAdoptRequest{ClusterID: plan.ClusterID, Objects: b.Objects, Deletes: b.Deletes}, &resp); err != nil {
			prog.Abort()
			rep.Seconds = time.Since(start).Seconds()
			return rep, fmt.Errorf("adopt (after %d of %d items; rerun to resume): %w", done, total, err)
		}
		if len(resp.Objects) != len(b.Objects) || len(resp.Deletes) != len(b.Deletes) {
			prog.Abort()
			return rep, fmt.Errorf("adopt: the leader answered %d+%d results for %d+%d items", len(resp.Objects), len(resp.Deletes), len(b.Objects), len(b.Deletes))
		}
		for i, r := range resp.Objects {
			rep.tally(r, b.Objects[i].Key, b.Objects[i].Incarnation, "")
			bytes += b.Objects[i].Size
		}
		for i, r := range resp.Deletes {
			rep.tally(r, b.Deletes[i].Key, b.Deletes[i].Incarnation, b.Deletes[i].Segment)
		}
		done += len(b.Objects) + len(b.Deletes)
		prog.Adopt(done, total, bytes, plan.Bytes)
	}
	prog.Done()
	// Only now may the lost cluster's holders mount: none reconciles
	// against a table that is still being filled.
	var fin api.RebuildBeginResponse
	if err := env.callRetrying(api.MethodRebuildBegin, &api.RebuildBeginRequest{ClusterID: plan.ClusterID, IncFloor: plan.IncFloor, Segments: plan.Segments, Finish: true}, &fin); err != nil {
		return rep, fmt.Errorf("take over cluster id %016x (every item was adopted; rerun to finish): %w", plan.ClusterID, err)
	}
	rep.IncBase = fin.IncBase
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// Close ends the adoption window of a finished rebuild (`operator rebuild
// --close`): late holders of the lost cluster can then only be retired or
// wiped.
func Close(env Env) (CloseReport, error) {
	var st api.StatusResponse
	if err := env.Call(api.MethodStatus, &api.Empty{}, &st); err != nil {
		return CloseReport{}, fmt.Errorf("status: %w", err)
	}
	if st.Rebuild == nil {
		return CloseReport{}, errors.New("this cluster was never rebuilt; nothing to close")
	}
	var resp api.RebuildCloseResponse
	if err := env.callRetrying(api.MethodRebuildClose, &api.RebuildCloseRequest{ClusterID: st.Rebuild.Cluster}, &resp); err != nil {
		return CloseReport{}, err
	}
	return CloseReport{ClusterID: clusterHex(st.Rebuild.Cluster), Closed: true, Already: resp.Already}, nil
}

// callRetrying calls a master method and, when the outcome is unknown or
// the cluster has no leader for a moment (a leader change), calls again:
// the rebuild commands are idempotent, so a repeat cannot act twice. It
// gives up after four times the timeout.
func (env Env) callRetrying(method string, req, resp any) error {
	deadline := time.Now().Add(4 * env.Timeout)
	for {
		err := env.Call(method, req, resp)
		if err == nil {
			return nil
		}
		switch api.CodeOf(err) {
		case api.CodeNotLeader, api.CodeUnavailable, api.CodeTimeout, api.CodeOutcomeUnknown, "":
		default:
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		fmt.Fprintf(env.Progress.W, "rebuild: %s: %v; retrying\n", method, err)
		time.Sleep(500 * time.Millisecond)
	}
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
