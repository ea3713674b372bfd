package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// rawEntry builds an entry from a type byte and an arbitrary msgpack body,
// the way a newer (or broken) leader could have written it.
func rawEntry(t testing.TB, typ CommandType, body any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{byte(typ)}, b...)
}

// populated returns a harness with a segment, objects and pending tasks.
func populated(t testing.TB) *harness {
	h := newMounted(t, DefaultRegistryCapacity)
	h.put("a", "s1")
	h.put("b", "s1")
	h.put("c", "s1")
	h.remove("a")
	return h
}

// assertFatalAndUnchanged applies data and checks it fails with want while
// the state, snapshot bytes and applied index stay exactly as they were.
func assertFatalAndUnchanged(t *testing.T, h *harness, data []byte, want error) {
	t.Helper()
	before := snapshotBytes(t, h.f)
	idx := h.f.Stats().AppliedIndex
	res, err := h.f.Apply(idx+1, 1, data)
	if !errors.Is(err, want) {
		t.Fatalf("Apply error = %v, want %v", err, want)
	}
	if res != nil {
		t.Fatalf("Apply returned a result %#v with a fatal error", res)
	}
	if got := h.f.Stats().AppliedIndex; got != idx {
		t.Fatalf("applied index advanced from %d to %d", idx, got)
	}
	if after := snapshotBytes(t, h.f); !bytes.Equal(before, after) {
		t.Fatal("state changed by a refused entry")
	}
}

func TestUnknownRemoveVersionFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		body map[string]any
		want error
	}{
		{"v3 with v2 fields", map[string]any{"v": 3, "keys": []string{"b"}, "now": 5}, ErrUnknownVersion},
		{"v3 with new fields", map[string]any{"v": 3, "keys": []string{"b"}, "mode": "hard", "now": 5}, ErrUnknownVersion},
		{"v1 with a v2 field", map[string]any{"v": 1, "keys": []string{"b"}, "sess": map[string]any{"client": "c", "seq": 1}}, ErrCorruptCommand},
		{"v1 with an empty v2 field", map[string]any{"v": 1, "keys": []string{"b"}, "if_inc": []any{}}, ErrCorruptCommand},
		{"v2 spans not covering the keys", map[string]any{"v": 2, "keys": []string{"b"}, "spans": []any{map[string]any{"n": 2}}}, ErrCorruptCommand},
		{"v2 spans and an entry session", map[string]any{"v": 2, "keys": []string{"b"}, "spans": []any{map[string]any{"n": 1}}, "sess": map[string]any{"client": "c", "seq": 1}}, ErrCorruptCommand},
		{"v2 if_inc not one per key", map[string]any{"v": 2, "keys": []string{"b"}, "if_inc": []any{map[string]any{}, map[string]any{}}}, ErrCorruptCommand},
		{"v2 negative span", map[string]any{"v": 2, "keys": []string{"b"}, "spans": []any{map[string]any{"n": -1}, map[string]any{"n": 2}}}, ErrCorruptCommand},
		{"v0", map[string]any{"v": 0, "keys": []string{"b"}}, ErrUnknownVersion},
		{"no v", map[string]any{"keys": []string{"b"}}, ErrUnknownVersion},
		{"v 255", map[string]any{"v": 255, "keys": []string{"b"}}, ErrUnknownVersion},
		{"v1 unknown field", map[string]any{"v": 1, "keys": []string{"b"}, "mode": "hard"}, ErrCorruptCommand},
		{"v1 wrong type", map[string]any{"v": 1, "keys": "b"}, ErrCorruptCommand},
		{"v1 too many keys", map[string]any{"v": 1, "keys": make([]string, api.MaxBatchKeys+1)}, ErrCorruptCommand},
		{"v1 key too long", map[string]any{"v": 1, "keys": []string{strings.Repeat("k", api.MaxKeyLen+1)}}, ErrCorruptCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := populated(t)
			assertFatalAndUnchanged(t, h, rawEntry(t, CmdRemove, tc.body), tc.want)
			if !h.f.Exists("b") {
				t.Fatal("b removed by a refused entry")
			}
		})
	}
}

func TestUnknownAckVersionFailsClosed(t *testing.T) {
	h := populated(t)
	task := h.fetch("s1", 1)[0]
	result := map[string]any{"id": task.ID, "k": task.Key, "i": map[string]any{"h": task.Incarnation.High, "l": task.Incarnation.Low}, "o": 1}
	for _, tc := range []struct {
		name string
		body map[string]any
		want error
	}{
		{"v2", map[string]any{"v": 2, "seg": "s1", "epoch": 1, "results": []any{result}}, ErrUnknownVersion},
		{"no v", map[string]any{"seg": "s1", "epoch": 1, "results": []any{result}}, ErrUnknownVersion},
		{"v1 unknown result field", map[string]any{"v": 1, "seg": "s1", "epoch": 1, "results": []any{map[string]any{"id": task.ID, "x": 1}}}, ErrCorruptCommand},
		{"v1 too many results", map[string]any{"v": 1, "seg": "s1", "epoch": 1, "results": make([]any, MaxAckResults+1)}, ErrCorruptCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertFatalAndUnchanged(t, h, rawEntry(t, CmdLocalDeleteAck, tc.body), tc.want)
			if got := h.fetch("s1", 1); len(got) != 1 || got[0] != task {
				t.Fatalf("task changed by a refused ack: %v", got)
			}
		})
	}
	// The same ack at v1 is accepted and drops the task, so the refusals
	// above were about the version, not the content.
	if _, err := h.f.Apply(h.f.Stats().AppliedIndex+1, 1, rawEntry(t, CmdLocalDeleteAck, map[string]any{"v": 1, "seg": "s1", "epoch": 1, "results": []any{result}})); err != nil {
		t.Fatal(err)
	}
	if got := h.fetch("s1", 1); len(got) != 0 {
		t.Fatalf("v1 ack did not drop the task: %v", got)
	}
}

func TestCorruptEntriesFailClosed(t *testing.T) {
	h := populated(t)
	good, err := Encode(&Remove{Keys: []string{"b"}, Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		data []byte
		want error
	}{
		"empty":          {nil, ErrCorruptCommand},
		"type 0":         {[]byte{0, 0x80}, ErrUnknownCommand},
		"type 200":       {append([]byte{200}, good[1:]...), ErrUnknownCommand},
		"no body":        {good[:1], ErrCorruptCommand},
		"trailing bytes": {append(append([]byte{}, good...), 0xc0), ErrCorruptCommand},
		"body not a map": {rawEntry(t, CmdRemove, []int{1, 2}), ErrCorruptCommand},
	}
	for i := 1; i < len(good)-1; i++ {
		cases["truncated at "+strconv.Itoa(i)] = struct {
			data []byte
			want error
		}{good[:i], nil}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.want == nil {
				// A truncated entry must fail with one of the fatal errors.
				_, err := Decode(tc.data)
				if !errors.Is(err, ErrCorruptCommand) && !errors.Is(err, ErrUnknownVersion) {
					t.Fatalf("Decode(truncated) = %v", err)
				}
				return
			}
			assertFatalAndUnchanged(t, h, tc.data, tc.want)
		})
	}
}

func TestEncodeRefusesFieldsOfALaterVersion(t *testing.T) {
	for _, c := range []Command{
		&Remove{V: RemoveV1, Keys: []string{"a"}, Session: api.Session{ClientID: "c", Seq: 1}},
		&Remove{V: RemoveV1, Keys: []string{"a"}, IfInc: []api.ObjectIncarnation{{High: 1, Low: 2}}},
		&PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: "a"}, Session: api.Session{ClientID: "c", Seq: 1}},
		&EpochBegin{V: EpochBeginV1, GrantKey: make([]byte, api.GrantKeyLen)},
		&MountLocalDisk{V: MountLocalDiskV1, ClientID: "c", Process: "p"},
		&MountLocalDisk{V: MountLocalDiskV1, ClientID: "c", MarkerCluster: new(uint64)},
	} {
		if _, err := Encode(c); !errors.Is(err, ErrCorruptCommand) {
			t.Errorf("Encode(%s v1 with a v2 field) = %v", c.Type(), err)
		}
	}
	if _, err := Encode(&EpochBegin{GrantKey: make([]byte, api.GrantKeyLen+1)}); !errors.Is(err, ErrCorruptCommand) {
		t.Errorf("Encode(grant key too long) = %v", err)
	}
	if _, err := Encode(&MountLocalDisk{Process: strings.Repeat("p", api.MaxIDLen+1)}); !errors.Is(err, ErrCorruptCommand) {
		t.Errorf("Encode(process id too long) = %v", err)
	}
}

func TestEncodeRefusesUnknownVersionAndFillsZero(t *testing.T) {
	if _, err := Encode(&Remove{V: 9}); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("Encode(v9) = %v", err)
	}
	if _, err := Encode(&Remove{Keys: make([]string, api.MaxBatchKeys+1)}); !errors.Is(err, ErrCorruptCommand) {
		t.Fatalf("Encode(too many keys) = %v", err)
	}
	in := &Remove{Keys: []string{"a"}, Now: 3}
	data, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if in.V != 0 {
		t.Fatal("Encode modified its argument")
	}
	out, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&Remove{V: RemoveV2, Keys: []string{"a"}, Now: 3}); !reflect.DeepEqual(out, want) {
		t.Fatalf("round trip = %#v, want %#v", out, want)
	}
}

// sampleCommands has one valid command of every type, used by the round
// trip test and as the fuzz seed corpus.
func sampleCommands() []Command {
	inc := api.ObjectIncarnation{High: 7, Low: 42}
	sess := api.Session{ClientID: "client-1", Seq: 9, Floor: 8}
	return []Command{
		&EpochBegin{Term: 3, LeaderID: "m1", LeaderAddr: "m1:7000", ClusterID: 7, Now: 1},
		&MountLocalDisk{ClientID: "c1", Segment: "s1", Pool: "p", Capacity: 1 << 30, Capabilities: tombstoneCaps, Endpoint: "h:1", Now: 2},
		&UnmountLocalDisk{Segment: "s1", Epoch: 4, Now: 3},
		&PutStart{PutStartItem: PutStartItem{Key: "k", Tenant: "t", Size: 5, Replicas: append(localReplicas("s1"), api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Allocator: "bucket", Path: "b/1", UnitID: 1, Offset: 4096, Size: 5, AlignedSize: 4096}}),
			PutID: "p1", IfAbsent: true}, Now: 4},
		&PutEnd{Key: "k", Incarnation: inc, Now: 5},
		&PutRevoke{Key: "k", Incarnation: inc, Now: 6},
		&Remove{Keys: []string{"a", "b", "a"}, Now: 7},
		&LocalDeleteAck{Segment: "s1", Epoch: 2, Results: []api.TaskResult{{TaskID: 1, Key: "a", Incarnation: inc, Outcome: api.AckRemoved}}, Now: 8},
		&RetireStorage{Segment: "s1", By: "ops", Reason: "lost", Now: 9},
		&DFSConfigure{Settings: SettingsOf(dfsalloc.DefaultConfig()), Now: 10},
		&DFSTouch{Refs: []dfsalloc.EntryRef{{Key: "k", Desc: api.DFSDescriptor{Allocator: "shard", Path: "dfs_shard_01.data", UnitID: 1, Size: 5, AlignedSize: 4096}}}, Now: 11},
		&DFSEvict{Plan: dfsalloc.EvictionPlan{Allocator: "bucket", Candidates: []dfsalloc.EvictionCandidate{{Unit: 3, Version: 9}}}, Now: 12},
		&DFSFileOp{Kind: dfsalloc.FileCreate, Unit: 3, OK: true, Now: 13},
		&DFSSetMaxBuckets{Max: 128, Now: 14},
		&DFSMarkLost{Unit: 3, Now: 15},
		&PutStartBatch{Items: []PutStartItem{{Key: "a", Tenant: "t", Size: 5, Replicas: localReplicas("s1"), PutID: "p1", IfAbsent: true}, {Key: "b", Size: 6, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaDFS}}}}, Now: 16},
		&PutEndBatch{Items: []PutEndItem{{Key: "a", Incarnation: inc}, {Key: "b", Incarnation: inc}}, Now: 17},
		&Settings{Settings: api.Settings{RegistryCapacity: 10, SessionTTLMillis: 5000}, Session: sess, Now: 18},
		&JobStart{Prefix: "logs/", Session: sess, Now: 19},
		&JobAdvance{Job: 40, After: "logs/a", Keys: []string{"logs/b", "logs/c"}, Last: true, Now: 20},
		&JobAdvance{Job: 40, After: "logs/c", Pause: true, Now: 21},
		&JobCancel{Job: 40, Session: sess, Now: 22},
		&DropTombstoned{Segment: "s1", Epoch: 2, Refs: []api.ObjectRef{{Key: "k", Incarnation: inc}}, Now: 23},
		&RebuildBegin{ClusterID: 7, IncFloor: 900, Segments: []RebuildSegment{{Segment: "s1", Pool: "p", Capabilities: tombstoneCaps}}, Finish: true, Now: 20},
		&RebuildAdopt{ClusterID: 7, Objects: []RebuildObject{{Key: "k", Tenant: "t", Size: 3, Incarnation: inc, Replicas: localReplicas("s1")}},
			Deletes: []RebuildDelete{{Segment: "s2", Key: "k", Tenant: "t", Incarnation: api.ObjectIncarnation{High: 7, Low: 40}}}, Now: 21},
		&RebuildClose{ClusterID: 7, Now: 22},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k", Incarnation: inc, Tenant: "t", Size: 5, Replicas: localReplicas("s1"), PutID: "p1", IfAbsent: true}, Session: sess, Now: 23},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k", Incarnation: inc, Size: 5, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Allocator: "bucket", Path: "b/1", UnitID: 1, Offset: 4096, Size: 5, AlignedSize: 4096}}}}, Now: 24},
		// Version 2 fields, and version 1 bodies, which still decode.
		&EpochBegin{Term: 3, LeaderID: "m1", ClusterID: 7, GrantKey: bytes.Repeat([]byte{7}, api.GrantKeyLen), Now: 19},
		&MountLocalDisk{ClientID: "c1", Segment: "s1", Process: "proc-1", Now: 20},
		&MountLocalDisk{ClientID: "c1", Segment: "s1", Process: "proc-1", MarkerCluster: new(uint64), Now: 20},
		&PutStart{PutStartItem: PutStartItem{Key: "k", Size: 5, Replicas: localReplicas("s1")}, Session: sess, Now: 21},
		&PutEnd{Key: "k", Incarnation: inc, Session: sess, Now: 22},
		&PutRevoke{Key: "k", Incarnation: inc, Session: sess, Now: 23},
		&Remove{Keys: []string{"a", "b"}, IfInc: []api.ObjectIncarnation{inc, {}}, Session: sess, Now: 24},
		&Remove{Keys: []string{"a", "b", "c"}, Spans: []RemoveSpan{{Session: sess, N: 2}, {N: 1}}, Now: 25},
		&PutStartBatch{Items: []PutStartItem{{Key: "a", Replicas: localReplicas("s1")}}, Session: sess, Now: 26},
		&PutEndBatch{Items: []PutEndItem{{Key: "a", Incarnation: inc}}, Session: sess, Now: 27},
		&Remove{V: RemoveV1, Keys: []string{"a"}, Now: 28},
		&PutStart{V: PutStartV1, PutStartItem: PutStartItem{Key: "k", Size: 5, Replicas: localReplicas("s1")}, Now: 29},
		&EpochBegin{V: EpochBeginV1, Term: 3, LeaderID: "m1", ClusterID: 7, Now: 30},
	}
}

func TestEveryCommandRoundTrips(t *testing.T) {
	for _, c := range sampleCommands() {
		data, err := Encode(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
		if CommandType(data[0]) != c.Type() {
			t.Fatalf("%s: type byte %d", c.Type(), data[0])
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
		want, _ := withCurrentVersion(c)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %#v, want %#v", c.Type(), got, want)
		}
	}
}

// encodesTo reports whether Encode(c) is exactly data.
func encodesTo(c Command, data []byte) bool {
	again, err := Encode(c)
	return err == nil && bytes.Equal(again, data)
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands() {
		data, err := Encode(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{byte(CmdRemove), 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := Decode(data)
		// The hand-written decoders accept what reflection does, with one
		// exception: reflection also reads a struct written in msgpack's
		// array form (an empty array as the zero value), which Encode
		// never writes; the fast decoders refuse it (fail closed). So when
		// only reflection accepts, the input must be one Encode would not
		// have written (found by this target: a RemoveSpan as 0x90).
		slow, slowErr := decode(data, false)
		stricter := err != nil && slowErr == nil && !encodesTo(slow, data) &&
			strings.Contains(err.Error(), "decoding map length")
		if !stricter && ((err == nil) != (slowErr == nil) || (err == nil && !reflect.DeepEqual(cmd, slow))) {
			t.Fatalf("fast and reflection decoders disagree:\n fast %#v, %v\n slow %#v, %v", cmd, err, slow, slowErr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptCommand) && !errors.Is(err, ErrUnknownVersion) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("untyped decode error: %v", err)
			}
			return
		}
		again, err := Encode(cmd)
		if err != nil {
			t.Fatalf("decoded command does not re-encode: %v", err)
		}
		cmd2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded command does not decode: %v", err)
		}
		if !reflect.DeepEqual(cmd, cmd2) {
			t.Fatalf("re-decoded %#v != %#v", cmd2, cmd)
		}
		// Applying whatever decodes must not panic either.
		_, _ = newWithCapacity(4).Apply(1, 1, data)
	})
}

// TestFastEncodersMatch checks that the hand-written encoders write the
// bytes reflection writes, for every sample and for PutCommits with each
// optional part present and absent.
func TestFastEncodersMatch(t *testing.T) {
	inc := api.ObjectIncarnation{High: 1 << 40, Low: 3}
	dfs := api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Allocator: "shard", Path: "p", UnitID: 1 << 33, Offset: -1, Size: 1 << 40, AlignedSize: 4096}}
	cmds := append(sampleCommands(),
		&PutCommit{},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k", Incarnation: inc, Replicas: []api.ReplicaDescriptor{}}, Now: -5},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k", Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk}, {Kind: api.ReplicaLocalDisk, Pool: "p"}, dfs}, Size: -1}},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k"}, Session: api.Session{ClientID: "c"}, Now: 1 << 62},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k"}, Session: api.Session{ClientID: "c", Floor: 200}},
		&PutCommit{PutCommitItem: PutCommitItem{Key: "k"}, Session: api.Session{Seq: 9, Floor: 8}}, // no client: no session, omitted
		&PutCommit{V: 200, PutCommitItem: PutCommitItem{Key: "k", IfAbsent: true, PutID: strings.Repeat("x", 200), Tenant: "t"}},
	)
	for _, c := range cmds {
		if _, ok := c.(*PutCommit); ok && c.(*PutCommit).V == 200 {
			// Refused before either encoder runs.
			if _, err := Encode(c); !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("v200: %v", err)
			}
			c.(*PutCommit).V = PutCommitV1
		}
		fast, err := encode(c, true)
		if err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
		slow, err := encode(c, false)
		if err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("%s %+v:\n hand       %x\n reflection %x", c.Type(), c, fast, slow)
		}
	}
}
