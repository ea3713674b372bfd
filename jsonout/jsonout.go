package jsonout

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sexton/api"
	"sexton/holder"
)

// Encode is v as the command prints it, indented, once Check has passed
// it: an output that breaks the contract is a bug in sexton, refused
// rather than printed.
func Encode(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("--json: %w", err)
	}
	if err := Check(b); err != nil {
		return nil, fmt.Errorf("--json output breaks the CLI contract (a bug in sexton): %w", err)
	}
	return b, nil
}

// snakeKey is what every object key in a --json output looks like.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Check walks an encoded output: every object key snake_case, no null
// anywhere (a list is [], an absent optional field is omitted). The error
// names the first offender by its path, e.g. $.tasks[0].Key.
func Check(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return walk("$", v)
}

func walk(path string, v any) error {
	switch v := v.(type) {
	case nil:
		return fmt.Errorf("%s is null (want [] for a list, or the field omitted)", path)
	case map[string]any:
		for k, e := range v {
			if !snakeKey.MatchString(k) {
				return fmt.Errorf("%s: key %q is not snake_case", path, k)
			}
			if err := walk(path+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := walk(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Object is one object (stat, ls).
type Object struct {
	Key         string    `json:"key"`
	Tenant      string    `json:"tenant"`
	Size        int64     `json:"size"`
	Incarnation string    `json:"incarnation"`
	Created     int64     `json:"created"`
	Replicas    []Replica `json:"replicas"`
}

// Replica is one replica of an object; DFS is set for a DFS replica.
type Replica struct {
	Kind     string   `json:"kind"`
	Segment  string   `json:"segment,omitempty"`
	Pool     string   `json:"pool,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"`
	DFS      *DFSDesc `json:"dfs,omitempty"`
}

// DFSDesc is where a DFS replica lies.
type DFSDesc struct {
	Allocator   string `json:"allocator"`
	Path        string `json:"path"`
	Unit        uint64 `json:"unit"`
	Offset      int64  `json:"offset"`
	Size        int64  `json:"size"`
	AlignedSize int64  `json:"aligned_size"`
}

// ObjectOf renders o.
func ObjectOf(o api.ObjectInfo) Object {
	out := Object{Key: o.Key, Tenant: o.Tenant, Size: o.Size, Incarnation: o.Incarnation.String(), Created: o.Created, Replicas: []Replica{}}
	for _, r := range o.Replicas {
		ro := Replica{Kind: r.Kind.String(), Segment: string(r.Segment), Pool: r.Pool, Endpoint: r.Endpoint}
		if d := r.DFS; d != nil {
			ro.DFS = &DFSDesc{Allocator: d.Allocator, Path: d.Path, Unit: d.UnitID, Offset: d.Offset, Size: d.Size, AlignedSize: d.AlignedSize}
		}
		out.Replicas = append(out.Replicas, ro)
	}
	return out
}

// Objects renders objs, [] for none (ls).
func Objects(objs []api.ObjectInfo) []Object {
	out := []Object{}
	for _, o := range objs {
		out = append(out, ObjectOf(o))
	}
	return out
}

// Stat is stat's answer. Object is omitted when the key has no value
// (it was removed and delete tasks of it are still pending); Deletes are
// those tasks, of any incarnation.
type Stat struct {
	Object         *Object `json:"object,omitempty"`
	PendingPut     string  `json:"pending_put,omitempty"`
	PendingDeletes int     `json:"pending_deletes"`
	Deletes        []Task  `json:"deletes"`
}

// StatOf renders stat's answer: st when found, and the key's pending
// delete tasks.
func StatOf(st api.StatResponse, found bool, deletes api.ListTasksResponse, now time.Time) Stat {
	out := Stat{PendingDeletes: st.PendingDeletes, Deletes: TasksOf(deletes, now).Tasks}
	if found {
		o := ObjectOf(st.Object)
		out.Object = &o
	} else {
		out.PendingDeletes = deletes.Total
	}
	if st.PendingPut != nil {
		out.PendingPut = st.PendingPut.String()
	}
	return out
}

// Task is one pending delete task; the fields after created are the
// leader's view of it (api.TaskProgress), absent from an older master.
type Task struct {
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

// Tasks is operator tasks: the tasks listed and how many are pending.
type Tasks struct {
	Tasks []Task `json:"tasks"`
	Total int    `json:"total"`
}

// TaskOf renders task t with its progress p, its age taken at now.
func TaskOf(t api.LocalDeleteTask, p api.TaskProgress, now time.Time) Task {
	o := Task{ID: t.ID, Segment: string(t.Segment), Key: t.Key, Tenant: t.Tenant, Incarnation: t.Incarnation.String(), Created: t.Created,
		State: p.State, Holder: p.Holder, Attempts: p.Attempts, LastError: p.LastError, LastGiven: p.LastGiven, LeaseEnd: p.LeaseEnd}
	if t.Created > 0 {
		o.AgeMs = max(now.Sub(time.Unix(0, t.Created)).Milliseconds(), 0)
	}
	return o
}

// TasksOf renders r's tasks, oldest first (creation time, then id).
func TasksOf(r api.ListTasksResponse, now time.Time) Tasks {
	out := Tasks{Tasks: []Task{}, Total: r.Total}
	for i, t := range r.Tasks {
		out.Tasks = append(out.Tasks, TaskOf(t, ProgressAt(r, i), now))
	}
	slices.SortStableFunc(out.Tasks, func(a, b Task) int {
		if c := cmp.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// ProgressAt is the progress of r's task i; zero from a master that sent
// none.
func ProgressAt(r api.ListTasksResponse, i int) api.TaskProgress {
	if len(r.Progress) == len(r.Tasks) {
		return r.Progress[i]
	}
	return api.TaskProgress{}
}

// Segment is one segment in operator segments.
type Segment struct {
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
	Refused *Refused `json:"refused,omitempty"`
}

// Refused is why and when a late holder's mount was refused.
type Refused struct {
	MarkerCluster *string `json:"marker_cluster"` // 16 hex digits; null: the holder did not say
	Reason        string  `json:"reason"`
	LastAttempt   string  `json:"last_attempt"` // RFC 3339
	Attempts      int     `json:"attempts"`
}

func refusedOf(r api.RefusedMount) Segment {
	ro := &Refused{Reason: r.Reason, LastAttempt: time.Unix(0, r.LastAttempt).UTC().Format(time.RFC3339Nano), Attempts: r.Attempts}
	if r.MarkerCluster != nil {
		m := fmt.Sprintf("%016x", *r.MarkerCluster)
		ro.MarkerCluster = &m
	}
	return Segment{ID: string(r.Segment), ClientID: r.ClientID, Pool: r.Pool, Capabilities: []string{}, Endpoint: r.Endpoint, Refused: ro}
}

// Segments renders segs, then the refused mounts (operator segments).
func Segments(segs []api.SegmentInfo, refused []api.RefusedMount) []Segment {
	out := []Segment{}
	for _, s := range segs {
		so := Segment{ID: string(s.ID), ClientID: s.ClientID, Pool: s.Pool, Capacity: s.Capacity, Capabilities: []string{},
			Endpoint: s.Endpoint, MountEpoch: s.MountEpoch, Mounted: s.Mounted, Retired: s.Retired, PendingTasks: s.PendingTasks}
		for _, c := range s.Capabilities {
			so.Capabilities = append(so.Capabilities, string(c))
		}
		out = append(out, so)
	}
	for _, r := range refused {
		out = append(out, refusedOf(r))
	}
	return out
}

// NonNil returns s, or an empty slice for nil (printed [] not null).
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Inspect is holder inspect: a holder directory read offline.
type Inspect struct {
	Dir               string   `json:"dir"`
	Marked            bool     `json:"marked"`
	Identity          Identity `json:"identity"`
	GCIntentPending   bool     `json:"gc_intent_pending"`
	GCIntent          string   `json:"gc_intent"`
	Buckets           []Bucket `json:"buckets"`
	LiveObjects       int      `json:"live_objects"`
	TombstonedObjects int      `json:"tombstoned_objects"`
	LiveBytes         int64    `json:"live_bytes"`
	DeadBytes         int64    `json:"dead_bytes"`
	UsedBytes         int64    `json:"used_bytes"`
	StaleMetas        []string `json:"stale_metas"`
	OrphanBuckets     []string `json:"orphan_buckets"`
	TmpFiles          []string `json:"tmp_files"`
	IgnoredFiles      []string `json:"ignored_files"`
	FloorEntries      int      `json:"floor_entries"`
	Problems          []string `json:"problems"`
	SpaceReserveHeld  bool     `json:"space_reserve_held"`
	SpaceReserveBytes int64    `json:"space_reserve_bytes"`
	FSTotalBytes      int64    `json:"fs_total_bytes"`
	FSFreeBytes       int64    `json:"fs_free_bytes"`
}

// Identity is a holder directory's identity file; zero when unmarked.
type Identity struct {
	Version   int    `json:"version"`
	SegmentID string `json:"segment_id"`
	ClusterID uint64 `json:"cluster_id"`
	Created   int64  `json:"created"` // unix nanoseconds, 0 when unmarked
}

func identityOf(id holder.Identity) Identity {
	out := Identity{Version: id.V, SegmentID: string(id.SegmentID), ClusterID: id.ClusterID}
	if !id.Created.IsZero() {
		out.Created = id.Created.UnixNano()
	}
	return out
}

// Bucket is one bucket of a holder directory.
type Bucket struct {
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

// InspectOf renders r.
func InspectOf(r holder.InspectReport) Inspect {
	out := Inspect{Dir: r.Dir, Marked: r.Marked, Identity: identityOf(r.Identity), FloorEntries: r.FloorEntries, GCIntentPending: r.GCIntentPending, GCIntent: r.GCIntent,
		Buckets: []Bucket{}, LiveObjects: r.LiveObjects, TombstonedObjects: r.TombstonedObjects, LiveBytes: r.LiveBytes,
		DeadBytes: r.DeadBytes, UsedBytes: r.UsedBytes, StaleMetas: NonNil(r.StaleMetas), OrphanBuckets: NonNil(r.OrphanBuckets),
		TmpFiles: NonNil(r.TmpFiles), IgnoredFiles: NonNil(r.IgnoredFiles), Problems: NonNil(r.Problems),
		SpaceReserveHeld: r.SpaceReserveHeld, SpaceReserveBytes: r.SpaceReserveBytes, FSTotalBytes: r.FSTotalBytes, FSFreeBytes: r.FSFreeBytes}
	for _, b := range r.Buckets {
		out.Buckets = append(out.Buckets, Bucket{ID: b.ID, DataSize: b.DataSize, FileSize: b.FileSize, LiveBytes: b.LiveBytes,
			DeadBytes: b.DeadBytes, LiveCount: b.LiveCount, DeadCount: b.DeadCount, Open: b.Open, Legacy: b.Legacy, Readers: b.Readers})
	}
	return out
}

// SnapshotInspect is operator snapshot inspect: the file's header and
// record counts.
type SnapshotInspect struct {
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

// Failure is what a --json verb prints when it fails before it printed
// its answer: the failure, as the one JSON value on stdout. The exit
// status is what it would be without --json.
type Failure struct {
	Kind       string `json:"kind"` // always KindError
	Code       string `json:"code"` // the api error code; INTERNAL for a failure without one
	Error      string `json:"error"`
	ExitStatus int    `json:"exit_status"`
}

// KindError is Failure's kind.
const KindError = "error"

// KeyResult is one key's outcome in a verb that acts on several (rm):
// ok, or the error code and message that key got.
type KeyResult struct {
	Key   string `json:"key"`
	OK    bool   `json:"ok"`
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// KeyResults is one result per key, in order: the answered ones from
// results, and for the keys after them (err ended the batch) err's code,
// since their outcome is what err says.
func KeyResults(keys []string, results []api.KeyResult, err error) (out []KeyResult, failed int) {
	if err == nil && len(results) < len(keys) {
		err = api.Errorf(api.CodeInternal, "%d results for %d keys", len(results), len(keys))
	}
	out = make([]KeyResult, 0, len(keys))
	for i, k := range keys {
		r := KeyResult{Key: k, OK: true}
		switch {
		case i < len(results) && results[i].Err != nil:
			r = KeyResult{Key: k, Code: string(results[i].Err.Code), Error: results[i].Err.Error()}
		case i >= len(results):
			r = KeyResult{Key: k, Code: string(api.CodeOf(err)), Error: "not answered: " + OneLine(err)}
		}
		if !r.OK {
			failed++
		}
		out = append(out, r)
	}
	return out, failed
}

// Put is put --json: the key stored, its new incarnation and the
// value's size in bytes.
type Put struct {
	Kind        string `json:"kind"` // always KindPut
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
	Size        int64  `json:"size"`
}

// KindPut is Put's kind.
const KindPut = "put"

// Rm is rm's --json answer: how many keys it removed and, with
// --wait, every delete task of them it saw, acknowledged or not, and
// whether all were acknowledged (done; false without --wait).
type Rm struct {
	Removed  int    `json:"removed"`
	Done     bool   `json:"done"`
	Replicas []Task `json:"replicas"`
	// Job is the bulk-delete job of rm --prefix/--all (as operator jobs
	// shows it; omitted otherwise): removed is its count, done whether it
	// finished within --wait, and replicas stays empty.
	Job *Job `json:"job,omitempty"`
	// Failed and Keys are there when some keys were not removed: the
	// count, and every key's outcome in order (rm KEY... and --batch).
	Failed int         `json:"failed,omitempty"`
	Keys   []KeyResult `json:"keys,omitempty"`
}

// Job is one job in operator jobs --json.
type Job struct {
	ID      uint64 `json:"id"`
	Kind    string `json:"kind"`
	Prefix  string `json:"prefix"`
	Start   string `json:"start_incarnation"`
	Cursor  string `json:"cursor"`
	State   string `json:"state"`
	Removed int64  `json:"removed"`
	Skipped int64  `json:"skipped"`
	Steps   int64  `json:"steps"`
	Created int64  `json:"created"`
	Updated int64  `json:"updated"`
}

// Jobs is operator jobs: the jobs and the index they are read at.
type Jobs struct {
	Jobs  []Job  `json:"jobs"`
	Index uint64 `json:"index"`
}

// RmJob is rm --prefix's --json answer: rm's shape with the job.
func RmJob(j api.JobInfo) Rm {
	jo := JobOf(j)
	return Rm{Removed: int(j.Removed), Done: j.State == api.JobDone, Replicas: []Task{}, Job: &jo}
}

// JobOf renders j.
func JobOf(j api.JobInfo) Job {
	return Job{ID: j.ID, Kind: j.Kind, Prefix: j.Prefix, Start: j.Start.String(), Cursor: j.Cursor, State: j.State,
		Removed: j.Removed, Skipped: j.Skipped, Steps: j.Steps, Created: j.Created, Updated: j.Updated}
}

// Version is sexton version --json.
type Version struct {
	Kind      string `json:"kind"` // always "version"
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
	Date      string `json:"date,omitempty"`
}

// KindVersion is Version's kind.
const KindVersion = "version"

// Token is operator token generate's --json output.
type Token struct {
	Token string `json:"token"`
}

// OneLine renders err as one line: typed errors keep their code.
func OneLine(err error) string {
	var e *api.Error
	s := err.Error()
	if errors.As(err, &e) && e.Leader != "" {
		s += " (leader " + e.Leader + ")"
	}
	return strings.ReplaceAll(s, "\n", "; ")
}
