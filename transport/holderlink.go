package transport

import (
	"context"

	"sexton/api"
)

// HolderLink is the holder↔master protocol as typed calls: the methods a
// holder (the holder's follow loop, the bench simulator's fake holders,
// the master's tests) calls on the masters, each with its request and
// response type, so that no caller names a method string or pairs a
// request with the wrong response.
type HolderLink struct {
	call func(ctx context.Context, method string, req, resp any) error
}

// NewHolderLink is a HolderLink that calls through call (client.Client's
// Call, or a test's).
func NewHolderLink(call func(ctx context.Context, method string, req, resp any) error) HolderLink {
	return HolderLink{call: call}
}

// HolderLink is the holder protocol over c.
func (c *ClusterClient) HolderLink() HolderLink {
	return NewHolderLink(func(ctx context.Context, method string, req, resp any) error {
		return c.Call(ctx, method, req, resp)
	})
}

// Mount mounts a segment (MountLocalDisk) and answers its mount epoch.
func (l HolderLink) Mount(ctx context.Context, req *api.MountLocalDiskRequest) (api.MountLocalDiskResponse, error) {
	var resp api.MountLocalDiskResponse
	err := l.call(ctx, api.MethodMountLocalDisk, req, &resp)
	return resp, err
}

// Unmount ends a segment's mount (UnmountLocalDisk).
func (l HolderLink) Unmount(ctx context.Context, req *api.UnmountLocalDiskRequest) error {
	return l.call(ctx, api.MethodUnmountLocalDisk, req, &api.Empty{})
}

// Heartbeat reports a segment's usage and liveness.
func (l HolderLink) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (api.HeartbeatResponse, error) {
	var resp api.HeartbeatResponse
	err := l.call(ctx, api.MethodHeartbeat, req, &resp)
	return resp, err
}

// Fetch long-polls a segment's local delete tasks (FetchLocalDeleteTasks).
func (l HolderLink) Fetch(ctx context.Context, req *api.FetchTasksRequest) (api.FetchTasksResponse, error) {
	var resp api.FetchTasksResponse
	err := l.call(ctx, api.MethodFetchLocalDeleteTasks, req, &resp)
	return resp, err
}

// Ack reports the outcomes of tasks (AckLocalDeleteTasks).
func (l HolderLink) Ack(ctx context.Context, req *api.AckTasksRequest) (api.AckTasksResponse, error) {
	var resp api.AckTasksResponse
	err := l.call(ctx, api.MethodAckLocalDeleteTasks, req, &resp)
	return resp, err
}

// Reconcile asks which of a segment's objects are not live
// (ReconcileLocalDiskObjects).
func (l HolderLink) Reconcile(ctx context.Context, req *api.ReconcileRequest) (api.ReconcileResponse, error) {
	var resp api.ReconcileResponse
	err := l.call(ctx, api.MethodReconcileLocalDiskObjects, req, &resp)
	return resp, err
}

// Evict asks the master to drop replicas of live objects
// (EvictLocalDiskObjects); only the answered ones may be freed.
func (l HolderLink) Evict(ctx context.Context, req *api.EvictRequest) (api.EvictResponse, error) {
	var resp api.EvictResponse
	err := l.call(ctx, api.MethodEvictLocalDiskObjects, req, &resp)
	return resp, err
}

// ListReplicas pages through the replicas the master lists on a segment
// (ListLocalDiskReplicas).
func (l HolderLink) ListReplicas(ctx context.Context, req *api.ListReplicasRequest) (api.ListReplicasResponse, error) {
	var resp api.ListReplicasResponse
	err := l.call(ctx, api.MethodListLocalDiskReplicas, req, &resp)
	return resp, err
}

// DropTombstoned drops listed replicas the holder holds tombstoned
// (DropTombstonedReplicas).
func (l HolderLink) DropTombstoned(ctx context.Context, req *api.DropTombstonedRequest) (api.DropTombstonedResponse, error) {
	var resp api.DropTombstonedResponse
	err := l.call(ctx, api.MethodDropTombstonedReplicas, req, &resp)
	return resp, err
}
