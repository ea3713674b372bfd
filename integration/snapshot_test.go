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
// and pending tasks come back; inspect reads both a 1.3.0 and a 1.0.0 file.
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
	for _, want := range []string{"format:     1.3.0", "objects:    30", "segments:   1", "tasks:      10"} {
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
