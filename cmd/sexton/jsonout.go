package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"sexton/api"
	"sexton/holder"
)

// The --json outputs (docs/CLI.md): snake_case keys everywhere, lists as
// [] never null, incarnations as "HIGH:LOW" (what stat prints and rm
// --if-incarnation takes), times as unix nanoseconds. api types without
// json tags get an output struct here rather than tags in api. printJSON
// checks every output against the first two rules before printing it
// (checkJSON), so a field added without a tag, or a nil list, fails the
// verb's test instead of reaching a script.

// snakeKey is what every object key in a --json output looks like.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// checkJSON walks an encoded output: every object key snake_case, no null
// anywhere (a list is [], an absent optional field is omitted). The error
// names the first offender by its path, e.g. $.tasks[0].Key.
func checkJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return walkJSON("$", v)
}

func walkJSON(path string, v any) error {
	switch v := v.(type) {
	case nil:
		return fmt.Errorf("%s is null (want [] for a list, or the field omitted)", path)
	case map[string]any:
		for k, e := range v {
			if !snakeKey.MatchString(k) {
				return fmt.Errorf("%s: key %q is not snake_case", path, k)
			}
			if err := walkJSON(path+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := walkJSON(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	}
	return nil
}

type objectOut struct {
	Key         string       `json:"key"`
	Tenant      string       `json:"tenant"`
	Size        int64        `json:"size"`
	Incarnation string       `json:"incarnation"`
	Created     int64        `json:"created"`
	Replicas    []replicaOut `json:"replicas"`
}

type replicaOut struct {
	Kind     string   `json:"kind"`
	Segment  string   `json:"segment,omitempty"`
	Pool     string   `json:"pool,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"`
	DFS      *dfsDesc `json:"dfs,omitempty"`
}

type dfsDesc struct {
	Allocator   string `json:"allocator"`
	Path        string `json:"path"`
	Unit        uint64 `json:"unit"`
	Offset      int64  `json:"offset"`
	Size        int64  `json:"size"`
	AlignedSize int64  `json:"aligned_size"`
}

func objectJSON(o api.ObjectInfo) objectOut {
	out := objectOut{Key: o.Key, Tenant: o.Tenant, Size: o.Size, Incarnation: o.Incarnation.String(), Created: o.Created, Replicas: []replicaOut{}}
	for _, r := range o.Replicas {
		ro := replicaOut{Kind: r.Kind.String(), Segment: string(r.Segment), Pool: r.Pool, Endpoint: r.Endpoint}
		if d := r.DFS; d != nil {
			ro.DFS = &dfsDesc{Allocator: d.Allocator, Path: d.Path, Unit: d.UnitID, Offset: d.Offset, Size: d.Size, AlignedSize: d.AlignedSize}
		}
		out.Replicas = append(out.Replicas, ro)
	}
	return out
}

func objectsJSON(objs []api.ObjectInfo) []objectOut {
	out := []objectOut{}
	for _, o := range objs {
		out = append(out, objectJSON(o))
	}
	return out
}

// statOut is stat's answer. Object is omitted when the key has no value
// (it was removed and delete tasks of it are still pending); Deletes are
// those tasks, of any incarnation.
type statOut struct {
	Object         *objectOut `json:"object,omitempty"`
	PendingPut     string     `json:"pending_put,omitempty"`
	PendingDeletes int        `json:"pending_deletes"`
	Deletes        []taskOut  `json:"deletes"`
}

func statJSON(st api.StatResponse, found bool, deletes api.ListTasksResponse, now time.Time) statOut {
	out := statOut{PendingDeletes: st.PendingDeletes, Deletes: tasksJSON(deletes, now).Tasks}
	if found {
		o := objectJSON(st.Object)
		out.Object = &o
	} else {
		out.PendingDeletes = deletes.Total
	}
	if st.PendingPut != nil {
		out.PendingPut = st.PendingPut.String()
	}
	return out
}

// taskOut is one pending delete task; the fields after created are the
// leader's view of it (api.TaskProgress), absent from an older master.
type taskOut struct {
	ID          uint64 `json:"id"`
	Segment     string `json:"segment"`
	Key         string `json:"key"`
	Tenant      string `json:"tenant,omitempty"`
	Incarnation string `json:"incarnation"`
	Created     int64  `json:"created"`
	AgeMs       int64  `json:"age_ms,omitempty"` // omitted when Created is unknown (0)
	State       string `json:"state,omitempty"`
	Holder      string `json:"holder,omitempty"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
	LastGiven   int64  `json:"last_given,omitempty"`
	LeaseEnd    int64  `json:"lease_end,omitempty"` // state leased: when the read lease ends
}

type tasksOut struct {
	Tasks []taskOut `json:"tasks"`
	Total int       `json:"total"`
}

func taskJSON(t api.LocalDeleteTask, p api.TaskProgress, now time.Time) taskOut {
	o := taskOut{ID: t.ID, Segment: string(t.Segment), Key: t.Key, Tenant: t.Tenant, Incarnation: t.Incarnation.String(), Created: t.Created,
		State: p.State, Holder: p.Holder, Attempts: p.Attempts, LastError: p.LastError, LastGiven: p.LastGiven, LeaseEnd: p.LeaseEnd}
	if t.Created > 0 {
		o.AgeMs = max(now.Sub(time.Unix(0, t.Created)).Milliseconds(), 0)
	}
	return o
}

// taskState is a task's STATE in the text tables: the master's state,
// and for one a read lease holds back, until when.
func taskState(t taskOut) string {
	if t.State == api.TaskLeased && t.LeaseEnd > 0 {
		return "withheld by a read lease until " + time.Unix(0, t.LeaseEnd).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return orDash(t.State)
}

// tasksJSON renders r's tasks, oldest first (creation time, then id).
func tasksJSON(r api.ListTasksResponse, now time.Time) tasksOut {
	out := tasksOut{Tasks: []taskOut{}, Total: r.Total}
	for i, t := range r.Tasks {
		out.Tasks = append(out.Tasks, taskJSON(t, progressAt(r, i), now))
	}
	slices.SortStableFunc(out.Tasks, func(a, b taskOut) int {
		if c := cmp.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// progressAt is the progress of r's task i; zero from a master that sent
// none.
func progressAt(r api.ListTasksResponse, i int) api.TaskProgress {
	if len(r.Progress) == len(r.Tasks) {
		return r.Progress[i]
	}
	return api.TaskProgress{}
}

type segmentOut struct {
	ID           string   `json:"id"`
	ClientID     string   `json:"client_id"`
	Pool         string   `json:"pool"`
	Capacity     int64    `json:"capacity"`
	Capabilities []string `json:"capabilities"`
	Endpoint     string   `json:"endpoint"`
	MountEpoch   uint64   `json:"mount_epoch"`
	Mounted      bool     `json:"mounted"`
	Retired      bool     `json:"retired"`
	PendingTasks int      `json:"pending_tasks"`
	// Refused is set for a late holder of a rebuilt cluster's lost
	// cluster whose mount the leader refused (it is not a segment of this
	// cluster until adopted).
	Refused *refusedOut `json:"refused,omitempty"`
}

// refusedOut is why and when a late holder's mount was refused.
type refusedOut struct {
	MarkerCluster *string `json:"marker_cluster"` // 16 hex digits; null: the holder did not say
	Reason        string  `json:"reason"`
	LastAttempt   string  `json:"last_attempt"` // RFC 3339
	Attempts      int     `json:"attempts"`
}

func refusedJSON(r api.RefusedMount) segmentOut {
	ro := &refusedOut{Reason: r.Reason, LastAttempt: time.Unix(0, r.LastAttempt).UTC().Format(time.RFC3339Nano), Attempts: r.Attempts}
	if r.MarkerCluster != nil {
		m := fmt.Sprintf("%016x", *r.MarkerCluster)
		ro.MarkerCluster = &m
	}
	return segmentOut{ID: string(r.Segment), ClientID: r.ClientID, Pool: r.Pool, Capabilities: []string{}, Endpoint: r.Endpoint, Refused: ro}
}

func segmentsJSON(segs []api.SegmentInfo, refused []api.RefusedMount) []segmentOut {
	out := []segmentOut{}
	for _, s := range segs {
		so := segmentOut{ID: string(s.ID), ClientID: s.ClientID, Pool: s.Pool, Capacity: s.Capacity, Capabilities: []string{},
			Endpoint: s.Endpoint, MountEpoch: s.MountEpoch, Mounted: s.Mounted, Retired: s.Retired, PendingTasks: s.PendingTasks}
		for _, c := range s.Capabilities {
			so.Capabilities = append(so.Capabilities, string(c))
		}
		out = append(out, so)
	}
	for _, r := range refused {
		out = append(out, refusedJSON(r))
	}
	return out
}

// nonNil returns s, or an empty slice for nil (printed [] not null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type inspectOut struct {
	Dir               string      `json:"dir"`
	Marked            bool        `json:"marked"`
	Identity          identityOut `json:"identity"`
	GCIntentPending   bool        `json:"gc_intent_pending"`
	GCIntent          string      `json:"gc_intent"`
	Buckets           []bucketOut `json:"buckets"`
	LiveObjects       int         `json:"live_objects"`
	TombstonedObjects int         `json:"tombstoned_objects"`
	LiveBytes         int64       `json:"live_bytes"`
	DeadBytes         int64       `json:"dead_bytes"`
	UsedBytes         int64       `json:"used_bytes"`
	StaleMetas        []string    `json:"stale_metas"`
	OrphanBuckets     []string    `json:"orphan_buckets"`
	TmpFiles          []string    `json:"tmp_files"`
	IgnoredFiles      []string    `json:"ignored_files"`
	FloorEntries      int         `json:"floor_entries"`
	Problems          []string    `json:"problems"`
	SpaceReserveHeld  bool        `json:"space_reserve_held"`
	SpaceReserveBytes int64       `json:"space_reserve_bytes"`
	FSTotalBytes      int64       `json:"fs_total_bytes"`
	FSFreeBytes       int64       `json:"fs_free_bytes"`
}

// identityOut is a holder directory's identity file; zero when unmarked.
type identityOut struct {
	Version   int    `json:"version"`
	SegmentID string `json:"segment_id"`
	ClusterID uint64 `json:"cluster_id"`
	Created   int64  `json:"created"` // unix nanoseconds, 0 when unmarked
}

func identityJSON(id holder.Identity) identityOut {
	out := identityOut{Version: id.V, SegmentID: string(id.SegmentID), ClusterID: id.ClusterID}
	if !id.Created.IsZero() {
		out.Created = id.Created.UnixNano()
	}
	return out
}

type bucketOut struct {
	ID        uint64 `json:"id"`
	DataSize  int64  `json:"data_size"`
	FileSize  int64  `json:"file_size"`
	LiveBytes int64  `json:"live_bytes"`
	DeadBytes int64  `json:"dead_bytes"`
	LiveCount int    `json:"live_count"`
	DeadCount int    `json:"dead_count"`
	Open      bool   `json:"open"`
	Legacy    bool   `json:"legacy"`
	Readers   int    `json:"readers"`
}

func inspectJSON(r holder.InspectReport) inspectOut {
	out := inspectOut{Dir: r.Dir, Marked: r.Marked, Identity: identityJSON(r.Identity), FloorEntries: r.FloorEntries, GCIntentPending: r.GCIntentPending, GCIntent: r.GCIntent,
		Buckets: []bucketOut{}, LiveObjects: r.LiveObjects, TombstonedObjects: r.TombstonedObjects, LiveBytes: r.LiveBytes,
		DeadBytes: r.DeadBytes, UsedBytes: r.UsedBytes, StaleMetas: nonNil(r.StaleMetas), OrphanBuckets: nonNil(r.OrphanBuckets),
		TmpFiles: nonNil(r.TmpFiles), IgnoredFiles: nonNil(r.IgnoredFiles), Problems: nonNil(r.Problems),
		SpaceReserveHeld: r.SpaceReserveHeld, SpaceReserveBytes: r.SpaceReserveBytes, FSTotalBytes: r.FSTotalBytes, FSFreeBytes: r.FSFreeBytes}
	for _, b := range r.Buckets {
		out.Buckets = append(out.Buckets, bucketOut{ID: b.ID, DataSize: b.DataSize, FileSize: b.FileSize, LiveBytes: b.LiveBytes,
			DeadBytes: b.DeadBytes, LiveCount: b.LiveCount, DeadCount: b.DeadCount, Open: b.Open, Legacy: b.Legacy, Readers: b.Readers})
	}
	return out
}

// snapshotInspectOut is operator snapshot inspect: the file's header and
// record counts.
type snapshotInspectOut struct {
	Format     string `json:"format"`
	ClusterID  uint64 `json:"cluster_id"`
	LastIndex  uint64 `json:"last_index"`
	LastTerm   uint64 `json:"last_term"`
	Created    int64  `json:"created"`
	Objects    int    `json:"objects"`
	Segments   int    `json:"segments"`
	Tasks      int    `json:"tasks"`
	DFSRecords int    `json:"dfs_records"`
	Sessions   int    `json:"sessions"`
	Jobs       int    `json:"jobs"`
	HasState   bool   `json:"has_state"`
}

// errorOut is what a --json verb prints when it fails before it printed
// its answer: the failure, as the one JSON value on stdout. The exit
// status is what it would be without --json.
type errorOut struct {
	Kind       string `json:"kind"` // always kindError
	Code       string `json:"code"` // the api error code; INTERNAL for a failure without one
	Error      string `json:"error"`
	ExitStatus int    `json:"exit_status"`
}

// kindError is errorOut's kind.
const kindError = "error"

func errorJSON(err error) errorOut {
	return errorOut{Kind: kindError, Code: string(api.CodeOf(err)), Error: oneLine(err), ExitStatus: exitCode(err)}
}

// keyResultOut is one key's outcome in a verb that acts on several (rm):
// ok, or the error code and message that key got.
type keyResultOut struct {
	Key   string `json:"key"`
	OK    bool   `json:"ok"`
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// keyResultsJSON is one result per key, in order: the answered ones from
// results, and for the keys after them (err ended the batch) err's code,
// since their outcome is what err says.
func keyResultsJSON(keys []string, results []api.KeyResult, err error) (out []keyResultOut, failed int) {
	if err == nil && len(results) < len(keys) {
		err = api.Errorf(api.CodeInternal, "%d results for %d keys", len(results), len(keys))
	}
	out = make([]keyResultOut, 0, len(keys))
	for i, k := range keys {
		r := keyResultOut{Key: k, OK: true}
		switch {
		case i < len(results) && results[i].Err != nil:
			r = keyResultOut{Key: k, Code: string(results[i].Err.Code), Error: results[i].Err.Error()}
		case i >= len(results):
			r = keyResultOut{Key: k, Code: string(api.CodeOf(err)), Error: "not answered: " + oneLine(err)}
		}
		if !r.OK {
			failed++
		}
		out = append(out, r)
	}
	return out, failed
}

// putOut is put --json: the key stored, its new incarnation and the
// value's size in bytes.
type putOut struct {
	Kind        string `json:"kind"` // always kindPut
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
	Size        int64  `json:"size"`
}

// kindPut is putOut's kind.
const kindPut = "put"
