package snapshot

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"sexton/api"
)

func genIncarnation() *rapid.Generator[api.ObjectIncarnation] {
	return rapid.Custom(func(t *rapid.T) api.ObjectIncarnation {
		return api.ObjectIncarnation{High: rapid.Uint64().Draw(t, "high"), Low: rapid.Uint64().Draw(t, "low")}
	})
}

func genName(maxLen int) *rapid.Generator[string] {
	return rapid.StringOfN(rapid.RuneFrom([]rune("abcxyz/-_.é0123456789")), 1, maxLen, -1)
}

func genReplica() *rapid.Generator[api.ReplicaDescriptor] {
	return rapid.Custom(func(t *rapid.T) api.ReplicaDescriptor {
		if rapid.Bool().Draw(t, "dfs") {
			return api.ReplicaDescriptor{Kind: api.ReplicaDFS,
				Pool: rapid.SampledFrom([]string{"", "dfs"}).Draw(t, "pool"),
				DFS: &api.DFSDescriptor{
					Allocator:   rapid.SampledFrom([]string{"bucket", "shard"}).Draw(t, "alloc"),
					Path:        genName(300).Draw(t, "path"),
					UnitID:      rapid.Uint64().Draw(t, "unit"),
					Offset:      rapid.Int64().Draw(t, "off"),
					Size:        rapid.Int64().Draw(t, "size"),
					AlignedSize: rapid.Int64().Draw(t, "asize"),
				}}
		}
		return api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk,
			Segment: api.SegmentID(genName(40).Draw(t, "seg")),
			Pool:    rapid.SampledFrom([]string{"", "ssd", strings.Repeat("p", 200)}).Draw(t, "pool")}
	})
}

func genObject() *rapid.Generator[Object] {
	return rapid.Custom(func(t *rapid.T) Object {
		o := Object{
			Key:         genName(300).Draw(t, "key"),
			Tenant:      rapid.SampledFrom([]string{"", "default", "t"}).Draw(t, "tenant"),
			Size:        rapid.Int64Min(0).Draw(t, "size"),
			Incarnation: genIncarnation().Draw(t, "inc"),
			State:       rapid.SampledFrom([]ObjectState{ObjectPending, ObjectComplete}).Draw(t, "state"),
			Created:     rapid.Int64().Draw(t, "created"),
			PutID:       rapid.SampledFrom([]string{"", "put-1"}).Draw(t, "put"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "replicas shape") {
		case 0: // nil
		case 1:
			o.Replicas = []api.ReplicaDescriptor{}
		default:
			o.Replicas = rapid.SliceOfN(genReplica(), 1, api.MaxReplicas).Draw(t, "replicas")
		}
		return o
	})
}

func genSegment(v120, v140 bool) *rapid.Generator[Segment] {
	return rapid.Custom(func(t *rapid.T) Segment {
		s := Segment{
			ID:         api.SegmentID(genName(64).Draw(t, "id")),
			ClientID:   genName(64).Draw(t, "client"),
			Pool:       genName(10).Draw(t, "pool"),
			Capacity:   rapid.Int64().Draw(t, "cap"),
			Endpoint:   genName(30).Draw(t, "ep"),
			MountEpoch: rapid.Uint64().Draw(t, "epoch"),
			Mounted:    rapid.Bool().Draw(t, "mounted"),
			Retired:    rapid.Bool().Draw(t, "retired"),
		}
		if rapid.Bool().Draw(t, "has caps") {
			s.Capabilities = rapid.SliceOfN(rapid.Map(genName(20), func(s string) api.Capability { return api.Capability(s) }), 0, api.MaxCapabilities).Draw(t, "caps")
		}
		if v120 && rapid.Bool().Draw(t, "has process") {
			s.Process = genName(64).Draw(t, "process")
		}
		if v140 {
			s.RebuildMember = rapid.Bool().Draw(t, "rebuild member")
		}
		return s
	})
}

func genTask() *rapid.Generator[Task] {
	return rapid.Custom(func(t *rapid.T) Task {
		return Task{
			ID:          rapid.Uint64().Draw(t, "id"),
			Segment:     api.SegmentID(genName(40).Draw(t, "seg")),
			Key:         genName(100).Draw(t, "key"),
			Tenant:      rapid.SampledFrom([]string{"", "default"}).Draw(t, "tenant"),
			Incarnation: genIncarnation().Draw(t, "inc"),
			Created:     rapid.Int64().Draw(t, "created"),
		}
	})
}

func genState(v120, v140 bool) *rapid.Generator[State] {
	return rapid.Custom(func(t *rapid.T) State {
		s := State{
			MasterEpoch: rapid.Uint64().Draw(t, "epoch"),
			NextTaskID:  rapid.Uint64().Draw(t, "next"),
			LeaderID:    genName(20).Draw(t, "leader"),
			LeaderAddr:  genName(20).Draw(t, "addr"),
			LastNow:     rapid.Int64().Draw(t, "now"),
		}
		if rapid.Bool().Draw(t, "audit") {
			s.Audit = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) AuditEntry {
				return AuditEntry{Index: rapid.Uint64().Draw(t, "i"), Segment: "s", By: "op",
					Reason: genName(50).Draw(t, "why"), DroppedTasks: rapid.IntRange(-5, 1<<30).Draw(t, "n"),
					At: rapid.Int64().Draw(t, "at")}
			}), 0, 20).Draw(t, "audit")
		}
		if v120 {
			if rapid.Bool().Draw(t, "settings") {
				s.Settings = &api.Settings{
					RegistryCapacity: rapid.IntRange(0, 1<<30).Draw(t, "cap"), SessionTTLMillis: rapid.Int64().Draw(t, "ttl"),
					MaxSessions: rapid.Int().Draw(t, "max sessions"), MaxSessionResults: rapid.Int().Draw(t, "max results"),
				}
			}
			if rapid.Bool().Draw(t, "grant key") {
				s.GrantKey = rapid.SliceOfN(rapid.Byte(), api.GrantKeyLen, api.GrantKeyLen).Draw(t, "key")
			}
			s.SessionClock = rapid.Int64().Draw(t, "clock")
			s.IncBase = rapid.Uint64().Draw(t, "inc base")
			s.RebuildCluster = rapid.Uint64().Draw(t, "rebuild cluster")
		}
		if v140 {
			if s.Settings == nil && rapid.Bool().Draw(t, "legacy settings") {
				s.Legacy = &api.Settings{RegistryCapacity: rapid.IntRange(0, 1<<30).Draw(t, "legacy cap")}
			}
			s.RebuildClosed = rapid.Bool().Draw(t, "rebuild closed")
			s.RebuildOverflow = rapid.Bool().Draw(t, "rebuild overflow")
			if s.RebuildCluster != 0 && !s.RebuildClosed && !s.RebuildOverflow {
				n := rapid.IntRange(0, 50).Draw(t, "removed")
				for i := 0; i < n; i++ {
					d := make([]byte, RebuildRemovedDigestLen)
					d[0], d[1] = byte(i>>8), byte(i) // strictly ascending
					s.RebuildRemoved = append(s.RebuildRemoved, d...)
				}
			}
		}
		return s
	})
}

func genAPIError() *rapid.Generator[*api.Error] {
	return rapid.Custom(func(t *rapid.T) *api.Error {
		if rapid.Bool().Draw(t, "no error") {
			return nil
		}
		return &api.Error{Code: api.Code(genName(30).Draw(t, "code")), Message: rapid.SampledFrom([]string{"", "key \"a\"", strings.Repeat("m", 2000)}).Draw(t, "msg"),
			Leader: rapid.SampledFrom([]string{"", "m1:7000"}).Draw(t, "leader")}
	})
}

func genSessionRecord() *rapid.Generator[SessionRecord] {
	return rapid.Custom(func(t *rapid.T) SessionRecord {
		s := SessionRecord{ClientID: genName(40).Draw(t, "client"), Floor: rapid.Uint64().Draw(t, "floor"), LastActive: rapid.Int64().Draw(t, "active")}
		if rapid.Bool().Draw(t, "no result") {
			return s
		}
		r := &SessionResult{Seq: rapid.Uint64().Draw(t, "seq"), Kind: rapid.Uint8().Draw(t, "kind"), Err: genAPIError().Draw(t, "err"),
			Inc: genIncarnation().Draw(t, "inc"), Count: rapid.Int64Range(0, maxSessionItems).Draw(t, "n")}
		if rapid.Bool().Draw(t, "reps") {
			r.Replicas = rapid.SliceOfN(genReplica(), 1, api.MaxReplicas).Draw(t, "replicas")
		}
		if rapid.Bool().Draw(t, "items") {
			r.Items = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) SessionItem {
				it := SessionItem{I: rapid.Int64().Draw(t, "i"), Tasks: rapid.Int64().Draw(t, "tasks"), Err: genAPIError().Draw(t, "err")}
				if rapid.Bool().Draw(t, "reps") {
					it.Replicas = rapid.SliceOfN(genReplica(), 1, 3).Draw(t, "replicas")
				}
				return it
			}), 1, 8).Draw(t, "items")
		}
		if rapid.Bool().Draw(t, "settings") {
			r.Settings = &api.Settings{RegistryCapacity: 5, SessionTTLMillis: rapid.Int64().Draw(t, "ttl")}
		}
		s.Result = r
		return s
	})
}

// contents is everything one snapshot holds.
type contents struct {
	header   Header
	objects  []Object
	segments []Segment
	tasks    []Task
	state    State
	sessions []SessionRecord // 1.2.0 and later
	jobs     []Job           // 1.3.0 and later
	dfs      [][]byte
}

// writeContents writes c in the format its header names (1.1.0, or else
// 1.2.0 or later, whose state section comes before the tasks; jobs from
// 1.3.0).
func writeContents(t fataler, c *contents) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, c.header)
	must(t, err)
	must(t, w.BeginSection(SectionMetadata))
	for i := range c.objects {
		must(t, w.WriteRecord(&c.objects[i]))
	}
	must(t, w.EndSection())
	must(t, w.BeginSection(SectionSegments))
	for i := range c.segments {
		must(t, w.WriteRecord(c.segments[i])) // by value works too
	}
	must(t, w.EndSection())
	v120 := c.header.Format != Format110
	v130 := v120 && c.header.Format != Format120
	writeState := func() {
		must(t, w.BeginSection(SectionState))
		must(t, w.WriteRecord(&c.state))
		must(t, w.EndSection())
	}
	if v120 {
		writeState()
	}
	must(t, w.BeginSection(SectionTasks))
	for i := range c.tasks {
		must(t, w.WriteRecord(&c.tasks[i]))
	}
	must(t, w.EndSection())
	if v120 {
		must(t, w.BeginSection(SectionSessions))
		for i := range c.sessions {
			must(t, w.WriteRecord(&c.sessions[i]))
		}
		must(t, w.EndSection())
	} else {
		writeState()
	}
	if v130 {
		must(t, w.BeginSection(SectionJobs))
		for i := range c.jobs {
			must(t, w.WriteRecord(&c.jobs[i]))
		}
		must(t, w.EndSection())
	}
	if c.dfs != nil {
		must(t, w.BeginSection(SectionDFSBuckets))
		for _, raw := range c.dfs {
			must(t, w.WriteRecord(msgpack.RawMessage(raw)))
		}
		must(t, w.EndSection())
	}
	must(t, w.Close())
	if w.Written() != int64(buf.Len()) {
		t.Fatalf("Written() = %d, buffer holds %d", w.Written(), buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTrip110(t *testing.T) { testRoundTrip(t, Format110) }
func TestRoundTrip120(t *testing.T) { testRoundTrip(t, Format120) }
func TestRoundTrip130(t *testing.T) { testRoundTrip(t, Format130) }
func TestRoundTrip140(t *testing.T) { testRoundTrip(t, Format140) }

func genJob(v140 bool) *rapid.Generator[Job] {
	return rapid.Custom(func(t *rapid.T) Job {
		prefix := rapid.StringN(0, 8, 16).Draw(t, "prefix")
		j := Job{
			ID: rapid.Uint64Min(1).Draw(t, "id"), Kind: api.JobKindPrefixDelete, Prefix: prefix,
			Start:   api.ObjectIncarnation{High: rapid.Uint64().Draw(t, "high"), Low: rapid.Uint64().Draw(t, "low")},
			Removed: rapid.Int64Min(0).Draw(t, "removed"), Skipped: rapid.Int64Min(0).Draw(t, "skipped"),
			Steps:   rapid.Int64Min(0).Draw(t, "steps"),
			State:   rapid.SampledFrom([]string{api.JobRunning, api.JobPausedRegistryFull, api.JobCancelled, api.JobDone}).Draw(t, "state"),
			Created: rapid.Int64().Draw(t, "created"), Updated: rapid.Int64().Draw(t, "updated"),
		}
		if rapid.Bool().Draw(t, "cursor") {
			j.Cursor = prefix + rapid.StringN(1, 8, 16).Draw(t, "rest")
		}
		// A kept key: under the prefix after the cursor, of an incarnation
		// older than the start, in an active job.
		base := j.Cursor
		if base == "" {
			base = prefix
		}
		if k := base + "~"; v140 && j.Active() && j.Start.Low > 1 && api.ValidKey(k) == nil && rapid.Bool().Draw(t, "kept") {
			j.Kept = []api.JobKept{{Key: k, Incarnation: api.ObjectIncarnation{High: j.Start.High, Low: j.Start.Low - 1}}}
		}
		return j
	})
}

func testRoundTrip(t *testing.T, format string) {
	v120 := format != Format110
	v140 := format == Format140
	rapid.Check(t, func(t *rapid.T) {
		c := &contents{
			header: Header{Format: format, ClusterID: rapid.Uint64().Draw(t, "cluster"),
				LastIndex: rapid.Uint64().Draw(t, "index"), LastTerm: rapid.Uint64().Draw(t, "term"),
				Created: rapid.Int64().Draw(t, "created")},
			objects:  rapid.SliceOfN(genObject(), 0, 20).Draw(t, "objects"),
			segments: rapid.SliceOfN(genSegment(v120, v140), 0, 5).Draw(t, "segments"),
			tasks:    rapid.SliceOfN(genTask(), 0, 20).Draw(t, "tasks"),
			state:    genState(v120, v140).Draw(t, "state"),
		}
		if format == Format140 && rapid.Bool().Draw(t, "forced") {
			c.header.Format = "ignored" // anything but 1.1.0, 1.2.0 and 1.3.0 writes 1.4.0
		}
		if format == Format130 || format == Format140 {
			c.jobs = rapid.SliceOfN(genJob(v140), 0, 5).Draw(t, "jobs")
		}
		if v120 {
			c.sessions = rapid.SliceOfN(genSessionRecord(), 0, 10).Draw(t, "sessions")
		}
		if rapid.Bool().Draw(t, "dfs") {
			for _, n := range rapid.SliceOfN(rapid.Uint64(), 0, 5).Draw(t, "dfs") {
				c.dfs = append(c.dfs, encodeRec(t, map[string]any{"id": n, "tag": "x"}))
			}
		}
		data := writeContents(t, c)
		got, err := readAll(data)
		if err != nil {
			t.Fatal(err)
		}
		wantHeader := c.header
		wantHeader.Format = format
		if got.header != wantHeader {
			t.Fatalf("header %+v, want %+v", got.header, wantHeader)
		}
		checkSame(t, "objects", got.objects, c.objects)
		checkSame(t, "segments", got.segments, c.segments)
		checkSame(t, "tasks", got.tasks, c.tasks)
		checkSame(t, "sessions", got.sessions, c.sessions)
		checkSame(t, "jobs", got.jobs, c.jobs)
		if len(got.states) != 1 || !reflect.DeepEqual(*got.states[0], c.state) {
			t.Fatalf("state %s, want %+v", dump(got.states), c.state)
		}
		if len(got.dfs) != len(c.dfs) || (len(c.dfs) > 0 && !reflect.DeepEqual(got.dfs, c.dfs)) {
			t.Fatalf("dfs %x, want %x", got.dfs, c.dfs)
		}
		// Writing the same contents again gives the same bytes.
		if again := writeContents(t, c); !bytes.Equal(again, data) {
			t.Fatal("two writes of the same contents differ")
		}
	})
}

// checkSame compares the pointers Read produced with the values written.
func checkSame[T any](t *rapid.T, what string, got []*T, want []T) {
	if len(got) != len(want) {
		t.Fatalf("%s: read %d, wrote %d", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(*got[i], want[i]) {
			t.Fatalf("%s[%d]:\n got %+v\nwant %+v", what, i, *got[i], want[i])
		}
	}
}

func TestFastObjectEncodingMatchesReflection(t *testing.T) {
	fastMatchesReflection(t, genObject(), appendObject)
}

func TestFastTaskEncodingMatchesReflection(t *testing.T) {
	fastMatchesReflection(t, genTask(), appendTask)
}

// fastMatchesReflection checks that the hand-written appender gives the
// bytes of msgpack's reflection encoding for every record gen draws.
func fastMatchesReflection[T any](t *testing.T, gen *rapid.Generator[T], fast func([]byte, *T) []byte) {
	rapid.Check(t, func(t *rapid.T) {
		rec := gen.Draw(t, "record")
		got := fast(nil, &rec)
		want := encodeRec(t, &rec)
		if !bytes.Equal(got, want) {
			t.Fatalf("fast %x\nslow %x", got, want)
		}
	})
}

// TestDecodersAcceptAnyIntegerWidth: a writer without compact ints (plain
// msgpack.Marshal) produces records the reader takes as the same values.
func TestDecodersAcceptAnyIntegerWidth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := genObject().Draw(t, "object")
		s := genSegment(true, true).Draw(t, "segment")
		task := genTask().Draw(t, "task")
		st := genState(true, true).Draw(t, "state")
		sess := genSessionRecord().Draw(t, "session")
		for _, c := range []struct {
			section string
			v       any
		}{{SectionMetadata, o}, {SectionSegments, s}, {SectionTasks, task}, {SectionState, st}, {SectionSessions, sess}} {
			raw, err := msgpack.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			r := &mpReader{b: raw}
			got, err := sectionNamed(c.section).get(r, Format140)
			if err != nil {
				t.Fatalf("%T: %v", c.v, err)
			}
			if r.remaining() != 0 {
				t.Fatalf("%T: %d bytes left", c.v, r.remaining())
			}
			if got := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(got, c.v) {
				t.Fatalf("%T:\n got %+v\nwant %+v", c.v, got, c.v)
			}
		}
	})
}

func TestRoundTripSpansManyChunks(t *testing.T) {
	// 40,000 objects of ~130 bytes exceed 1 MiB: several chunks, and the
	// terminator's count adds up across them.
	c := &contents{header: fixtureHeader, state: validState()}
	for i := 0; i < 40_000; i++ {
		o := validObject()
		o.Key = fmt.Sprintf("key-%08d-%s", i, strings.Repeat("x", 64))
		o.Incarnation.Low = uint64(i)
		c.objects = append(c.objects, o)
	}
	data := writeContents(t, c)
	if len(data) < 2*MaxChunkLen {
		t.Fatalf("stream of %d bytes does not span several chunks", len(data))
	}
	_, counts, err := Inspect(bytes.NewReader(data))
	must(t, err)
	if counts.Objects != len(c.objects) {
		t.Fatalf("counted %d objects, wrote %d", counts.Objects, len(c.objects))
	}
	got, err := readAll(data)
	must(t, err)
	for i, o := range got.objects {
		if o.Key != c.objects[i].Key || o.Incarnation.Low != uint64(i) {
			t.Fatalf("object %d is %q/%d", i, o.Key, o.Incarnation.Low)
		}
	}
}

func TestDFSRecordDecodesStrictly(t *testing.T) {
	type bucket struct {
		ID uint64 `msgpack:"id"`
	}
	var b bucket
	must(t, DecodeDFSRecord(encodeRec(t, bucket{ID: 9}), &b))
	if b.ID != 9 {
		t.Fatalf("decoded %+v", b)
	}
	wantErr(t, DecodeDFSRecord(encodeRec(t, map[string]int{"id": 1, "other": 2}), &b), ErrCorrupt)
	wantErr(t, DecodeDFSRecord([]byte{0x91, 0xdd, 0xff, 0xff, 0xff, 0xff}, &b), ErrCorrupt)
}
