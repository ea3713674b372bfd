package holder

import (
	"context"
	"crypto/tls"
	"errors"
	"math/bits"
	"sort"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/authz"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

// DataMaxFrame bounds a data RPC frame: one value up to the largest bucket
// plus its envelope.
func (s *Service) dataMaxFrame() int { return int(s.store.opts.BucketSizeLimit) + 1<<20 }

// DataMethodRoles is the data listener's role table (internal/authz;
// docs/SECURITY.md, "Roles"): clients read and write (a write also needs
// its grant), `operator fsck` scans as a client would, and only
// `operator rebuild` lists every record, tombstones included.
var DataMethodRoles = authz.Table{
	api.MethodHolderWrite:       {authz.Client},
	api.MethodHolderRead:        {authz.Client},
	api.MethodHolderScan:        {authz.Client},
	api.MethodHolderStatus:      {authz.Client},
	api.MethodHolderListRecords: {authz.Operator},
}

func (s *Service) startDataServer() error {
	roleTokens, _ := authz.RoleTokens(s.cfg.ClusterToken, s.cfg.ClientToken, "", s.cfg.OperatorToken)
	if s.cfg.ClusterToken != "" && !authz.HasRoleTokens(roleTokens) {
		s.log.Warn("data listener: every caller that proves the cluster token is an operator (it may list every record): no role token is set; give clients and operators their own with --client-token and --operator-token")
	}
	guard := &authz.Guard{
		Table:  DataMethodRoles,
		TLS:    s.cfg.TLS != nil,
		Tokens: s.cfg.ClusterToken != "" || len(roleTokens) > 0,
		Log:    s.log.Named("audit"),
		Count:  func(method, role, outcome string) { s.metrics.audit.WithLabelValues(method, role, outcome).Inc() },
	}
	srv := transport.NewServer(transport.ServerConfig{Token: secret.First(s.cfg.ClusterToken), RoleTokens: roleTokens, Authorize: guard.Authorize,
		MaxFrame: s.dataMaxFrame(), TLS: s.cfg.TLS.ListenerConfig(s.cfg.TLSRequireClientCert), Logger: s.log.Named("data")})
	s.registerWrite(srv)
	transport.Register(srv, api.MethodHolderRead, s.handleRead)
	transport.Register(srv, api.MethodHolderScan, s.handleScan)
	transport.Register(srv, api.MethodHolderStatus, s.handleStatus)
	transport.Register(srv, api.MethodHolderListRecords, s.handleListRecords)
	ln, err := srv.ListenAndServe(s.cfg.ListenAddr, &s.wg)
	if err != nil {
		return err
	}
	s.srv, s.ln = srv, ln
	return nil
}

func clientTLS(src *tlsconf.Source) *tls.Config {
	if src == nil {
		return nil
	}
	return src.ClientConfig()
}

// ReloadTLS re-reads the certificate, key and CA (on SIGHUP): new
// handshakes, on the data listener and to the masters, use the new
// material; established connections keep theirs. On error the old
// material stays. Without TLS it does nothing.
func (s *Service) ReloadTLS() error {
	if s.cfg.TLS == nil {
		return nil
	}
	if err := s.cfg.TLS.Reload(); err != nil {
		s.log.Error("TLS reload failed; keeping the previous certificate", "error", err)
		return err
	}
	s.log.Info("TLS material reloaded", "cert", s.cfg.TLS.Files().Cert, "ca", s.cfg.TLS.Files().CA, "reloads", s.cfg.TLS.Reloads())
	return nil
}

// checkWrite checks a write for a put the leader granted to this segment
// (invariant 11) before any of its bytes is stored. Without a round trip
// the holder checks the incarnation is of its cluster and the grant:
// signed under the cluster's grant key (from the mount; none before it),
// for this segment, key and incarnation, not expired, not longer-lived
// than any grant can be. The store then refuses an incarnation this
// segment has tombstoned, also after GC reclaimed the record (its
// tombstone floor). Every refusal is GRANT_REFUSED and changes nothing.
func (s *Service) checkWrite(req *api.HolderWriteRequest, size int64) error {
	if err := api.ValidKey(req.Key); err != nil {
		return err
	}
	s.mu.Lock()
	cluster, key := s.clusterID, s.grantKey
	s.mu.Unlock()
	if req.Incarnation.IsZero() || (cluster != 0 && req.Incarnation.High != cluster) {
		return api.Errorf(api.CodeInvalidParams, "incarnation %s is not of this holder's cluster %016x", req.Incarnation, cluster)
	}
	return checkGrant(key, req, size, s.store.SegmentID(), s.store.opts.Now())
}

// handleWrite stores a write's value held in memory.
func (s *Service) handleWrite(_ context.Context, req *api.HolderWriteRequest) (*api.Empty, error) {
	if err := s.checkWrite(req, int64(len(req.Value))); err != nil {
		return nil, err
	}
	if err := s.store.Put(req.Key, req.Tenant, req.Incarnation, req.Value); err != nil {
		return nil, storeError(err)
	}
	s.notePut(req)
	return &api.Empty{}, nil
}

// notePut remembers a stored write's grant: a put whose commit never
// comes leaves these bytes to no delete task, so they are asked about
// once the grant expired (reclaim.go).
func (s *Service) notePut(req *api.HolderWriteRequest) {
	s.granted.note(api.ObjectRef{Key: req.Key, Incarnation: req.Incarnation}, time.Unix(0, req.Grant.Expires))
}

// registerWrite serves HolderWrite on srv: a large write's value streams
// from the socket into the bucket file; a small one is handed to the
// store aliasing the frame.
func (s *Service) registerWrite(srv *transport.Server) {
	srv.HandleStream(api.MethodHolderWrite, "value", s.serveWrite)
}

// serveWrite serves a HolderWrite. A value that streams (a large frame
// whose body ends in it) goes from the socket into the bucket file once
// the request is checked (Store.PutStream); one read with its frame is
// handed to the store aliasing the frame, which outlives the call
// (Store.Put returns only once the value is on disk). A body that does
// not end in its value is decoded whole (decodeWriteRequest).
func (s *Service) serveWrite(ctx context.Context, r *transport.Request) (any, error) {
	tail := r.Tail()
	if tail == nil {
		req, err := decodeWriteRequest(r.Body())
		if err != nil {
			return nil, err
		}
		return s.handleWrite(ctx, req)
	}
	req := new(api.HolderWriteRequest)
	if err := r.Decode(req); err != nil {
		return nil, err
	}
	if req.Value != nil {
		return nil, api.Errorf(api.CodeInvalidParams, "decode %s request: value given twice", api.MethodHolderWrite)
	}
	if v := tail.Bytes(); v != nil || tail.Len() == 0 {
		req.Value = v
		return s.handleWrite(ctx, req)
	}
	if err := s.checkWrite(req, tail.Len()); err != nil {
		return nil, err
	}
	if err := s.store.PutStream(req.Key, req.Tenant, req.Incarnation, tail.Len(), tail); err != nil {
		return nil, storeError(err)
	}
	s.notePut(req)
	return &api.Empty{}, nil
}

// checkGrant is grant.Verify plus the lifetime bound the tombstone floor's
// retention rests on: a grant expiring later than MaxGrantLifetime +
// MaxClockSkew from now could outlive a floor entry, so it is refused.
func checkGrant(key []byte, req *api.HolderWriteRequest, size int64, seg api.SegmentID, now time.Time) error {
	if err := grant.Verify(key, req.Grant, seg, req.Key, req.Incarnation, size, now); err != nil {
		return err
	}
	if limit := now.Add(MaxGrantLifetime + MaxClockSkew); req.Grant.Expires > limit.UnixNano() {
		return api.Errorf(api.CodeGrantRefused, "grant for %q %s expires in %s, longer than a grant may live (%s plus %s clock skew)",
			req.Key, req.Incarnation, time.Unix(0, req.Grant.Expires).Sub(now).Round(time.Second), MaxGrantLifetime, MaxClockSkew)
	}
	return nil
}

// handleRead answers a HolderRead with the value Store.GetInto read and
// verified. The answer is an api.HolderReadResponse on the wire; its value
// goes to the connection from the buffer it was read into (readAnswer), so
// it is copied once from the bucket file and never again on its way out,
// and that buffer is used again once the answer is written (readBuffers).
func (s *Service) handleRead(_ context.Context, req *api.HolderReadRequest) (*readAnswer, error) {
	a := new(readAnswer)
	v, err := s.store.GetInto(req.Key, req.Incarnation, a.alloc)
	if err != nil {
		a.ReleaseTail()
		return nil, storeError(err)
	}
	a.value = v
	return a, nil
}

// readAnswer is an api.HolderReadResponse encoded as a
// transport.TailReleaser: the map header, "value" and its bin header are
// encoded, the value itself is written after them from its own buffer,
// which goes back to readBuffers once written.
type readAnswer struct {
	value []byte
	buf   *[]byte // from readBuffers; nil when the value is not pooled
}

// alloc is the GetInto allocator: a pooled buffer of size bytes.
func (a *readAnswer) alloc(size int) []byte {
	a.buf = readBuffers.get(size)
	if a.buf == nil {
		return make([]byte, size)
	}
	return (*a.buf)[:size]
}

// EncodeMsgpackHead writes {"value": bin header} and returns the value.
func (a *readAnswer) EncodeMsgpackHead(enc *msgpack.Encoder) ([]byte, error) {
	if err := enc.EncodeMapLen(1); err != nil {
		return nil, err
	}
	if err := enc.EncodeString("value"); err != nil {
		return nil, err
	}
	return a.value, enc.EncodeBytesLen(len(a.value))
}

// ReleaseTail hands the value's buffer back to readBuffers.
func (a *readAnswer) ReleaseTail() {
	readBuffers.put(a.buf)
	a.buf, a.value = nil, nil
}

// readBufferPool keeps read buffers by power-of-two size class, from
// minPooledRead to maxPooledRead bytes, for values from half the smallest
// class up to the largest: a value outside that range gets a buffer of
// its own. A sync.Pool per class, so idle buffers go to the
// garbage collector and the pool pins no memory for long.
type readBufferPool struct {
	classes [maxReadClass - minReadClass + 1]sync.Pool
}

const (
	minReadClass  = 16 // 64 KiB
	maxReadClass  = 24 // 16 MiB
	minPooledRead = 1 << minReadClass
	maxPooledRead = 1 << maxReadClass
)

var readBuffers readBufferPool

// readClass is the size class of a buffer for size bytes (also of a
// buffer of that capacity), or -1 when such a buffer is not pooled.
func readClass(size int) int {
	if size < minPooledRead/2 || size > maxPooledRead {
		return -1
	}
	return max(bits.Len(uint(size-1)), minReadClass) - minReadClass
}

func (p *readBufferPool) get(size int) *[]byte {
	c := readClass(size)
	if c < 0 {
		return nil
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 1<<(c+minReadClass))
	return &b
}

func (p *readBufferPool) put(b *[]byte) {
	if b == nil {
		return
	}
	if c := readClass(cap(*b)); c >= 0 && cap(*b) == 1<<(c+minReadClass) {
		*b = (*b)[:cap(*b)]
		p.classes[c].Put(b)
	}
}

func (s *Service) handleScan(_ context.Context, req *api.HolderScanRequest) (*api.HolderScanResponse, error) {
	limit := req.Limit
	if limit <= 0 || limit > api.MaxReconcilePage {
		limit = api.MaxReconcilePage
	}
	refs := s.store.LiveRefs()
	i := sort.Search(len(refs), func(i int) bool { return refAfter(refs[i], req.After) })
	end := min(i+limit, len(refs))
	return &api.HolderScanResponse{Refs: refs[i:end], More: end < len(refs)}, nil
}

// refAfter reports whether a sorts strictly after b in LiveRefs order.
func refAfter(a, b api.ObjectRef) bool {
	if a.Key != b.Key {
		return a.Key > b.Key
	}
	return b.Incarnation.Less(a.Incarnation)
}

func (s *Service) handleStatus(_ context.Context, _ *api.Empty) (*api.HolderStatusResponse, error) {
	mounted, epoch, master := s.mountState()
	u := s.store.Usage()
	out := &api.HolderStatusResponse{Segment: s.store.SegmentID(), ClientID: s.cfg.ClientID, MountEpoch: epoch, MasterEpoch: master,
		Mounted: mounted, UsedBytes: u.UsedBytes, LiveBytes: u.LiveBytes, DeadBytes: u.DeadBytes, Capacity: s.store.EffectiveCapacity(),
		LiveObjects: u.LiveObjects, Tombstoned: u.TombstonedObjects,
		TasksDone: s.tasksDone.Load(), TasksRetried: s.tasksRetried.Load(), TasksStale: s.tasksStale.Load(), Reconciled: s.reconciled.Load()}
	for _, b := range s.store.BucketStats() {
		out.Buckets = append(out.Buckets, bucketStatus(b))
	}
	s.mu.Lock()
	gcStatus := s.gcStatus
	s.mu.Unlock()
	if gcStatus != nil {
		out.GC = gcStatus()
	}
	return out, nil
}

func bucketStatus(b BucketStat) api.BucketStatus {
	return api.BucketStatus{ID: b.ID, DataSize: b.DataSize, LiveBytes: b.LiveBytes, DeadBytes: b.DeadBytes, LiveCount: b.LiveCount, DeadCount: b.DeadCount, Open: b.Open,
		DeadRatio: b.DeadRatio()}
}

// storeError maps store errors onto wire codes.
func storeError(err error) error {
	var e *api.Error
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, ErrTombstoned):
		return api.Errorf(api.CodeGrantRefused, "%v", err)
	case errors.Is(err, ErrTooLarge):
		return api.Errorf(api.CodeInvalidParams, "%v", err)
	case errors.Is(err, ErrClosed):
		return api.Errorf(api.CodeUnavailable, "%v", err)
	}
	return api.Errorf(api.CodeInternal, "%v", err)
}
