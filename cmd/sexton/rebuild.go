package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"strings"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm"
	"sexton/internal/progress"
	"sexton/rebuild"
	"sexton/transport"
)

// setupRebuild is `operator rebuild`: a freshly bootstrapped, empty
// cluster takes over the cluster whose masters all lost their state,
// from the records its holders keep (docs/DESIGN.md §11; package rebuild has
// the rules). Holders are the ones named by --holders plus every segment
// endpoint this cluster knows (a holder of the lost cluster pointed at
// the new masters tries to mount, which registers it, and refuses to
// follow until the cluster id is adopted) and every late holder whose
// mount the rebuilt cluster refused. Run again on the rebuilt cluster it
// adopts late holders; --close ends that window.
func setupRebuild(fs *flag.FlagSet) runFunc {
	holders := fs.String("holders", "", "holder data addresses A,B,C to scan, besides the holders that tried to mount this cluster")
	dryRun := fs.Bool("dry-run", false, "print what would be adopted, dropped and deleted; change nothing")
	allowMissing := fs.Bool("allow-missing", false, "go on when a holder address does not answer (its segment must then be named by --allow-missing-segments if other holders know it)")
	allowSegs := fs.String("allow-missing-segments", "", "segment ids S1,S2 the holders' records name that are not scanned: lost for good, or to be adopted later by a rerun; their copies are not adopted now")
	closeWindow := fs.Bool("close", false, "end the adoption window of a finished rebuild: late holders of the lost cluster can then only be retired or wiped")
	batch := fs.Int("batch", 512, fmt.Sprintf("items per Raft entry (1 to %d)", fsm.MaxRebuildItems))
	dfsRoot := fs.String("dfs-root", envString(dfsio.EnvRoot, ""), "the lost cluster's DFS root, whose range records the rebuild adopts DFS replicas from (env "+dfsio.EnvRoot+")")
	dfsDrop := fs.Bool("dfs-drop", false, "adopt nothing from the DFS root: objects that had only DFS replicas are lost")
	return func(e *env, _ []string) error {
		if *closeWindow {
			return closeRebuild(e)
		}
		if *batch < 1 || *batch > fsm.MaxRebuildItems {
			return fmt.Errorf("rebuild: --batch %d is outside 1..%d", *batch, fsm.MaxRebuildItems)
		}
		var allow []api.SegmentID
		for _, s := range splitList(*allowSegs) {
			allow = append(allow, api.SegmentID(s))
		}
		rep, err := runRebuild(e, rebuildOptions{holders: splitList(*holders), dryRun: *dryRun, allowMissing: *allowMissing, allowSegments: allow, batch: *batch, dfsRoot: *dfsRoot, dfsDrop: *dfsDrop})
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

type rebuildOptions struct {
	holders       []string
	dryRun        bool
	allowMissing  bool
	allowSegments []api.SegmentID
	batch         int
	dfsRoot       string
	dfsDrop       bool
}

// closeRebuild is `operator rebuild --close`.
func closeRebuild(e *env) error {
	var st api.StatusResponse
	if err := e.call(api.MethodStatus, &api.Empty{}, &st); err != nil {
		return fmt.Errorf("rebuild --close: status: %w", err)
	}
	if st.Rebuild == nil {
		return errors.New("rebuild --close: this cluster was never rebuilt; nothing to close")
	}
	var resp api.RebuildCloseResponse
	if err := callRetrying(e, api.MethodRebuildClose, &api.RebuildCloseRequest{ClusterID: st.Rebuild.Cluster}, &resp); err != nil {
		return fmt.Errorf("rebuild --close: %w", err)
	}
	out := rebuildCloseOut{ClusterID: fmt.Sprintf("%016x", st.Rebuild.Cluster), Closed: true, Already: resp.Already}
	return e.output(out, func() error {
		what := "closed"
		if resp.Already {
			what = "was already closed"
		}
		fmt.Printf("the adoption window of the rebuild of cluster %s %s: late holders of the lost cluster can now only be retired or wiped\n", out.ClusterID, what)
		return nil
	})
}

// rebuildCloseOut is `operator rebuild --close --json`.
type rebuildCloseOut struct {
	ClusterID string `json:"cluster_id"`
	Closed    bool   `json:"closed"`
	Already   bool   `json:"already"`
}

// rebuildReport is the verb's answer (--json: this object on stdout).
type rebuildReport struct {
	DryRun    bool   `json:"dry_run"`
	ClusterID string `json:"cluster_id"`
	// Rerun: the cluster already serves the rebuilt table (a late
	// holder's adoption): its own copies are left to its table.
	Rerun           bool               `json:"rerun"`
	IncMaxSeen      uint64             `json:"incarnation_max_seen"`
	IncFloor        uint64             `json:"incarnation_floor"`
	IncBase         uint64             `json:"incarnation_base"`
	HoldersScanned  int                `json:"holders_scanned"`
	Scanned         []rebuildHolderOut `json:"scanned"`
	HoldersMissing  []string           `json:"holders_missing"`
	SegmentsMissing []string           `json:"segments_missing"`
	Records         int                `json:"records"`
	Keys            int                `json:"keys"`
	Bytes           int64              `json:"bytes"`
	Deletes         int                `json:"deletes"`
	// Own counts the keys a rerun left to the serving cluster: every copy
	// of them is one it issued itself (package rebuild, Options.OwnAbove).
	Own           int                 `json:"own_keys"`
	Dropped       int                 `json:"dropped"`
	LegacyRecords int                 `json:"legacy_records"`
	Conflicts     []rebuildConflict   `json:"conflicts"`
	Adopted       int                 `json:"adopted"`
	Already       int                 `json:"already"`
	Superseded    int                 `json:"superseded"`
	TasksCreated  int                 `json:"tasks_created"`
	Failed        int                 `json:"failed"`
	Failures      []rebuildFailure    `json:"failures"`
	Seconds       float64             `json:"seconds"`
	Adopt         []rebuildAdoptOut   `json:"adopt,omitempty"`  // --dry-run
	Delete        []rebuildDeleteOut  `json:"delete,omitempty"` // --dry-run
	Drop          []rebuildDroppedOut `json:"drop,omitempty"`   // --dry-run
	DFSRoot       string              `json:"dfs_root,omitempty"`
	DFSFiles      []rebuildDFSFile    `json:"dfs_files,omitempty"`
	// DFSRecords counts the DFS root's range records, DFSTorn its frames
	// that did not check out, DFSAdopted the objects given a DFS replica;
	// DFSDropped says --dfs-drop adopted nothing from the root.
	DFSRecords  int                  `json:"dfs_records,omitempty"`
	DFSTorn     int                  `json:"dfs_torn,omitempty"`
	DFSAdopted  int                  `json:"dfs_adopted,omitempty"`
	DFSRejected []rebuildDFSRejected `json:"dfs_rejected,omitempty"`
	DFSDropped  bool                 `json:"dfs_dropped,omitempty"`
	// DFSKilled counts the removal records the rebuild wrote for the put
	// records it did not adopt (a dry run: would write).
	DFSKilled int `json:"dfs_killed,omitempty"`
}

// rebuildHolderOut is one scanned holder.
type rebuildHolderOut struct {
	Endpoint string `json:"endpoint"`
	Segment  string `json:"segment"`
	Pool     string `json:"pool"`
	Records  int    `json:"records"`
}

type rebuildConflict struct {
	Key         string   `json:"key"`
	Incarnation string   `json:"incarnation"`
	Segments    []string `json:"segments"`
	Verified    []string `json:"verified"`
	Kept        []string `json:"kept"`
}

type rebuildFailure struct {
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
	Segment     string `json:"segment,omitempty"`
	Error       string `json:"error"`
}

type rebuildAdoptOut struct {
	Key         string   `json:"key"`
	Incarnation string   `json:"incarnation"`
	Size        int64    `json:"size"`
	Segments    []string `json:"segments"`
}

type rebuildDeleteOut struct {
	Segment     string `json:"segment"`
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
}

type rebuildDroppedOut struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

func segStrings(ids []api.SegmentID) []string {
	out := make([]string, 0, len(ids))
	for _, s := range ids {
		out = append(out, string(s))
	}
	return out
}

func runRebuild(e *env, o rebuildOptions) (*rebuildReport, error) {
	start := time.Now()
	endpoints := append([]string(nil), o.holders...)
	var segs api.ListSegmentsResponse
	if err := e.call(api.MethodListSegments, &api.Empty{}, &segs); err != nil {
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
	if err := e.call(api.MethodStatus, &api.Empty{}, &st); err != nil {
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
	if len(endpoints) == 0 && o.dfsRoot == "" {
		return nil, errors.New("no holder to scan: name them with --holders, or start the lost cluster's holders against this cluster's masters")
	}
	cc, err := e.clientConfig()
	if err != nil {
		return nil, err
	}
	cc.MaxFrame = dataMaxFrame
	pool := transport.NewPool(cc)
	defer pool.Close()

	prog := newRebuildProgress(e.json)
	rep := &rebuildReport{DryRun: o.dryRun, Rerun: rerun, HoldersMissing: []string{}, SegmentsMissing: []string{}, Scanned: []rebuildHolderOut{},
		Conflicts: []rebuildConflict{}, Failures: []rebuildFailure{}}
	dfsOpt, err := loadRebuildDFS(e, o, rep)
	if err != nil {
		return nil, err
	}
	var scans []rebuild.Scan
	records := 0
	prog.scan(0, len(endpoints), 0)
	for i, ep := range endpoints {
		s, err := rebuild.ScanHolder(pool, ep, e.timeout)
		if err != nil {
			if !o.allowMissing {
				prog.abort()
				return nil, fmt.Errorf("holder %s: %w (start it and rerun, or pass --allow-missing)", ep, err)
			}
			fmt.Fprintf(progressTo.W, "rebuild: holder %s does not answer, going on without it: %v\n", ep, err)
			rep.HoldersMissing = append(rep.HoldersMissing, ep)
		} else {
			scans = append(scans, s)
			records += len(s.Records)
		}
		prog.scan(i+1, len(endpoints), records)
	}
	prog.done()
	rep.HoldersScanned = len(scans)
	plan, err := rebuild.MergeWith(scans, rebuild.Options{
		Verify: func(key string, inc api.ObjectIncarnation, c rebuild.Copy) bool {
			return rebuild.VerifyCopy(pool, key, inc, c, e.timeout)
		},
		OwnAbove:     ownAbove,
		AllowMissing: o.allowSegments,
		DFS:          dfsOpt,
	})
	if err != nil {
		return nil, err
	}
	rep.ClusterID = fmt.Sprintf("%016x", plan.ClusterID)
	reportRebuildDFS(plan, rep)
	for _, h := range plan.Scanned {
		rep.Scanned = append(rep.Scanned, rebuildHolderOut{Endpoint: h.Endpoint, Segment: string(h.Segment), Pool: h.Pool, Records: h.Records})
	}
	rep.SegmentsMissing = append(rep.SegmentsMissing, segStrings(plan.Missing)...)
	rep.IncMaxSeen = plan.MaxSeen
	rep.IncFloor, rep.Records, rep.Keys, rep.Bytes = plan.IncFloor, plan.Records, len(plan.Objects), plan.Bytes
	rep.Deletes, rep.Dropped, rep.LegacyRecords = len(plan.Deletes), len(plan.Dropped), plan.Legacy
	rep.Own = plan.Own
	for _, c := range plan.Conflicts {
		var all []api.SegmentID
		for _, cp := range c.Copies {
			all = append(all, cp.Segment)
		}
		rep.Conflicts = append(rep.Conflicts, rebuildConflict{Key: c.Key, Incarnation: c.Incarnation.String(),
			Segments: segStrings(all), Verified: segStrings(c.Verified), Kept: segStrings(c.Kept)})
	}
	if o.dryRun {
		rep.Adopt, rep.Delete, rep.Drop = []rebuildAdoptOut{}, []rebuildDeleteOut{}, []rebuildDroppedOut{}
		for _, ob := range plan.Objects {
			ss := []string{}
			for _, r := range ob.Replicas {
				if r.DFS != nil {
					ss = append(ss, fmt.Sprintf("dfs:%s@%d", r.DFS.Path, r.DFS.Offset))
					continue
				}
				ss = append(ss, string(r.Segment))
			}
			rep.Adopt = append(rep.Adopt, rebuildAdoptOut{Key: ob.Key, Incarnation: ob.Incarnation.String(), Size: ob.Size, Segments: ss})
		}
		for _, d := range plan.Deletes {
			rep.Delete = append(rep.Delete, rebuildDeleteOut{Segment: string(d.Segment), Key: d.Key, Incarnation: d.Incarnation.String()})
		}
		for _, d := range plan.Dropped {
			rep.Drop = append(rep.Drop, rebuildDroppedOut(d))
		}
		rep.Seconds = time.Since(start).Seconds()
		return rep, nil
	}

	if err := writeRebuildDFSKills(o, plan, rep); err != nil {
		return rep, err
	}
	var begin api.RebuildBeginResponse
	if err := callRetrying(e, api.MethodRebuildBegin, &api.RebuildBeginRequest{ClusterID: plan.ClusterID, IncFloor: plan.IncFloor, Segments: plan.Segments}, &begin); err != nil {
		return rep, fmt.Errorf("adopt cluster %016x: %w", plan.ClusterID, err)
	}
	rep.IncBase = begin.IncBase
	total := len(plan.Objects) + len(plan.Deletes)
	done, bytes := 0, int64(0)
	prog.adopt(0, total, 0, plan.Bytes)
	for _, b := range plan.Batches(o.batch) {
		var resp api.RebuildAdoptResponse
		if err := callRetrying(e, api.MethodRebuildAdopt, &api.RebuildAdoptRequest{ClusterID: plan.ClusterID, Objects: b.Objects, Deletes: b.Deletes}, &resp); err != nil {
			prog.abort()
			rep.Seconds = time.Since(start).Seconds()
			return rep, fmt.Errorf("adopt (after %d of %d items; rerun to resume): %w", done, total, err)
		}
		if len(resp.Objects) != len(b.Objects) || len(resp.Deletes) != len(b.Deletes) {
			prog.abort()
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
		prog.adopt(done, total, bytes, plan.Bytes)
	}
	prog.done()
	// Only now may the lost cluster's holders mount: none reconciles
	// against a table that is still being filled.
	var fin api.RebuildBeginResponse
	if err := callRetrying(e, api.MethodRebuildBegin, &api.RebuildBeginRequest{ClusterID: plan.ClusterID, IncFloor: plan.IncFloor, Segments: plan.Segments, Finish: true}, &fin); err != nil {
		return rep, fmt.Errorf("take over cluster id %016x (every item was adopted; rerun to finish): %w", plan.ClusterID, err)
	}
	rep.IncBase = fin.IncBase
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func (r *rebuildReport) tally(res api.RebuildItemResult, key string, inc api.ObjectIncarnation, seg api.SegmentID) {
	r.TasksCreated += res.Tasks
	switch res.Outcome {
	case api.RebuildOutcomeAdopted:
		r.Adopted++
	case api.RebuildOutcomeAlready:
		r.Already++
	case api.RebuildOutcomeSuperseded:
		r.Superseded++
	default:
		r.Failed++
		msg := "failed"
		if res.Err != nil {
			msg = res.Err.Error()
		}
		r.Failures = append(r.Failures, rebuildFailure{Key: key, Incarnation: inc.String(), Segment: string(seg), Error: msg})
	}
}

// callRetrying calls a master method and, when the outcome is unknown or
// the cluster has no leader for a moment (a leader change), calls again:
// the rebuild commands are idempotent, so a repeat cannot act twice. It
// gives up after four times --timeout.
func callRetrying(e *env, method string, req, resp any) error {
	deadline := time.Now().Add(4 * e.timeout)
	for {
		err := e.call(method, req, resp)
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
		fmt.Fprintf(progressTo.W, "rebuild: %s: %v; retrying\n", method, err)
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

func printRebuild(r *rebuildReport) {
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

// rebuildProgress reports the scan and the adoption on stderr: a bar on a
// terminal, a plain line every progressTo.PlainEvery otherwise, and with --json one
// JSON object per line (stdout keeps the one report object).
type rebuildProgress struct {
	json  bool
	w     io.Writer
	start time.Time
	last  time.Time
	bar   *progress.Bar
	phase string
	line  rebuildProgressLine
}

// rebuildProgressLine is one --json progress line.
type rebuildProgressLine struct {
	Phase          string `json:"phase"`
	HoldersScanned int    `json:"holders_scanned"`
	HoldersTotal   int    `json:"holders_total"`
	Records        int    `json:"records"`
	ItemsDone      int    `json:"items_done"`
	ItemsTotal     int    `json:"items_total"`
	BytesDone      int64  `json:"bytes_done"`
	BytesTotal     int64  `json:"bytes_total"`
	ElapsedMillis  int64  `json:"elapsed_ms"`
	LeftMillis     int64  `json:"left_ms"`
}

func newRebuildProgress(asJSON bool) *rebuildProgress {
	now := time.Now()
	return &rebuildProgress{json: asJSON, w: progressTo.W, start: now, last: now}
}

func (p *rebuildProgress) enter(phase string, total int64, unit string) {
	if p.phase == phase {
		return
	}
	p.done()
	p.phase, p.start, p.last = phase, time.Now(), time.Now()
	p.line = rebuildProgressLine{Phase: phase}
	if !p.json && progressTo.Terminal {
		p.bar = progressTo.New("rebuild "+phase, total, unit)
	}
}

func (p *rebuildProgress) scan(done, total, records int) {
	p.enter("scan", int64(total), "holders")
	p.line.HoldersScanned, p.line.HoldersTotal, p.line.Records = done, total, records
	p.report(int64(done), int64(total), fmt.Sprintf("%d of %d holders scanned, %d records", done, total, records))
}

func (p *rebuildProgress) adopt(done, total int, bytes, totalBytes int64) {
	p.enter("adopt", int64(total), "items")
	p.line.ItemsDone, p.line.ItemsTotal, p.line.BytesDone, p.line.BytesTotal = done, total, bytes, totalBytes
	p.report(int64(done), int64(total), fmt.Sprintf("%d of %d items, %.1f of %.1f MiB", done, total, float64(bytes)/(1<<20), float64(totalBytes)/(1<<20)))
}

func (p *rebuildProgress) report(done, total int64, text string) {
	elapsed := time.Since(p.start)
	p.line.ElapsedMillis = elapsed.Milliseconds()
	p.line.LeftMillis = 0
	if done > 0 && total > done {
		p.line.LeftMillis = int64(float64(elapsed.Milliseconds()) * float64(total-done) / float64(done))
	}
	if p.bar != nil {
		p.bar.Describe("rebuild " + p.phase + ": " + text)
		if d := done - p.bar.Done(); d > 0 {
			p.bar.Add(d)
		}
		return
	}
	final := done == total
	if !final && time.Since(p.last) < progressTo.PlainEvery && !(p.json && time.Since(p.last) >= time.Second) {
		return
	}
	p.last = time.Now()
	if p.json {
		b, err := json.Marshal(p.line)
		if err == nil {
			fmt.Fprintf(p.w, "%s\n", b)
		}
		return
	}
	fmt.Fprintf(p.w, "rebuild %s: %s, %s left\n", p.phase, text, (time.Duration(p.line.LeftMillis) * time.Millisecond).Round(time.Second))
}

func (p *rebuildProgress) done() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

func (p *rebuildProgress) abort() {
	if p.bar != nil {
		p.bar.Abort()
		p.bar = nil
	}
}
