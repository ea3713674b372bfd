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
	return roundTrip[api.MountLocalDiskResponse](ctx, l, api.MethodMountLocalDisk, req)
}

// Unmount ends a segment's mount (UnmountLocalDisk).
func (l HolderLink) Unmount(ctx context.Context, req *api.UnmountLocalDiskRequest) error {
	return l.call(ctx, api.MethodUnmountLocalDisk, req, &api.Empty{})
}

// Heartbeat reports a segment's usage and liveness.
func (l HolderLink) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (api.HeartbeatResponse, error) {
	return roundTrip[api.HeartbeatResponse](ctx, l, api.MethodHeartbeat, req)
}

// Fetch long-polls a segment's local delete tasks (FetchLocalDeleteTasks).
func (l HolderLink) Fetch(ctx context.Context, req *api.FetchTasksRequest) (api.FetchTasksResponse, error) {
	return roundTrip[api.FetchTasksResponse](ctx, l, api.MethodFetchLocalDeleteTasks, req)
}

// Ack reports the outcomes of tasks (AckLocalDeleteTasks).
func (l HolderLink) Ack(ctx context.Context, req *api.AckTasksRequest) (api.AckTasksResponse, error) {
	return roundTrip[api.AckTasksResponse](ctx, l, api.MethodAckLocalDeleteTasks, req)
}

// Reconcile asks which of a segment's objects are not live
// (ReconcileLocalDiskObjects).
func (l HolderLink) Reconcile(ctx context.Context, req *api.ReconcileRequest) (api.ReconcileResponse, error) {
	return roundTrip[api.ReconcileResponse](ctx, l, api.MethodReconcileLocalDiskObjects, req)
}

// Evict asks the master to drop replicas of live objects
// (EvictLocalDiskObjects); only the answered ones may be freed.
func (l HolderLink) Evict(ctx context.Context, req *api.EvictRequest) (api.EvictResponse, error) {
	return roundTrip[api.EvictResponse](ctx, l, api.MethodEvictLocalDiskObjects, req)
}

// ListReplicas pages through the replicas the master lists on a segment
// (ListLocalDiskReplicas).
func (l HolderLink) ListReplicas(ctx context.Context, req *api.ListReplicasRequest) (api.ListReplicasResponse, error) {
	return roundTrip[api.ListReplicasResponse](ctx, l, api.MethodListLocalDiskReplicas, req)
}

// DropTombstoned drops listed replicas the holder holds tombstoned
// (DropTombstonedReplicas).
func (l HolderLink) DropTombstoned(ctx context.Context, req *api.DropTombstonedRequest) (api.DropTombstonedResponse, error) {
	return roundTrip[api.DropTombstonedResponse](ctx, l, api.MethodDropTombstonedReplicas, req)
}

// roundTrip calls method with req and answers its decoded Resp.
func roundTrip[Resp any](ctx context.Context, l HolderLink, method string, req any) (Resp, error) {
	var resp Resp
	err := l.call(ctx, method, req, &resp)
	return resp, err
}
