package transport

import (
	"context"
	"fmt"
	"testing"

	"sexton/api"
)

// TestHolderLinkMethods: each typed call sends its own method with its own
// request type and decodes into its own response type, which is what the
// master's handler table (master/rpc.go) registers under that method.
func TestHolderLinkMethods(t *testing.T) {
	var got []string
	l := NewHolderLink(func(_ context.Context, method string, req, resp any) error {
		got = append(got, fmt.Sprintf("%s %T %T", method, req, resp))
		return nil
	})
	ctx := context.Background()
	_, _ = l.Mount(ctx, &api.MountLocalDiskRequest{})
	_ = l.Unmount(ctx, &api.UnmountLocalDiskRequest{})
	_, _ = l.Heartbeat(ctx, &api.HeartbeatRequest{})
	_, _ = l.Fetch(ctx, &api.FetchTasksRequest{})
	_, _ = l.Ack(ctx, &api.AckTasksRequest{})
	_, _ = l.Reconcile(ctx, &api.ReconcileRequest{})
	_, _ = l.Evict(ctx, &api.EvictRequest{})
	_, _ = l.ListReplicas(ctx, &api.ListReplicasRequest{})
	_, _ = l.DropTombstoned(ctx, &api.DropTombstonedRequest{})
	want := []string{
		"MountLocalDisk *api.MountLocalDiskRequest *api.MountLocalDiskResponse",
		"UnmountLocalDisk *api.UnmountLocalDiskRequest *api.Empty",
		"Heartbeat *api.HeartbeatRequest *api.HeartbeatResponse",
		"FetchLocalDeleteTasks *api.FetchTasksRequest *api.FetchTasksResponse",
		"AckLocalDeleteTasks *api.AckTasksRequest *api.AckTasksResponse",
		"ReconcileLocalDiskObjects *api.ReconcileRequest *api.ReconcileResponse",
		"EvictLocalDiskObjects *api.EvictRequest *api.EvictResponse",
		"ListLocalDiskReplicas *api.ListReplicasRequest *api.ListReplicasResponse",
		"DropTombstonedReplicas *api.DropTombstonedRequest *api.DropTombstonedResponse",
	}
	if len(got) != len(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %s, want %s", i, got[i], want[i])
		}
	}
}
