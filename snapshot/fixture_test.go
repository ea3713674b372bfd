package snapshot

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// The golden snapshots' contents. Changing them changes the golden files:
// regenerate with `go test ./snapshot -run Golden -update`.

const fixtureCluster = 0x5e7701c0ffee0001

var fixtureHeader = Header{
	Format:    Format110,
	ClusterID: fixtureCluster,
	LastIndex: 4242,
	LastTerm:  7,
	Created:   1_764_000_000_123_456_789,
}

func fixtureObjects() []*Object {
	return []*Object{
		{
			Key: "alpha/one", Tenant: "default", Size: 4096,
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 100},
			State:       ObjectComplete, Created: 1_764_000_000_000_000_001, PutID: "put-alpha-1",
			Replicas: []api.ReplicaDescriptor{
				{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "ssd"},
			},
		},
		{
			Key: "beta/multi", Tenant: "tenant-b", Size: 1 << 20,
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 200},
			State:       ObjectComplete, Created: 1_764_000_000_000_000_002, PutID: "put-beta-1",
			Replicas: []api.ReplicaDescriptor{
				{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "ssd"},
				{Kind: api.ReplicaLocalDisk, Segment: "seg-b", Pool: "ssd-2"},
				{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{
					Allocator: "bucket", Path: "bucket_0000000000000003.data",
					UnitID: 3, Offset: 8192, Size: 1 << 20, AlignedSize: 1<<20 + 4096,
				}},
			},
		},
		{ // an overwrite in progress: a newer PENDING incarnation of the same key
			Key: "beta/multi", Tenant: "tenant-b", Size: 77,
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 300},
			State:       ObjectPending, Created: 1_764_000_000_000_000_003, PutID: "put-beta-2",
			Replicas: []api.ReplicaDescriptor{
				{Kind: api.ReplicaLocalDisk, Segment: "seg-b", Pool: "ssd-2"},
			},
		},
		{ // a legacy object carried over from a 1.0.0 snapshot
			Key: "legacy/zero", Tenant: "default", Size: 1,
			State: ObjectComplete, Created: 1_700_000_000_000_000_000,
			Replicas: []api.ReplicaDescriptor{
				{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "ssd"},
			},
		},
	}
}

func fixtureSegments() []*Segment {
	return []*Segment{
		{
			ID: "seg-a", ClientID: "holder-1", Pool: "ssd", Capacity: 1 << 40,
			Capabilities: []api.Capability{api.CapObjectTombstoneV1},
			Endpoint:     "10.0.0.1:7001", MountEpoch: 3, Mounted: true,
		},
		{
			ID: "seg-b", ClientID: "holder-2", Pool: "ssd-2", Capacity: 1 << 39,
			Capabilities: []api.Capability{api.CapObjectTombstoneV1, "FUTURE_FEATURE"},
			Endpoint:     "10.0.0.2:7001", MountEpoch: 1, Mounted: false, Retired: true,
		},
	}
}

func fixtureTasks() []*Task {
	return []*Task{
		{ID: 1, Segment: "seg-a", Key: "gone/one", Tenant: "default",
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 50}, Created: 1_764_000_000_000_000_010},
		{ID: 2, Segment: "seg-b", Key: "gone/one",
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 50}, Created: 1_764_000_000_000_000_010},
		{ID: 3, Segment: "seg-a", Key: "legacy/old", Tenant: "default", Created: 1_764_000_000_000_000_011},
	}
}

func fixtureState() *State {
	return &State{
		MasterEpoch: 5, NextTaskID: 4, LeaderID: "m1", LeaderAddr: "10.0.0.10:7000",
		LastNow: 1_764_000_000_000_000_099,
		Audit: []AuditEntry{
			{Index: 4000, Segment: "seg-c", By: "operator", Reason: "disk lost", DroppedTasks: 12, At: 1_764_000_000_000_000_050},
		},
	}
}

// fixtureDFS is two opaque allocator records, as the FSM would hand them.
func fixtureDFS(t fataler) [][]byte {
	type bucket struct {
		ID     uint64 `msgpack:"id"`
		Sealed bool   `msgpack:"sealed"`
		Used   int64  `msgpack:"used"`
	}
	return [][]byte{
		encodeRec(t, bucket{ID: 3, Sealed: false, Used: 1<<20 + 4096}),
		encodeRec(t, bucket{ID: 4, Sealed: true, Used: 64 << 20}),
	}
}

// fixtureDFSRecords is fixtureDFS as records the Writer copies verbatim.
func fixtureDFSRecords(t fataler) []msgpack.RawMessage {
	var recs []msgpack.RawMessage
	for _, raw := range fixtureDFS(t) {
		recs = append(recs, raw)
	}
	return recs
}

// fixtureSection is one section of a fixture: its name and its records
// in order.
type fixtureSection struct {
	name    string
	records []any
}

func section[R any](name string, records []R) fixtureSection {
	s := fixtureSection{name: name}
	for _, r := range records {
		s.records = append(s.records, r)
	}
	return s
}

// writeSections writes a fixture with the real Writer: header h, then
// the sections in order.
func writeSections(t fataler, h Header, sections ...fixtureSection) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	must(t, err)
	for _, s := range sections {
		must(t, w.BeginSection(s.name))
		for _, r := range s.records {
			must(t, w.WriteRecord(r))
		}
		must(t, w.EndSection())
	}
	must(t, w.Close())
	return buf.Bytes()
}

// writeFixture110 writes the fixture with the real Writer.
func writeFixture110(t fataler) []byte {
	return writeSections(t, fixtureHeader,
		section(SectionMetadata, fixtureObjects()),
		section(SectionSegments, fixtureSegments()),
		section(SectionTasks, fixtureTasks()),
		section(SectionState, []*State{fixtureState()}),
		section(SectionDFSBuckets, fixtureDFSRecords(t)))
}

// The 1.2.0 fixture: the 1.1.0 contents plus a process id on the mounted
// segment, settings, a grant key and a session clock in the state, and
// session records (a session with two results, one without any).

var fixtureHeader120 = Header{
	Format:    Format120,
	ClusterID: fixtureCluster,
	LastIndex: 5151,
	LastTerm:  8,
	Created:   1_764_000_000_123_999_999,
}

func fixtureSegments120() []*Segment {
	segs := fixtureSegments()
	segs[0].Process = "proc-7f3a"
	return segs
}

func fixtureState120() *State {
	s := fixtureState()
	s.Settings = &api.Settings{RegistryCapacity: 1000, SessionTTLMillis: 600_000}
	s.GrantKey = bytes.Repeat([]byte{0xa5}, api.GrantKeyLen)
	s.SessionClock = 1_764_000_000_000_000_120
	return s
}

func fixtureSessions120() []*SessionRecord {
	inc := api.ObjectIncarnation{High: fixtureCluster, Low: 300}
	return []*SessionRecord{
		{ClientID: "client-a", Floor: 7, LastActive: 1_764_000_000_000_000_100, Result: &SessionResult{
			Seq: 7, Kind: 4, Inc: inc,
			Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "seg-b", Pool: "ssd-2"}},
		}},
		{ClientID: "client-a", Floor: 7, LastActive: 1_764_000_000_000_000_100, Result: &SessionResult{
			Seq: 8, Kind: 7, Count: 3,
			Items: []SessionItem{{I: 1, Err: &api.Error{Code: api.CodeIncarnationMismatch, Message: "key \"b\" holds another incarnation"}}},
		}},
		{ClientID: "client-b", Floor: 12, LastActive: 1_764_000_000_000_000_110},
		{ClientID: "client-c", Floor: 1, LastActive: 1_764_000_000_000_000_120, Result: &SessionResult{
			Seq: 1, Kind: 19, Settings: &api.Settings{RegistryCapacity: 1000, SessionTTLMillis: 600_000, MaxSessions: 100000, MaxSessionResults: 1024},
		}},
	}
}

// writeFixture120 writes the 1.2.0 fixture with the real Writer.
func writeFixture120(t fataler) []byte {
	return writeSections(t, fixtureHeader120, append(fixtureSections120(),
		section(SectionDFSBuckets, fixtureDFSRecords(t)))...)
}

// fixtureSections120 are the 1.2.0 fixture's sections up to the sessions
// (the 1.3.0 fixture writes its jobs after them).
func fixtureSections120() []fixtureSection {
	return []fixtureSection{
		section(SectionMetadata, fixtureObjects()),
		section(SectionSegments, fixtureSegments120()),
		section(SectionState, []*State{fixtureState120()}),
		section(SectionTasks, fixtureTasks()),
		section(SectionSessions, fixtureSessions120()),
	}
}

// The 1.0.0 fixture: what an old master would have written. Its encoder
// exists only here; the package reads 1.0.0 and never writes it.

var fixtureHeader100 = Header{
	Format: Format100, ClusterID: 0, LastIndex: 900, LastTerm: 2,
	Created: 1_700_000_000_000_000_000,
}

func fixtureObjects100() []object100 {
	return []object100{
		{Key: "old/one", Tenant: "default", Size: 10, Created: 1_700_000_000_000_000_001,
			Replicas: []replica100{{Segment: "seg-a", Pool: "ssd"}}},
		{Key: "old/multi", Tenant: "tenant-b", Size: 20, Created: 1_700_000_000_000_000_002,
			Replicas: []replica100{{Segment: "seg-a", Pool: "ssd"}, {Segment: "seg-b", Pool: "ssd-2"}}},
	}
}

func fixtureSegments100() []segment100 {
	return []segment100{
		{ID: "seg-a", ClientID: "holder-1", Pool: "ssd", Capacity: 1 << 40, Endpoint: "10.0.0.1:7001", Mounted: true},
		{ID: "seg-b", ClientID: "holder-2", Pool: "ssd-2", Capacity: 1 << 39, Endpoint: "10.0.0.2:7001", Mounted: false},
	}
}

// writeFixture100 encodes the 1.0.0 fixture: same container, the 1.0.0
// header, sections and record shapes.
func writeFixture100(t fataler) []byte {
	b := newStream(t, fixtureHeader100)
	var objs []any
	for _, o := range fixtureObjects100() {
		objs = append(objs, o)
	}
	var segs []any
	for _, s := range fixtureSegments100() {
		segs = append(segs, s)
	}
	b.section(SectionMetadata, uint64(len(objs)), b.records(objs...))
	b.section(SectionSegments, uint64(len(segs)), b.records(segs...))
	return b.done()
}

// The 1.3.0 fixture: 1.2.0's records plus the jobs section (one job of
// each state).

var fixtureHeader130 = Header{Format: Format130, ClusterID: fixtureCluster, LastIndex: 6161, LastTerm: 8, Created: 1_700_000_600_000_000_000}

func fixtureJobs130() []*Job {
	start := func(i uint64) api.ObjectIncarnation { return api.ObjectIncarnation{High: fixtureCluster, Low: i} }
	return []*Job{
		{ID: 6000, Kind: api.JobKindPrefixDelete, Prefix: "logs/", Start: start(6000), Cursor: "logs/2024/08",
			Removed: 4096, Skipped: 3, State: api.JobRunning, Steps: 9, Created: 1_700_000_500_000_000_000, Updated: 1_700_000_550_000_000_000},
		{ID: 6001, Kind: api.JobKindPrefixDelete, Prefix: "", Start: start(6001), Cursor: "a",
			Removed: 1, State: api.JobPausedRegistryFull, Steps: 1, Created: 1_700_000_510_000_000_000, Updated: 1_700_000_511_000_000_000},
		{ID: 6002, Kind: api.JobKindPrefixDelete, Prefix: "tmp/", Start: start(6002), Cursor: "tmp/z",
			Removed: 7, Skipped: 1, State: api.JobDone, Steps: 2, Created: 1_700_000_520_000_000_000, Updated: 1_700_000_521_000_000_000},
		{ID: 6003, Kind: api.JobKindPrefixDelete, Prefix: "x", Start: start(6003),
			State: api.JobCancelled, Created: 1_700_000_530_000_000_000, Updated: 1_700_000_531_000_000_000},
	}
}

func writeFixture130(t fataler) []byte {
	return writeSections(t, fixtureHeader130, append(fixtureSections120(),
		section(SectionJobs, fixtureJobs130()),
		section(SectionDFSBuckets, fixtureDFSRecords(t)))...)
}

// The 1.4.0 fixture: 1.3.0's sections with every field 1.4.0 added — a
// rebuild member segment, a state under legacy settings with an open
// rebuild window's removal memory, and a running job's kept keys. An open
// window's memory excludes a closed or overflowed one, so those two flags
// are in a second state (fixtureState140Closed, testdata/v140_closed.snap).

var fixtureHeader140 = Header{Format: Format140, ClusterID: fixtureCluster, LastIndex: 7171, LastTerm: 9, Created: 1_700_000_700_000_000_000}

func fixtureSegments140() []*Segment {
	segs := fixtureSegments120()
	segs[0].RebuildMember = true
	return segs
}

func fixtureState140() *State {
	s := fixtureState120()
	s.Settings = nil
	s.Legacy = &api.Settings{RegistryCapacity: 60000}
	s.IncBase = 1 << 40
	s.RebuildCluster = fixtureCluster + 1
	for _, b := range []byte{0x01, 0x7f, 0xfe} {
		s.RebuildRemoved = append(s.RebuildRemoved, bytes.Repeat([]byte{b}, RebuildRemovedDigestLen)...)
	}
	return s
}

func fixtureState140Closed() *State {
	s := fixtureState140()
	s.RebuildRemoved = nil
	s.RebuildClosed, s.RebuildOverflow = true, true
	return s
}

func fixtureJobs140() []*Job {
	jobs := fixtureJobs130()
	jobs[0].Kept = []api.JobKept{
		{Key: "logs/2024/09/a", Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 5990}},
		{Key: "logs/2025/01", Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: 5999}},
	}
	return jobs
}

// writerAtJobs is a Writer of a snapshot with header h whose jobs
// section has begun: the sections before it empty but for the 1.2.0
// fixture's state.
func writerAtJobs(t fataler, h Header) (*Writer, *bytes.Buffer) {
	buf := &bytes.Buffer{}
	w, err := NewWriter(buf, h)
	must(t, err)
	for _, s := range []string{SectionMetadata, SectionSegments} {
		must(t, w.BeginSection(s))
		must(t, w.EndSection())
	}
	must(t, w.BeginSection(SectionState))
	must(t, w.WriteRecord(fixtureState120()))
	must(t, w.EndSection())
	for _, s := range []string{SectionTasks, SectionSessions} {
		must(t, w.BeginSection(s))
		must(t, w.EndSection())
	}
	must(t, w.BeginSection(SectionJobs))
	return w, buf
}

// writeFixture140 writes the 1.4.0 fixture with state as its state record.
func writeFixture140(t fataler, state *State) []byte {
	return writeSections(t, fixtureHeader140,
		section(SectionMetadata, fixtureObjects()),
		section(SectionSegments, fixtureSegments140()),
		section(SectionState, []*State{state}),
		section(SectionTasks, fixtureTasks()),
		section(SectionSessions, fixtureSessions120()),
		section(SectionJobs, fixtureJobs140()),
		section(SectionDFSBuckets, fixtureDFSRecords(t)))
}
