package snapshot

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sexton/api"
)

var update = flag.Bool("update", false, "regenerate snapshot/testdata golden files")

const (
	golden130 = "testdata/v130.snap"
	golden120 = "testdata/v120.snap"
	golden110 = "testdata/v110.snap"
	golden100 = "testdata/v100.snap"
)

// loadGolden returns the checked-in golden file, first rewriting it from
// the encoder when -update is set. Without -update the file must equal
// what the encoder produces today, so the format cannot drift unnoticed.
func loadGolden(t *testing.T, path string, encode func(fataler) []byte) []byte {
	t.Helper()
	fresh := encode(t)
	if *update {
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, fresh, 0o644))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with -update)", err)
	}
	if !bytes.Equal(data, fresh) {
		t.Fatalf("%s differs from what the encoder writes today: the format changed; if on purpose, bump it or regenerate with -update", path)
	}
	return data
}

// readGolden loads the golden file at path (failing unless it is what
// write gives today), reads it, and checks every record against want's
// and Inspect against want's header and counts; it returns what it read.
func readGolden(t *testing.T, path string, write func(fataler) []byte, want *collectSink, counts Counts) *collectSink {
	t.Helper()
	data := loadGolden(t, path, write)
	got, err := readAll(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	want.headers = 1
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"header", got.header, want.header}, {"header calls", got.headers, want.headers},
		{"objects", got.objects, want.objects}, {"segments", got.segments, want.segments},
		{"tasks", got.tasks, want.tasks}, {"states", got.states, want.states},
		{"sessions", got.sessions, want.sessions}, {"jobs", got.jobs, want.jobs},
		{"dfs records", got.dfs, want.dfs},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Fatalf("%s: %s:\n got %s\nwant %s", path, f.name, dump(f.got), dump(f.want))
		}
	}
	h, c, err := Inspect(bytes.NewReader(data))
	if err != nil || h != want.header || c != counts {
		t.Fatalf("%s: Inspect = %+v %+v (%v), want %+v %+v", path, h, c, err, want.header, counts)
	}
	// The DFS replica descriptor is a field-by-field match, not just
	// non-nil.
	if dfs := got.objects[1].Replicas[2].DFS; dfs == nil || dfs.Path != "bucket_0000000000000003.data" || dfs.UnitID != 3 || dfs.AlignedSize != 1<<20+4096 {
		t.Fatalf("%s: DFS descriptor %+v", path, dfs)
	}
	return got
}

func TestGolden110ReadsBackEveryField(t *testing.T) {
	readGolden(t, golden110, writeFixture110, &collectSink{
		header: fixtureHeader, objects: fixtureObjects(), segments: fixtureSegments(), tasks: fixtureTasks(),
		states: []*State{fixtureState()}, dfs: fixtureDFS(t),
	}, Counts{Objects: 4, Segments: 2, Tasks: 3, DFSRecords: 2, HasState: true})
}

func TestGolden120ReadsBackEveryField(t *testing.T) {
	readGolden(t, golden120, writeFixture120, &collectSink{
		header: fixtureHeader120, objects: fixtureObjects(), segments: fixtureSegments120(), tasks: fixtureTasks(),
		states: []*State{fixtureState120()}, sessions: fixtureSessions120(), dfs: fixtureDFS(t),
	}, Counts{Objects: 4, Segments: 2, Tasks: 3, DFSRecords: 2, HasState: true, Sessions: 4})
}

func TestGolden130ReadsBackEveryField(t *testing.T) {
	readGolden(t, golden130, writeFixture130, &collectSink{
		header: fixtureHeader130, objects: fixtureObjects(), segments: fixtureSegments120(), tasks: fixtureTasks(),
		states: []*State{fixtureState120()}, sessions: fixtureSessions120(), jobs: fixtureJobs130(), dfs: fixtureDFS(t),
	}, Counts{Objects: 4, Segments: 2, Tasks: 3, DFSRecords: 2, HasState: true, Sessions: 4, Jobs: 4})
}

// A job record that breaks its bounds is refused by the writer, so no
// snapshot a reader would refuse is written.
func TestWriterRefusesBadJob(t *testing.T) {
	for _, j := range []*Job{
		{ID: 0, Kind: api.JobKindPrefixDelete, State: api.JobRunning},
		{ID: 1, Kind: "wipe", State: api.JobRunning},
		{ID: 1, Kind: api.JobKindPrefixDelete, State: "sleeping"},
		{ID: 1, Kind: api.JobKindPrefixDelete, Prefix: "a/", Cursor: "b", State: api.JobRunning},
		{ID: 1, Kind: api.JobKindPrefixDelete, State: api.JobRunning, Removed: -1},
	} {
		w, _ := writerAtJobs(t, fixtureHeader130)
		if err := w.WriteRecord(j); err == nil {
			t.Fatalf("writer took job %+v", *j)
		}
	}
}

func TestGolden100ReadsBackEveryField(t *testing.T) {
	data := loadGolden(t, golden100, writeFixture100)
	got, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.header, fixtureHeader100) {
		t.Fatalf("header %+v, want %+v", got.header, fixtureHeader100)
	}
	want := []*Object{
		{Key: "old/one", Tenant: "default", Size: 10, State: ObjectComplete, Created: 1_700_000_000_000_000_001,
			Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "ssd"}}},
		{Key: "old/multi", Tenant: "tenant-b", Size: 20, State: ObjectComplete, Created: 1_700_000_000_000_000_002,
			Replicas: []api.ReplicaDescriptor{
				{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "ssd"},
				{Kind: api.ReplicaLocalDisk, Segment: "seg-b", Pool: "ssd-2"},
			}},
	}
	if !reflect.DeepEqual(got.objects, want) {
		t.Fatalf("objects:\n got %s\nwant %s", dump(got.objects), dump(want))
	}
	wantSegs := []*Segment{
		{ID: "seg-a", ClientID: "holder-1", Pool: "ssd", Capacity: 1 << 40, Endpoint: "10.0.0.1:7001", Mounted: true},
		{ID: "seg-b", ClientID: "holder-2", Pool: "ssd-2", Capacity: 1 << 39, Endpoint: "10.0.0.2:7001"},
	}
	if !reflect.DeepEqual(got.segments, wantSegs) {
		t.Fatalf("segments:\n got %s\nwant %s", dump(got.segments), dump(wantSegs))
	}
	if len(got.tasks) != 0 || len(got.states) != 0 || len(got.dfs) != 0 {
		t.Fatalf("1.0.0 produced tasks %d, states %d, dfs %d; want none", len(got.tasks), len(got.states), len(got.dfs))
	}
}

// TestLegacy100SnapshotReadsAsIncarnationZero: every object of a 1.0.0
// snapshot is the legacy incarnation, COMPLETE, with LOCAL_DISK replicas;
// every segment is at mount epoch zero with no capabilities.
func TestLegacy100SnapshotReadsAsIncarnationZero(t *testing.T) {
	data, err := os.ReadFile(golden100)
	must(t, err)
	got, err := readAll(data)
	must(t, err)
	if len(got.objects) != 2 || len(got.segments) != 2 {
		t.Fatalf("read %d objects and %d segments, want 2 and 2", len(got.objects), len(got.segments))
	}
	for _, o := range got.objects {
		if !o.Incarnation.IsZero() || o.State != ObjectComplete || o.PutID != "" {
			t.Fatalf("object %q: incarnation %v state %d put id %q", o.Key, o.Incarnation, o.State, o.PutID)
		}
		for _, r := range o.Replicas {
			if r.Kind != api.ReplicaLocalDisk || r.DFS != nil {
				t.Fatalf("object %q replica %+v is not LOCAL_DISK", o.Key, r)
			}
		}
	}
	for _, s := range got.segments {
		if s.MountEpoch != 0 || s.Capabilities != nil || s.Retired {
			t.Fatalf("segment %q: epoch %d caps %v retired %v", s.ID, s.MountEpoch, s.Capabilities, s.Retired)
		}
	}
	h, c, err := Inspect(bytes.NewReader(data))
	must(t, err)
	if h.Format != Format100 || c != (Counts{Objects: 2, Segments: 2}) {
		t.Fatalf("Inspect: %+v %+v", h, c)
	}
}
