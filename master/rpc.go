package master

import (
	"net"
	"time"

	"sexton/api"
	"sexton/transport"
)

func (n *Node) startRPC() error {
	s := transport.NewServer(transport.ServerConfig{
		Token:  n.cfg.ClusterToken,
		Logger: n.log.Named("rpc"),
		Observe: func(method string, d time.Duration, err error) {
			n.metrics.observeRPC(method, d, err)
		},
	})
	transport.Register(s, api.MethodPutStart, n.handlePutStart)
	transport.Register(s, api.MethodPutEnd, n.handlePutEnd)
	transport.Register(s, api.MethodPutRevoke, n.handlePutRevoke)
	transport.Register(s, api.MethodBatchPutStart, n.handleBatchPutStart)
	transport.Register(s, api.MethodBatchPutEnd, n.handleBatchPutEnd)
	transport.Register(s, api.MethodGet, n.handleGet)
	transport.Register(s, api.MethodBatchGet, n.handleBatchGet)
	transport.Register(s, api.MethodExist, n.handleExist)
	transport.Register(s, api.MethodRemove, n.handleRemove)
	transport.Register(s, api.MethodBatchRemove, n.handleBatchRemove)
	transport.Register(s, api.MethodList, n.handleList)
	transport.Register(s, api.MethodStat, n.handleStat)
	transport.Register(s, api.MethodMountLocalDisk, n.handleMount)
	transport.Register(s, api.MethodUnmountLocalDisk, n.handleUnmount)
	transport.Register(s, api.MethodHeartbeat, n.handleHeartbeat)
	transport.Register(s, api.MethodFetchLocalDeleteTasks, n.handleFetchTasks)
	transport.Register(s, api.MethodAckLocalDeleteTasks, n.handleAckTasks)
	transport.Register(s, api.MethodReconcileLocalDiskObjects, n.handleReconcile)
	transport.Register(s, api.MethodRetireStorage, n.handleRetire)
	transport.Register(s, api.MethodEvictLocalDiskObjects, n.handleEvict)
	transport.Register(s, api.MethodListTasks, n.handleListTasks)
	transport.Register(s, api.MethodListSegments, n.handleListSegments)
	transport.Register(s, api.MethodStatus, n.handleStatus)
	transport.Register(s, api.MethodRaftPeers, n.handleRaftPeers)
	transport.Register(s, api.MethodRaftAddVoter, n.handleAddVoter)
	transport.Register(s, api.MethodRaftRemovePeer, n.handleRemovePeer)
	transport.Register(s, api.MethodRaftTransferLeadership, n.handleTransfer)
	transport.Register(s, api.MethodSnapshotSave, n.handleSnapshotSave)
	transport.Register(s, api.MethodSnapshotRestore, n.handleSnapshotRestore)
	transport.Register(s, api.MethodDFSConfig, n.handleDFSConfig)
	transport.Register(s, api.MethodDFSStatus, n.handleDFSStatus)
	transport.Register(s, api.MethodDFSSetMaxBuckets, n.handleDFSSetMaxBuckets)
	transport.Register(s, api.MethodSettingsGet, n.handleSettingsGet)
	transport.Register(s, api.MethodSettingsSet, n.handleSettingsSet)
	ln, err := net.Listen("tcp", n.cfg.RPCAddr)
	if err != nil {
		return err
	}
	n.rpc, n.rpcLn = s, ln
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = s.Serve(ln)
	}()
	return nil
}
