package master

import (
	"time"

	"sexton/api"
	"sexton/internal/authz"
	"sexton/internal/secret"
	"sexton/transport"
)

// MethodRoles is the master RPC's role table: who may call each method
// (docs/SECURITY.md, "Roles"; the operator may also call every client
// method). A method registered without a row is refused to everyone;
// TestEveryRPCMethodHasARole keeps the two lists together.
var MethodRoles = authz.Table{
	// The object API of clients and applications.
	api.MethodPutStart:       {authz.Client},
	api.MethodPutGrant:       {authz.Client},
	api.MethodPutCommit:      {authz.Client},
	api.MethodBatchPutCommit: {authz.Client},
	api.MethodPutEnd:         {authz.Client},
	api.MethodPutRevoke:      {authz.Client},
	api.MethodBatchPutStart:  {authz.Client},
	api.MethodBatchPutEnd:    {authz.Client},
	api.MethodGet:            {authz.Client},
	api.MethodBatchGet:       {authz.Client},
	api.MethodExist:          {authz.Client},
	api.MethodRemove:         {authz.Client},
	api.MethodBatchRemove:    {authz.Client},
	api.MethodList:           {authz.Client},
	api.MethodStat:           {authz.Client},
	// Status reads: they change nothing and show what `sexton status`
	// and a client's wait for its deletes need.
	api.MethodStatus:       {authz.Client},
	api.MethodListTasks:    {authz.Client},
	api.MethodListSegments: {authz.Client},
	api.MethodRaftPeers:    {authz.Client},
	api.MethodSettingsGet:  {authz.Client},
	api.MethodJobList:      {authz.Client},
	api.MethodDFSConfig:    {authz.Client, authz.Holder},
	api.MethodDFSStatus:    {authz.Client},
	// The holder ↔ master protocol. `operator fsck` asks the reconcile
	// question too (which of a holder's copies are not live).
	api.MethodMountLocalDisk:            {authz.Holder},
	api.MethodUnmountLocalDisk:          {authz.Holder},
	api.MethodHeartbeat:                 {authz.Holder},
	api.MethodFetchLocalDeleteTasks:     {authz.Holder},
	api.MethodAckLocalDeleteTasks:       {authz.Holder},
	api.MethodReconcileLocalDiskObjects: {authz.Holder, authz.Operator},
	api.MethodListLocalDiskReplicas:     {authz.Holder},
	api.MethodDropTombstonedReplicas:    {authz.Holder},
	api.MethodEvictLocalDiskObjects:     {authz.Holder},
	// Operator methods: they change the cluster, not one object.
	api.MethodRetireStorage:          {authz.Operator},
	api.MethodRaftAddVoter:           {authz.Operator},
	api.MethodRaftRemovePeer:         {authz.Operator},
	api.MethodRaftTransferLeadership: {authz.Operator},
	api.MethodSnapshotSave:           {authz.Operator},
	api.MethodSnapshotRestore:        {authz.Operator},
	api.MethodDFSSetMaxBuckets:       {authz.Operator},
	api.MethodSettingsSet:            {authz.Operator},
	api.MethodJobStart:               {authz.Operator},
	api.MethodJobCancel:              {authz.Operator},
	api.MethodRebuildBegin:           {authz.Operator},
	api.MethodRebuildAdopt:           {authz.Operator},
	api.MethodRebuildClose:           {authz.Operator},
}

// rpcGuard is the RPC listener's authorization (internal/authz).
func (n *Node) rpcGuard() *authz.Guard {
	roleTokens, _ := authz.RoleTokens(n.cfg.ClusterToken, n.cfg.ClientToken, n.cfg.HolderToken, n.cfg.OperatorToken)
	return &authz.Guard{
		Table:  MethodRoles,
		TLS:    n.cfg.TLS != nil,
		Tokens: n.cfg.ClusterToken != "" || len(roleTokens) > 0,
		Log:    n.log.Named("audit"),
		Count:  n.metrics.countAudit,
	}
}

func (n *Node) startRPC() error {
	// validate refused role tokens that clash.
	roleTokens, _ := authz.RoleTokens(n.cfg.ClusterToken, n.cfg.ClientToken, n.cfg.HolderToken, n.cfg.OperatorToken)
	if n.cfg.ClusterToken != "" && !authz.HasRoleTokens(roleTokens) {
		n.log.Warn(authz.SharedTokenWarning)
	}
	s := transport.NewServer(transport.ServerConfig{
		Token:      secret.First(n.cfg.ClusterToken),
		RoleTokens: roleTokens,
		Authorize:  n.rpcGuard().Authorize,
		// Peers and holders present certificates; clients may have to.
		TLS:    n.cfg.TLS.ListenerConfig(n.cfg.TLSRequireClientCert),
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
	transport.Register(s, api.MethodPutGrant, n.handlePutGrant)
	s.HandleAsync(api.MethodPutCommit, func(r *transport.Request, reply transport.Reply) {
		var req api.PutCommitRequest
		if err := r.Decode(&req); err != nil {
			reply(nil, err)
			return
		}
		n.handlePutCommit(&req, reply)
	})
	transport.Register(s, api.MethodBatchPutCommit, n.handleBatchPutCommit)
	transport.Register(s, api.MethodGet, n.handleGet)
	transport.Register(s, api.MethodBatchGet, n.handleBatchGet)
	transport.Register(s, api.MethodExist, n.handleExist)
	transport.RegisterAsync(s, api.MethodRemove, n.handleRemove)
	transport.Register(s, api.MethodBatchRemove, n.handleBatchRemove)
	transport.Register(s, api.MethodList, n.handleList)
	transport.Register(s, api.MethodStat, n.handleStat)
	transport.Register(s, api.MethodMountLocalDisk, n.handleMount)
	transport.Register(s, api.MethodUnmountLocalDisk, n.handleUnmount)
	transport.Register(s, api.MethodHeartbeat, n.handleHeartbeat)
	transport.Register(s, api.MethodFetchLocalDeleteTasks, n.handleFetchTasks)
	transport.Register(s, api.MethodAckLocalDeleteTasks, n.handleAckTasks)
	transport.Register(s, api.MethodReconcileLocalDiskObjects, n.handleReconcile)
	transport.Register(s, api.MethodListLocalDiskReplicas, n.handleListReplicas)
	transport.Register(s, api.MethodDropTombstonedReplicas, n.handleDropTombstoned)
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
	transport.Register(s, api.MethodJobStart, n.handleJobStart)
	transport.Register(s, api.MethodJobList, n.handleJobList)
	transport.Register(s, api.MethodJobCancel, n.handleJobCancel)
	transport.Register(s, api.MethodRebuildBegin, n.handleRebuildBegin)
	transport.Register(s, api.MethodRebuildAdopt, n.handleRebuildAdopt)
	transport.Register(s, api.MethodRebuildClose, n.handleRebuildClose)
	ln, err := s.ListenAndServe(n.cfg.RPCAddr, &n.wg)
	if err != nil {
		return err
	}
	n.rpc, n.rpcLn = s, ln
	return nil
}

// ReloadTLS re-reads the certificate, key and CA (on SIGHUP). Established
// connections keep their session; new handshakes use the new material. On
// error the old material stays. Every attempt is counted in
// sexton_tls_reloads_total{result}. Without TLS it does nothing.
func (n *Node) ReloadTLS() error {
	if n.cfg.TLS == nil {
		return nil
	}
	if err := n.cfg.TLS.Reload(); err != nil {
		n.metrics.tlsReloads.WithLabelValues("error").Inc()
		n.log.Error("TLS reload failed; keeping the previous certificate", "error", err)
		return err
	}
	n.metrics.tlsReloads.WithLabelValues("ok").Inc()
	n.log.Info("TLS material reloaded", "cert", n.cfg.TLS.Files().Cert, "ca", n.cfg.TLS.Files().CA)
	return nil
}
