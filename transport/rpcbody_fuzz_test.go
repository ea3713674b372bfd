package transport

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/testutil"
)

// rpcBody is one request body a sexton server accepts: the method it
// arrives under and the type the server decodes it into.
type rpcBody struct {
	method string
	// lenient: decoded with DecodeLenient (the handshake's answer), not
	// the strict Request.Decode every registered method uses.
	lenient bool
	newBody func() any
}

// rpcBodies lists every request body the master's and the holder's
// transport servers accept. FuzzRPCBody picks an entry by index (modulo
// the length), so reordering the list only sends stored corpus inputs to
// other methods, where they are still valid fuzz inputs. TestRPCBodiesCoverEveryRegisteredMethod fails when a method
// is registered, or declared in api, without an entry here, or with an
// entry of another type than its handler takes.
var rpcBodies = []rpcBody{
	// The handshake: the client's answer to hello, before any method.
	{method: "(handshake auth)", lenient: true, newBody: func() any { return new(authAnswer) }},
	// The master.
	{method: api.MethodPutStart, newBody: func() any { return new(api.PutStartRequest) }},
	{method: api.MethodPutEnd, newBody: func() any { return new(api.PutEndRequest) }},
	{method: api.MethodPutRevoke, newBody: func() any { return new(api.PutRevokeRequest) }},
	{method: api.MethodBatchPutStart, newBody: func() any { return new(api.BatchPutStartRequest) }},
	{method: api.MethodBatchPutEnd, newBody: func() any { return new(api.BatchPutEndRequest) }},
	{method: api.MethodPutGrant, newBody: func() any { return new(api.PutStartRequest) }},
	{method: api.MethodPutCommit, newBody: func() any { return new(api.PutCommitRequest) }},
	{method: api.MethodBatchPutCommit, newBody: func() any { return new(api.BatchPutCommitRequest) }},
	{method: api.MethodGet, newBody: func() any { return new(api.KeyRequest) }},
	{method: api.MethodBatchGet, newBody: func() any { return new(api.KeysRequest) }},
	{method: api.MethodExist, newBody: func() any { return new(api.KeysRequest) }},
	{method: api.MethodRemove, newBody: func() any { return new(api.RemoveRequest) }},
	{method: api.MethodBatchRemove, newBody: func() any { return new(api.BatchRemoveRequest) }},
	{method: api.MethodList, newBody: func() any { return new(api.ListRequest) }},
	{method: api.MethodStat, newBody: func() any { return new(api.KeyRequest) }},
	{method: api.MethodMountLocalDisk, newBody: func() any { return new(api.MountLocalDiskRequest) }},
	{method: api.MethodUnmountLocalDisk, newBody: func() any { return new(api.UnmountLocalDiskRequest) }},
	{method: api.MethodHeartbeat, newBody: func() any { return new(api.HeartbeatRequest) }},
	{method: api.MethodFetchLocalDeleteTasks, newBody: func() any { return new(api.FetchTasksRequest) }},
	{method: api.MethodAckLocalDeleteTasks, newBody: func() any { return new(api.AckTasksRequest) }},
	{method: api.MethodReconcileLocalDiskObjects, newBody: func() any { return new(api.ReconcileRequest) }},
	{method: api.MethodListLocalDiskReplicas, newBody: func() any { return new(api.ListReplicasRequest) }},
	{method: api.MethodDropTombstonedReplicas, newBody: func() any { return new(api.DropTombstonedRequest) }},
	{method: api.MethodRetireStorage, newBody: func() any { return new(api.RetireStorageRequest) }},
	{method: api.MethodEvictLocalDiskObjects, newBody: func() any { return new(api.EvictRequest) }},
	{method: api.MethodListTasks, newBody: func() any { return new(api.ListTasksRequest) }},
	{method: api.MethodListSegments, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodStatus, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodRaftPeers, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodRaftAddVoter, newBody: func() any { return new(api.RaftPeerRequest) }},
	{method: api.MethodRaftRemovePeer, newBody: func() any { return new(api.RaftPeerRequest) }},
	{method: api.MethodRaftTransferLeadership, newBody: func() any { return new(api.RaftPeerRequest) }},
	{method: api.MethodSnapshotSave, newBody: func() any { return new(api.SnapshotChunkRequest) }},
	{method: api.MethodSnapshotRestore, newBody: func() any { return new(api.SnapshotChunk) }},
	{method: api.MethodDFSConfig, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodDFSStatus, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodDFSSetMaxBuckets, newBody: func() any { return new(api.DFSSetMaxBucketsRequest) }},
	{method: api.MethodSettingsGet, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodSettingsSet, newBody: func() any { return new(api.SettingsSetRequest) }},
	{method: api.MethodJobStart, newBody: func() any { return new(api.JobStartRequest) }},
	{method: api.MethodJobList, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodJobCancel, newBody: func() any { return new(api.JobCancelRequest) }},
	{method: api.MethodRebuildBegin, newBody: func() any { return new(api.RebuildBeginRequest) }},
	{method: api.MethodRebuildAdopt, newBody: func() any { return new(api.RebuildAdoptRequest) }},
	{method: api.MethodRebuildClose, newBody: func() any { return new(api.RebuildCloseRequest) }},
	// The holder's data server.
	{method: api.MethodHolderWrite, newBody: func() any { return new(api.HolderWriteRequest) }},
	{method: api.MethodHolderRead, newBody: func() any { return new(api.HolderReadRequest) }},
	{method: api.MethodHolderScan, newBody: func() any { return new(api.HolderScanRequest) }},
	{method: api.MethodHolderStatus, newBody: func() any { return new(api.Empty) }},
	{method: api.MethodHolderListRecords, newBody: func() any { return new(api.HolderListRecordsRequest) }},
}

// FuzzRPCBody feeds arbitrary bytes, as the body of a request for one of
// rpcBodies' methods, through the path a server takes before a handler
// sees the request: decodeEnvelope's bound checks over the whole payload,
// then Request.Decode (strict) into the method's request type. It must not
// panic (a panic the decoder's recover turned into an error counts too),
// must refuse with INVALID_PARAMS, must not allocate more than the body's
// size can justify, and what it accepts must re-encode (as a client
// encodes a body) to bytes that decode to the same value.
func FuzzRPCBody(f *testing.F) {
	for i, b := range rpcBodies {
		for _, seed := range rpcBodySeeds(f, b) {
			f.Add(uint8(i), seed)
		}
	}
	f.Add(uint8(0), []byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(4), []byte{0x81, 0xa5, 'i', 't', 'e', 'm', 's', 0xdd, 0x00, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		b := rpcBodies[int(sel)%len(rpcBodies)]
		payload := append(requestHeader(t, b.method), body...)
		bound := allocBound(b.newBody(), len(body))

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := serverDecode(b, payload)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > bound {
			t.Fatalf("%s: decoding a %d-byte body allocated %d bytes (bound %d)", b.method, len(body), grew, bound)
		}
		if err != nil {
			if strings.Contains(err.Error(), "request: msgpack decoder panicked: ") {
				t.Fatalf("%s: the decoder panicked (recovered): %v", b.method, err)
			}
			var ae *api.Error
			if !errors.As(err, &ae) || (ae.Code != api.CodeInvalidParams && ae.Code != api.CodeCorrupt) {
				t.Fatalf("%s: refused with %v, want an INVALID_PARAMS or CORRUPT api error", b.method, err)
			}
			return
		}
		checkBodyRoundTrip(t, b, v)
	})
}

// serverDecode is the server's path from a request payload to the typed
// body its handler gets.
func serverDecode(b rpcBody, payload []byte) (any, error) {
	env, err := decodeEnvelope(payload)
	if err != nil {
		return nil, err
	}
	req := Request{Method: env.method, body: env.body}
	v := b.newBody()
	if b.lenient {
		err = req.DecodeLenient(v)
	} else {
		err = req.Decode(v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// requestHeader is the encoded envelope of a request for method, without
// the frame's length prefix and without a body: the body's bytes follow.
func requestHeader(t testing.TB, method string) []byte {
	t.Helper()
	buf, err := encodeFrame(&envelope{kind: kindRequest, id: 1, method: method}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseFrame(buf)
	b := buf.Bytes()
	if b[len(b)-1] != 0xc0 { // the nil body
		t.Fatalf("unexpected envelope encoding % x", b)
	}
	return append([]byte(nil), b[frameHeaderLen:len(b)-1]...)
}

// encodeBody encodes v as a client encodes a request body (compact ints),
// with sorted map keys so equal values give equal bytes.
func encodeBody(t testing.TB, v any) []byte {
	t.Helper()
	return testutil.Msgpack(t, v)
}

// checkBodyRoundTrip: an accepted body, re-encoded and decoded again
// through the server's path, is the same value (compared by its encoding:
// an empty slice and a missing one are the same on the wire).
func checkBodyRoundTrip(t *testing.T, b rpcBody, v any) {
	t.Helper()
	once := encodeBody(t, v)
	again, err := serverDecode(b, append(requestHeader(t, b.method), once...))
	if err != nil {
		t.Fatalf("%s: a decoded body, re-encoded, is refused: %v\nencoding % x", b.method, err, once)
	}
	if twice := encodeBody(t, again); !bytes.Equal(once, twice) {
		t.Fatalf("%s: round trip changed the body:\n% x\n% x", b.method, once, twice)
	}
}

// allocBound is the most decoding an n-byte body into v may allocate.
// decodeEnvelope's walk admits an array or map item per byte at most, and
// each item becomes at most one element of the largest type reachable
// from v; slice growth at most doubles that (and copies it once more).
// Strings and byte slices allocate no more than their bytes. The constant
// covers the decoder's own state and the runtime's noise.
func allocBound(v any, n int) uint64 {
	largest := largestElem(reflect.TypeOf(v), map[reflect.Type]bool{})
	return 1<<20 + uint64(n)*uint64(4*largest+64)
}

// largestElem is the size of the largest value a msgpack item can become
// inside t: t itself, a slice or map element, or what a pointer points to.
func largestElem(t reflect.Type, seen map[reflect.Type]bool) uintptr {
	if seen[t] {
		return 0
	}
	seen[t] = true
	size := t.Size()
	grow := func(u reflect.Type) {
		if s := largestElem(u, seen); s > size {
			size = s
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		grow(t.Elem())
	case reflect.Map:
		grow(t.Key())
		grow(t.Elem())
		if s := t.Key().Size() + t.Elem().Size(); s > size {
			size = s
		}
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			grow(t.Field(i).Type)
		}
	}
	return size
}

// rpcBodySeeds are valid bodies for b: its zero value and one with every
// field set (non-empty slices, non-nil pointers), as a client encodes them.
func rpcBodySeeds(t testing.TB, b rpcBody) [][]byte {
	zero := b.newBody()
	full := b.newBody()
	fill(reflect.ValueOf(full).Elem(), 1)
	return [][]byte{encodeBody(t, zero), encodeBody(t, full)}
}

// fill sets every field of v to a non-zero value derived from seed.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("k" + strconv.Itoa(seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(seed))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed+i+1)
		}
		v.Set(s)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			// A field tagged msgpack:"-" never travels (TaskResult.Detail
			// is the holder's own note), so it cannot round-trip.
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("msgpack") != "-" {
				fill(v.Field(i), seed+i)
			}
		}
	}
}

// Valid bodies round-trip: decode(encode(x)) == x through the server's
// path, for x with every field set.
func TestRPCBodiesRoundTrip(t *testing.T) {
	for _, b := range rpcBodies {
		full := b.newBody()
		fill(reflect.ValueOf(full).Elem(), 1)
		got, err := serverDecode(b, append(requestHeader(t, b.method), encodeBody(t, full)...))
		if err != nil {
			t.Errorf("%s: %v", b.method, err)
			continue
		}
		if !reflect.DeepEqual(got, full) {
			t.Errorf("%s: round trip gave %+v, want %+v", b.method, got, full)
		}
	}
}

// TestRPCBodiesCoverEveryRegisteredMethod reads the module's source: every
// method a non-test file registers on a transport server (Register or
// Handle with an api method constant or a string) has a rpcBodies entry of
// the type its handler decodes, and so does every method api declares.
// A new method cannot be left out of FuzzRPCBody.
func TestRPCBodiesCoverEveryRegisteredMethod(t *testing.T) {
	table := map[string]reflect.Type{}
	for _, b := range rpcBodies {
		if _, dup := table[b.method]; dup {
			t.Errorf("rpcBodies lists %s twice", b.method)
		}
		table[b.method] = reflect.TypeOf(b.newBody())
	}
	pkgs := parseModule(t, "..")
	aliases := typeAliases(pkgs["api"])

	// Every method api declares.
	declared := 0
	for _, file := range pkgs["api"] {
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				lit, ok := valueAt(vs.Values, i).(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, "Method") || !ok || lit.Kind != token.STRING {
					continue
				}
				declared++
				wire, _ := strconv.Unquote(lit.Value)
				if _, ok := table[wire]; !ok {
					t.Errorf("api declares %s but rpcBodies has no entry for it", name.Name)
				}
			}
			return true
		})
	}

	// Every registration, with its handler's request type.
	registered := 0
	for dir, files := range pkgs {
		if dir == "transport" {
			continue
		}
		for _, file := range files {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				method, handler, ok := registration(call)
				if !ok {
					return true
				}
				registered++
				wire := wireName(method)
				want, ok := table[wire]
				if !ok {
					t.Errorf("%s registers %s but rpcBodies has no entry for it", dir, wire)
					return true
				}
				if handler == nil {
					return true // Handle: the handler decodes itself; the entry is all we can check
				}
				got := handlerRequestType(files, handler)
				if got == "" {
					t.Errorf("%s: cannot find the request type of %s's handler", dir, wire)
					return true
				}
				if a, ok := aliases[got]; ok {
					got = a
				}
				if got != want.String() {
					t.Errorf("%s: %s's handler takes %s, rpcBodies fuzzes %s", dir, wire, got, want)
				}
				return true
			})
		}
	}
	if declared < 30 || registered < 30 {
		t.Fatalf("found only %d declared and %d registered methods: the source scan is broken", declared, registered)
	}
}

func valueAt(values []ast.Expr, i int) ast.Expr {
	if i < len(values) {
		return values[i]
	}
	return nil
}

// parseModule parses every non-test Go file under root, by package
// directory (relative to root, slash-separated).
func parseModule(t *testing.T, root string) map[string][]*ast.File {
	t.Helper()
	pkgs := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkgs[filepath.ToSlash(rel)] = append(pkgs[filepath.ToSlash(rel)], file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// typeAliases maps "*api.A" to "*api.B" for every `type A = B` in api.
func typeAliases(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, file := range files {
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || !ts.Assign.IsValid() {
					continue
				}
				switch t := ts.Type.(type) {
				case *ast.Ident:
					out["*api."+ts.Name.Name] = "*api." + t.Name
				case *ast.IndexExpr: // an instance of a generic api type, named as reflect names it
					gen, ok1 := t.X.(*ast.Ident)
					arg, ok2 := t.Index.(*ast.Ident)
					if ok1 && ok2 {
						out["*api."+ts.Name.Name] = "*api." + gen.Name + "[sexton/api." + arg.Name + "]"
					}
				}
			}
		}
	}
	return out
}

// registration recognises transport.Register(srv, method, handler) and
// x.Handle(method, handler) calls whose method is an api constant or a
// string literal; handler is nil for Handle.
func registration(call *ast.CallExpr) (method ast.Expr, handler ast.Expr, ok bool) {
	sel, isSel := call.Fun.(*ast.SelectorExpr)
	if idx, isIdx := call.Fun.(*ast.IndexListExpr); isIdx { // transport.Register[Req, Resp](...)
		sel, isSel = idx.X.(*ast.SelectorExpr)
	}
	if idx, isIdx := call.Fun.(*ast.IndexExpr); isIdx {
		sel, isSel = idx.X.(*ast.SelectorExpr)
	}
	if !isSel {
		return nil, nil, false
	}
	isMethod := func(e ast.Expr) bool {
		switch m := e.(type) {
		case *ast.BasicLit: // an HTTP mux's "/path" is not an RPC method
			return m.Kind == token.STRING && !strings.HasPrefix(m.Value, `"/`)
		case *ast.SelectorExpr:
			x, ok := m.X.(*ast.Ident)
			return ok && x.Name == "api" && strings.HasPrefix(m.Sel.Name, "Method")
		}
		return false
	}
	if x, ok := sel.X.(*ast.Ident); ok && x.Name == "transport" && sel.Sel.Name == "Register" && len(call.Args) == 3 {
		if isMethod(call.Args[1]) {
			return call.Args[1], call.Args[2], true
		}
	}
	if sel.Sel.Name == "Handle" && len(call.Args) == 2 && isMethod(call.Args[0]) {
		return call.Args[0], nil, true
	}
	return nil, nil, false
}

func wireName(method ast.Expr) string {
	switch m := method.(type) {
	case *ast.BasicLit:
		s, _ := strconv.Unquote(m.Value)
		return s
	case *ast.SelectorExpr:
		return strings.TrimPrefix(m.Sel.Name, "Method") // api/methods_test.go: MethodX sends "X"
	}
	return ""
}

// handlerRequestType is the type (as reflect spells it, "*api.X") of the
// second parameter of the handler: a function literal, or a function or
// method declared in the same package.
func handlerRequestType(files []*ast.File, handler ast.Expr) string {
	var ft *ast.FuncType
	switch h := handler.(type) {
	case *ast.FuncLit:
		ft = h.Type
	case *ast.Ident, *ast.SelectorExpr:
		name := ""
		if id, ok := h.(*ast.Ident); ok {
			name = id.Name
		} else {
			name = h.(*ast.SelectorExpr).Sel.Name
		}
		for _, file := range files {
			for _, decl := range file.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Name.Name == name {
					ft = fd.Type
				}
			}
		}
	}
	if ft == nil {
		return ""
	}
	var params []ast.Expr
	for _, field := range ft.Params.List {
		n := len(field.Names)
		if n == 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			params = append(params, field.Type)
		}
	}
	if len(params) != 2 {
		return ""
	}
	return exprString(params[1])
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}
