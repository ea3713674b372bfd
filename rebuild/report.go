package rebuild

import (
	"fmt"

	"sexton/api"
)

// Report is what Run did or, for a dry run, would do: `sexton operator
// rebuild --json` prints it as it is (snake_case keys, lists never null).
type Report struct {
	DryRun    bool   `json:"dry_run"`
	ClusterID string `json:"cluster_id"`
	// Rerun: the cluster already serves the rebuilt table (a late
	// holder's adoption): its own copies are left to its table.
	Rerun           bool           `json:"rerun"`
	IncMaxSeen      uint64         `json:"incarnation_max_seen"`
	IncFloor        uint64         `json:"incarnation_floor"`
	IncBase         uint64         `json:"incarnation_base"`
	HoldersScanned  int            `json:"holders_scanned"`
	Scanned         []ReportHolder `json:"scanned"`
	HoldersMissing  []string       `json:"holders_missing"`
	SegmentsMissing []string       `json:"segments_missing"`
	Records         int            `json:"records"`
	Keys            int            `json:"keys"`
	Bytes           int64          `json:"bytes"`
	Deletes         int            `json:"deletes"`
	// Own counts the keys a rerun left to the serving cluster: every copy
	// of them is one it issued itself (Options.OwnAbove).
	Own           int              `json:"own_keys"`
	Dropped       int              `json:"dropped"`
	LegacyRecords int              `json:"legacy_records"`
	Conflicts     []ReportConflict `json:"conflicts"`
	Adopted       int              `json:"adopted"`
	Already       int              `json:"already"`
	Superseded    int              `json:"superseded"`
	TasksCreated  int              `json:"tasks_created"`
	Failed        int              `json:"failed"`
	Failures      []ReportFailure  `json:"failures"`
	Seconds       float64          `json:"seconds"`
	Adopt         []ReportAdopt    `json:"adopt,omitempty"`  // dry run
	Delete        []ReportDelete   `json:"delete,omitempty"` // dry run
	Drop          []ReportDrop     `json:"drop,omitempty"`   // dry run
	DFSRoot       string           `json:"dfs_root,omitempty"`
	DFSFiles      []ReportDFSFile  `json:"dfs_files,omitempty"`
	// DFSRecords counts the DFS root's range records, DFSTorn its frames
	// that did not check out, DFSAdopted the objects given a DFS replica;
	// DFSDropped says RunOptions.DFSDrop adopted nothing from the root.
	DFSRecords  int                 `json:"dfs_records,omitempty"`
	DFSTorn     int                 `json:"dfs_torn,omitempty"`
	DFSAdopted  int                 `json:"dfs_adopted,omitempty"`
	DFSRejected []ReportDFSRejected `json:"dfs_rejected,omitempty"`
	DFSDropped  bool                `json:"dfs_dropped,omitempty"`
	// DFSKilled counts the removal records the rebuild wrote for the put
	// records it did not adopt (a dry run: would write).
	DFSKilled int `json:"dfs_killed,omitempty"`
}

// ReportHolder is one scanned holder.
type ReportHolder struct {
	Endpoint string `json:"endpoint"`
	Segment  string `json:"segment"`
	Pool     string `json:"pool"`
	Records  int    `json:"records"`
}

// ReportConflict is a key whose copies of the winning incarnation differ.
type ReportConflict struct {
	Key         string   `json:"key"`
	Incarnation string   `json:"incarnation"`
	Segments    []string `json:"segments"`
	Verified    []string `json:"verified"`
	Kept        []string `json:"kept"`
}

// ReportFailure is an item the leader did not adopt.
type ReportFailure struct {
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
	Segment     string `json:"segment,omitempty"`
	Error       string `json:"error"`
}

// ReportAdopt is an object a dry run would adopt.
type ReportAdopt struct {
	Key         string   `json:"key"`
	Incarnation string   `json:"incarnation"`
	Size        int64    `json:"size"`
	Segments    []string `json:"segments"`
}

// ReportDelete is a copy a dry run would make a delete task of.
type ReportDelete struct {
	Segment     string `json:"segment"`
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
}

// ReportDrop is a key a dry run would give no place in the table.
type ReportDrop struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// ReportDFSFile is one allocator file below the DFS root.
type ReportDFSFile struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// ReportDFSRejected is a put record the rebuild did not adopt although
// nothing removed it.
type ReportDFSRejected struct {
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
	Path        string `json:"path"`
	Offset      int64  `json:"offset"`
	Reason      string `json:"reason"`
}

// CloseReport is what Close did (`operator rebuild --close --json`).
type CloseReport struct {
	ClusterID string `json:"cluster_id"`
	Closed    bool   `json:"closed"`
	Already   bool   `json:"already"`
}

func (r *Report) tally(res api.RebuildItemResult, key string, inc api.ObjectIncarnation, seg api.SegmentID) {
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
		r.Failures = append(r.Failures, ReportFailure{Key: key, Incarnation: inc.String(), Segment: string(seg), Error: msg})
	}
}

// describe fills the report from the plan: what was scanned and decided.
func (r *Report) describe(plan *Plan) {
	r.ClusterID = clusterHex(plan.ClusterID)
	r.DFSAdopted, r.DFSKilled = plan.DFSAdopted, len(plan.DFSKills)
	for _, x := range plan.DFSRejected {
		r.DFSRejected = append(r.DFSRejected, ReportDFSRejected{Key: x.Key, Incarnation: x.Incarnation.String(), Path: x.Path, Offset: x.Offset, Reason: x.Reason})
	}
	for _, h := range plan.Scanned {
		r.Scanned = append(r.Scanned, ReportHolder{Endpoint: h.Endpoint, Segment: string(h.Segment), Pool: h.Pool, Records: h.Records})
	}
	r.SegmentsMissing = append(r.SegmentsMissing, segStrings(plan.Missing)...)
	r.IncMaxSeen = plan.MaxSeen
	r.IncFloor, r.Records, r.Keys, r.Bytes = plan.IncFloor, plan.Records, len(plan.Objects), plan.Bytes
	r.Deletes, r.Dropped, r.LegacyRecords = len(plan.Deletes), len(plan.Dropped), plan.Legacy
	r.Own = plan.Own
	for _, c := range plan.Conflicts {
		var all []api.SegmentID
		for _, cp := range c.Copies {
			all = append(all, cp.Segment)
		}
		r.Conflicts = append(r.Conflicts, ReportConflict{Key: c.Key, Incarnation: c.Incarnation.String(),
			Segments: segStrings(all), Verified: segStrings(c.Verified), Kept: segStrings(c.Kept)})
	}
}

// listPlan fills a dry run's lists: every item the plan would send.
func (r *Report) listPlan(plan *Plan) {
	r.Adopt, r.Delete, r.Drop = []ReportAdopt{}, []ReportDelete{}, []ReportDrop{}
	for _, ob := range plan.Objects {
		ss := []string{}
		for _, rp := range ob.Replicas {
			if rp.DFS != nil {
				ss = append(ss, fmt.Sprintf("dfs:%s@%d", rp.DFS.Path, rp.DFS.Offset))
				continue
			}
			ss = append(ss, string(rp.Segment))
		}
		r.Adopt = append(r.Adopt, ReportAdopt{Key: ob.Key, Incarnation: ob.Incarnation.String(), Size: ob.Size, Segments: ss})
	}
	for _, d := range plan.Deletes {
		r.Delete = append(r.Delete, ReportDelete{Segment: string(d.Segment), Key: d.Key, Incarnation: d.Incarnation.String()})
	}
	for _, d := range plan.Dropped {
		r.Drop = append(r.Drop, ReportDrop(d))
	}
}

func segStrings(ids []api.SegmentID) []string {
	out := make([]string, 0, len(ids))
	for _, s := range ids {
		out = append(out, string(s))
	}
	return out
}

// clusterHex is a cluster id as the reports show it: 16 hex digits.
func clusterHex(id uint64) string { return fmt.Sprintf("%016x", id) }
