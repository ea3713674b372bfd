package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/snapshot"
)

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sexton %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func taskSet(tasks []api.LocalDeleteTask) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, fmt.Sprintf("%d %s %s %s", t.ID, t.Segment, t.Key, t.Incarnation))
	}
	sort.Strings(out)
	return out
}

// snapshot save on one cluster, restore into a fresh one: objects, mounts
// and pending tasks come back; inspect reads both a 1.4.0 and a 1.0.0 file.
func TestSnapshotSaveRestoreIntoFreshCluster(t *testing.T) {
	a := startCluster(t, 3)
	cl := a.client(0)
	h := mountFake(t, cl, "snap-a", "p1")
	live := map[string]api.ObjectIncarnation{}
	for i := 0; i < 40; i++ {
		key := fmt.Sprintf("snap/%02d", i)
		ctx, cancel := ctxT(10 * time.Second)
		inc, err := putMeta(ctx, cl, key, "p1")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		live[key] = inc
	}
	var removed []string
	for i := 0; i < 10; i++ {
		removed = append(removed, fmt.Sprintf("snap/%02d", i))
	}
	ctx, cancel := ctxT(10 * time.Second)
	var rr api.BatchRemoveResponse
	if err := cl.Call(ctx, api.MethodBatchRemove, &api.KeysRequest{Keys: removed}, &rr); err != nil {
		t.Fatal(err)
	}
	cancel()
	for _, k := range removed {
		delete(live, k)
	}
	h.close()
	wantTasks := taskSet(allTasks(t, cl))
	if len(wantTasks) != 10 {
		t.Fatalf("%d tasks before save, want 10", len(wantTasks))
	}
	file := filepath.Join(t.TempDir(), "a.snap")
	runCLI(t, "operator", "snapshot", "save", file, "--masters", strings.Join(a.addrs(), ","))
	out := runCLI(t, "operator", "snapshot", "inspect", file)
	for _, want := range []string{"format:     " + snapshot.Format140, "objects:    30", "segments:   1", "tasks:      10"} {
		if !strings.Contains(out, want) {
			t.Fatalf("inspect of the saved file lacks %q:\n%s", want, out)
		}
	}
	legacy := runCLI(t, "operator", "snapshot", "inspect", filepath.Join("..", "snapshot", "testdata", "v100.snap"))
	if !strings.Contains(legacy, "format:     1.0.0") || !strings.Contains(legacy, "tasks:      0") {
		t.Fatalf("inspect of the 1.0.0 golden file:\n%s", legacy)
	}

	b := startCluster(t, 1)
	runCLI(t, "operator", "snapshot", "restore", file, "--masters", strings.Join(b.addrs(), ","))
	bc := b.client(0)
	b.waitLeader(30 * time.Second)
	if got := taskSet(allTasks(t, bc)); strings.Join(got, "\n") != strings.Join(wantTasks, "\n") {
		t.Fatalf("tasks after restore:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantTasks, "\n"))
	}
	ctx, cancel = ctxT(10 * time.Second)
	defer cancel()
	var segs api.ListSegmentsResponse
	if err := bc.Call(ctx, api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		t.Fatal(err)
	}
	if len(segs.Segments) != 1 || segs.Segments[0].ID != h.seg || segs.Segments[0].MountEpoch != h.epoch ||
		!api.HasCapability(segs.Segments[0].Capabilities, api.CapObjectTombstoneV1) {
		t.Fatalf("segments after restore: %+v; want %s at epoch %d with the tombstone capability", segs.Segments, h.seg, h.epoch)
	}
	for key, inc := range live {
		var g api.GetResponse
		if err := bc.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g); err != nil || g.Object.Incarnation != inc {
			t.Fatalf("restored %s: %v %+v, want %s", key, err, g.Object, inc)
		}
	}
	for _, key := range removed {
		if err := bc.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &api.GetResponse{}); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("removed %s visible after restore: %v", key, err)
		}
	}
}

// A restore of a snapshot taken before a remove that every holder
// acknowledged: the refusal without --allow-rollback changes nothing; with
// it the key is listed again for a moment, until the holders' ghost check
// (after the restore's new master epoch) reports its copies tombstoned and
// the leader drops it; then get says not found, put --if-absent works, the
// key kept throughout is untouched and fsck is clean.
func TestRestoreOfAnOlderSnapshotDoesNotBringBackAcknowledgedRemoves(t *testing.T) {
	c := startCluster(t, 1)
	c.startHolder(t, "rb1", "rbp")
	c.startHolder(t, "rb2", "rbp")
	m := []string{"--masters", strings.Join(c.addrs(), ",")}
	lib := c.lib()
	ctx, cancel := ctxT(2 * time.Minute)
	defer cancel()
	for _, k := range []string{"rb/gone", "rb/kept"} {
		putReplicas(t, c, k, "rbp", 2, []byte("value of "+k))
	}
	file := filepath.Join(t.TempDir(), "before-rm.snap")
	runCLI(t, append([]string{"operator", "snapshot", "save", file}, m...)...)
	if out := runCLI(t, append([]string{"rm", "rb/gone", "--wait", "30s"}, m...)...); !strings.Contains(out, "all 2 replicas seen acknowledged") {
		t.Fatalf("rm --wait did not see every replica acknowledged:\n%s", out)
	}

	out, err := runCLIErr(append([]string{"operator", "snapshot", "restore", file}, m...)...)
	if err == nil || !strings.Contains(out, "--allow-rollback") || !strings.Contains(out, "undone") {
		t.Fatalf("restore of an older snapshot without --allow-rollback: %v\n%s", err, out)
	}
	if _, _, err := lib.Get(ctx, "rb/gone"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get of the removed key after a refused restore: %v, want OBJECT_NOT_FOUND", err)
	}

	runCLI(t, append([]string{"operator", "snapshot", "restore", file, "--allow-rollback"}, m...)...)
	deadline := time.Now().Add(45 * time.Second)
	for {
		_, _, err := lib.Get(ctx, "rb/gone")
		if api.CodeOf(err) == api.CodeObjectNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed key is still in the table 45s after the restore (get: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	objs, _, err := lib.List(ctx, "rb/", "", 0)
	if err != nil || len(objs) != 1 || objs[0].Key != "rb/kept" {
		t.Fatalf("list after the ghost check: %v %+v, want rb/kept only", err, objs)
	}
	if v, _, err := lib.Get(ctx, "rb/kept"); err != nil || string(v) != "value of rb/kept" {
		t.Fatalf("get rb/kept after the restore: %q %v", v, err)
	}
	if _, err := lib.Put(ctx, "rb/gone", []byte("again"), client.PutOptions{Pool: "rbp", Replicas: 2, IfAbsent: true}); err != nil {
		t.Fatalf("put --if-absent of the removed key after the restore: %v", err)
	}
	fsckClean(t, c)
}
