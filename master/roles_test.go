package master

import (
	"crypto/tls"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"sexton/api"
	"sexton/holder"
	"sexton/internal/authz"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
	"sexton/transport/transporttest"
)

// registryCap is the replicated registry capacity, read as an operator.
func registryCap(t *testing.T, addr string, cfg transport.ClientConfig) int {
	t.Helper()
	var s api.SettingsResponse
	if err := transporttest.CallOnce(t, addr, cfg, api.MethodSettingsGet, &api.Empty{}, &s); err != nil {
		t.Fatalf("settings get: %v", err)
	}
	return s.Settings.RegistryCapacity
}

// setCapAs sets the replicated settings set as who (cfg) and checks the
// registry capacity is then want.
func setCapAs(t *testing.T, addr string, cfg transport.ClientConfig, who string, set *api.SettingsSetRequest, want int) {
	t.Helper()
	if err := transporttest.CallOnce(t, addr, cfg, api.MethodSettingsSet, set, &api.SettingsResponse{}); err != nil {
		t.Fatalf("settings set as %s: %v", who, err)
	}
	if got := registryCap(t, addr, cfg); got != want {
		t.Fatalf("registry capacity %d after the set as %s, want %d", got, who, want)
	}
}

// wantLogged checks that logs hold each line.
func wantLogged(t *testing.T, logs string, lines ...string) {
	t.Helper()
	for _, w := range lines {
		if !strings.Contains(logs, w) {
			t.Errorf("the log lacks %q", w)
		}
	}
}

// wantDenied checks err is PERMISSION_DENIED naming the method, the
// caller's role and the role the method needs.
func wantDenied(t *testing.T, err error, method, role, need string) {
	t.Helper()
	if api.CodeOf(err) != api.CodePermissionDenied {
		t.Fatalf("%s as %s: %v, want PERMISSION_DENIED", method, role, err)
	}
	msg := api.AsError(err).Message
	for _, w := range []string{method, role, "needs role " + need} {
		if !strings.Contains(msg, w) {
			t.Fatalf("%s as %s: the refusal %q does not name %q", method, role, msg, w)
		}
	}
}

// With role tokens a client token cannot run an operator method and a
// holder token cannot put or get: each is refused with PERMISSION_DENIED
// naming the method and both roles, changes nothing, and is audited (a
// log line and sexton_rpc_audit_total). The operator token changes the
// settings, and that call is audited too.
func TestRoleTokensRefuseOtherRoles(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.ClusterToken = "cluster secret of at least thirty-two bytes"
		c.ClientToken = "client secret of at least thirty-two bytes"
		c.HolderToken = "holder secret of at least thirty-two bytes"
		c.OperatorToken = "operator secret of at least thirty-two bytes"
		c.HTTPAddr = freeAddr(t)
	})
	n := tc.node(0)
	addr := n.RPCAddr()
	client := transport.ClientConfig{Token: "client secret of at least thirty-two bytes"}
	holder := transport.ClientConfig{Token: "holder secret of at least thirty-two bytes"}
	operator := transport.ClientConfig{Token: "operator secret of at least thirty-two bytes"}
	before := registryCap(t, addr, operator)

	set := &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: before + 7}}
	wantDenied(t, transporttest.CallOnce(t, addr, client, api.MethodSettingsSet, set, &api.SettingsResponse{}), api.MethodSettingsSet, "client", "operator")
	wantDenied(t, transporttest.CallOnce(t, addr, client, api.MethodSnapshotSave, &api.SnapshotChunkRequest{}, &api.SnapshotChunk{}), api.MethodSnapshotSave, "client", "operator")
	if got := registryCap(t, addr, operator); got != before {
		t.Fatalf("a refused SettingsSet changed the registry capacity to %d", got)
	}
	// The client's own methods work with its token.
	if err := transporttest.CallOnce(t, addr, client, api.MethodExist, &api.KeysRequest{Keys: []string{"k"}}, &api.ExistResponse{}); err != nil {
		t.Fatalf("exist as a client: %v", err)
	}
	wantDenied(t, transporttest.CallOnce(t, addr, holder, api.MethodPutStart, &api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1}, &api.PutStartResponse{}), api.MethodPutStart, "holder", "client")
	wantDenied(t, transporttest.CallOnce(t, addr, holder, api.MethodGet, &api.KeyRequest{Key: "k"}, &api.GetResponse{}), api.MethodGet, "holder", "client")

	setCapAs(t, addr, operator, "the operator", set, before+7)

	logs := tc.logs.String()
	wantLogged(t, logs,
		`rpc audit: refused: method=SettingsSet role=client identity="client token"`,
		`rpc audit: refused: method=SnapshotSave role=client identity="client token"`,
		`rpc audit: refused: method=PutStart role=holder identity="holder token"`,
		`rpc audit: refused: method=Get role=holder identity="holder token"`,
		`rpc audit: method=SettingsSet role=operator identity="operator token"`)
	if strings.Contains(logs, "secret") {
		t.Error("a token is in the log")
	}
	if strings.Contains(logs, "no role token is set") {
		t.Error("the shared-token warning was logged although role tokens are set")
	}
	for series, want := range map[string]string{
		`sexton_rpc_audit_total{method="SettingsSet",outcome="PERMISSION_DENIED",role="client"}`:  "1",
		`sexton_rpc_audit_total{method="SnapshotSave",outcome="PERMISSION_DENIED",role="client"}`: "1",
		`sexton_rpc_audit_total{method="PutStart",outcome="PERMISSION_DENIED",role="holder"}`:     "1",
		`sexton_rpc_audit_total{method="Get",outcome="PERMISSION_DENIED",role="holder"}`:          "1",
		`sexton_rpc_audit_total{method="SettingsSet",outcome="ok",role="operator"}`:               "1",
	} {
		if got := metricValue(t, n, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}

// A master with the cluster token and no role token serves every caller
// that proves it as before (the harness's client mounts, puts and sets
// settings with it), and says at start that they are all operators.
func TestSharedClusterTokenWarns(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.ClusterToken = "shared token of at least thirty-two bytes" })
	h := tc.mountHolder(t, "seg-a", "")
	_ = h
	tc.put(t, "k", 10, 1)
	if !strings.Contains(tc.logs.String(), "--client-token, --holder-token and --operator-token") {
		t.Fatal("no warning that the shared cluster token makes every caller an operator")
	}
}

// Role tokens that are the same secret would give one proof two roles:
// the master refuses to start, naming both flags.
func TestDuplicateRoleTokensRefused(t *testing.T) {
	cfg := Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: freeAddr(t), RPCAddr: freeAddr(t), ClientToken: "same token of at least thirty-two bytes", OperatorToken: "same token of at least thirty-two bytes"}
	if n, err := New(cfg); err == nil {
		n.Shutdown()
		t.Fatal("a master with equal client and operator tokens started")
	} else if !strings.Contains(err.Error(), "--client-token and --operator-token") {
		t.Fatalf("refusal does not name the flags: %v", err)
	}
}

// With TLS the certificate's role name decides: a client certificate
// cannot run an operator method, nor can a caller without a certificate
// on the optional listener (it may call what a client may); a verified
// certificate without a sexton role name is refused on every method,
// naming the URI it lacks; a master's certificate is an operator's.
func TestRoleCertificatesRefuseOtherRoles(t *testing.T) {
	ca, err := testutil.NewCA(t.TempDir(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	tc, masterSrc := tlsNode(t, ca)
	n := tc.node(0)
	addr := n.RPCAddr()
	source := func(f tlsconf.Files, err error) transport.ClientConfig {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		src, err := tlsconf.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		return transport.ClientConfig{TLS: src.ClientConfig()}
	}
	client := source(ca.IssueRole(tlsconf.RoleClient, "app"))
	holder := source(ca.IssueRole(tlsconf.RoleHolder, "h1"))
	noRole := source(ca.Issue("plain"))
	master := transport.ClientConfig{TLS: masterSrc.ClientConfig()}
	anonymous := transport.ClientConfig{TLS: &tls.Config{RootCAs: httpsClient(t, ca).Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	before := registryCap(t, addr, master)
	set := &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: before + 3}}

	wantDenied(t, transporttest.CallOnce(t, addr, client, api.MethodSettingsSet, set, &api.SettingsResponse{}), api.MethodSettingsSet, "client", "operator")
	if !strings.Contains(api.AsError(transporttest.CallOnce(t, addr, client, api.MethodSettingsSet, set, nil)).Message, "sexton://client/app") {
		t.Fatal("the refusal does not name the certificate's role URI")
	}
	if err := transporttest.CallOnce(t, addr, client, api.MethodExist, &api.KeysRequest{Keys: []string{"k"}}, &api.ExistResponse{}); err != nil {
		t.Fatalf("exist with a client certificate: %v", err)
	}
	wantDenied(t, transporttest.CallOnce(t, addr, holder, api.MethodGet, &api.KeyRequest{Key: "k"}, &api.GetResponse{}), api.MethodGet, "holder", "client")
	// Every operator-only method is refused to the anonymous caller; the
	// body does not matter, the decision comes before it is read.
	for method := range MethodRoles {
		if MethodRoles.OperatorOnly(method) {
			wantDenied(t, transporttest.CallOnce(t, addr, anonymous, method, &api.Empty{}, nil), method, "anonymous", "operator")
		}
	}
	if err := transporttest.CallOnce(t, addr, anonymous, api.MethodExist, &api.KeysRequest{Keys: []string{"k"}}, &api.ExistResponse{}); err != nil {
		t.Fatalf("exist without a certificate on the optional listener: %v", err)
	}
	for _, method := range []string{api.MethodStatus, api.MethodGet, api.MethodSettingsSet} {
		err := transporttest.CallOnce(t, addr, noRole, method, &api.Empty{}, nil)
		if api.CodeOf(err) != api.CodePermissionDenied || !strings.Contains(err.Error(), "sexton://client/<name>") {
			t.Fatalf("%s with a certificate without a role: %v", method, err)
		}
	}
	if got := registryCap(t, addr, master); got != before {
		t.Fatalf("refused calls changed the registry capacity to %d", got)
	}
	setCapAs(t, addr, master, "a master certificate", set, before+3)
	wantLogged(t, tc.logs.String(),
		`rpc audit: refused: method=SettingsSet role=client identity="CN=app sexton://client/app"`,
		`rpc audit: refused: method=SnapshotRestore role=anonymous`,
		`rpc audit: refused: method=Status role=none identity=CN=plain`,
		`rpc audit: method=SettingsSet role=operator identity="CN=master sexton://master/m1"`)
	var m dto.Metric
	if err := n.metrics.audit.WithLabelValues(api.MethodSettingsSet, "client", string(api.CodePermissionDenied)).Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 2 {
		t.Errorf("client SettingsSet refusals counted %v, want 2", got)
	}
}

// Every method the RPC listener serves has a row in MethodRoles, and
// every row is a method it serves: a method added without deciding its
// role would be refused to everyone.
func TestEveryRPCMethodHasARole(t *testing.T) {
	tc := startCluster(t, 1)
	transporttest.WantRoleTable(t, MethodRoles, "MethodRoles", "master/rpc.go", tc.node(0).rpc.Methods())
}

var updateDocs = flag.Bool("update", false, "regenerate the role × method table in docs/SECURITY.md")

// The role table markers in docs/SECURITY.md.
const (
	roleTableBegin = "<!-- role-table:begin (go test -run TestRoleMethodTable ./master -update) -->"
	roleTableEnd   = "<!-- role-table:end -->"
)

// roleTableColumns are the callers the table shows, each as the
// listener's guard sees it: a token of each role, the cluster token, and
// a caller without a certificate on a TLS listener without tokens.
var roleTableColumns = []struct {
	head   string
	caller transport.Caller
	tls    bool
}{
	{"client", transport.Caller{Token: authz.ClientToken}, false},
	{"holder", transport.Caller{Token: authz.HolderToken}, false},
	{"operator", transport.Caller{Token: authz.OperatorToken}, false},
	{"cluster token", transport.Caller{Token: transport.ClusterTokenName}, false},
	{"TLS, no certificate", transport.Caller{}, true},
}

// roleTable renders, for each method, whether each column's caller may
// call it, as the guard decides.
func roleTable(title string, methods []string, table authz.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s |", title)
	for _, c := range roleTableColumns {
		fmt.Fprintf(&b, " %s |", c.head)
	}
	b.WriteString("\n|---|")
	for range roleTableColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, m := range methods {
		fmt.Fprintf(&b, "| `%s` |", m)
		for _, c := range roleTableColumns {
			g := &authz.Guard{Table: table, TLS: c.tls, Tokens: !c.tls}
			cell := "yes"
			if _, err := g.Allowed(&c.caller, m); err != nil {
				cell = "no"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The role × method table in docs/SECURITY.md is what the guards decide
// for every method the master's RPC listener and a holder's data listener
// serve. Regenerate it with -update.
func TestRoleMethodTable(t *testing.T) {
	tc := startCluster(t, 1)
	holderMethods := slices.Sorted(maps.Keys(holder.DataMethodRoles))
	want := roleTableBegin + "\n" +
		roleTable("master RPC method", tc.node(0).rpc.Methods(), MethodRoles) + "\n" +
		roleTable("holder data method", holderMethods, holder.DataMethodRoles) +
		roleTableEnd
	const path = "../docs/SECURITY.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, roleTableBegin), strings.Index(text, roleTableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", path, roleTableBegin, roleTableEnd)
	}
	got := text[i : j+len(roleTableEnd)]
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(text[:i]+want+text[j+len(roleTableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s's role table is stale; run go test -run TestRoleMethodTable ./master -update\nwant:\n%s", path, want)
}

// A token roll without downtime, on three masters restarted one at a
// time: each first accepts the old and the new cluster token and client
// token (proving the old), then proves the new, then drops the old. Every
// step keeps a leader, callers with either client token are served while
// both are listed, and at the end the old client token and the old
// cluster token are refused while the new ones run Raft (a new leader is
// elected after the leader is stopped, and a settings change commits).
func TestTokenListsRollWithoutDowntime(t *testing.T) {
	const (
		oldCluster = "old cluster secret of at least thirty-two bytes"
		newCluster = "new cluster secret of at least thirty-two bytes"
		oldClient  = "old client secret of at least thirty-two bytes"
		newClient  = "new client secret of at least thirty-two bytes"
	)
	tc := startCluster(t, 3, slowElections, func(c *Config) {
		c.ClusterToken = oldCluster
		c.ClientToken = oldClient
	})
	// status calls Status proving token; a refused token fails the dial.
	status := func(addr, token string) error { return statusVia(addr, transport.ClientConfig{Token: token}) }
	roll := func(cluster, client string) {
		t.Helper()
		for i := range tc.cfgs {
			tc.stop(i)
			tc.cfgs[i].ClusterToken = cluster
			tc.cfgs[i].ClientToken = client
			tc.start(i)
			// The restarted master rejoins: a leader among all three, and
			// this one follows it (its Raft connections are admitted).
			li := tc.leaderIndex(t)
			testutil.WaitFor(t, harnessTimeout, func() bool {
				return tc.node(i).raft.AppliedIndex() >= tc.node(li).raft.LastIndex()-1 && tc.node(i).raft.Leader() != ""
			}, "the restarted master catches up")
		}
	}
	roll(oldCluster+","+newCluster, oldClient+","+newClient)
	for _, tok := range []string{oldClient, newClient, oldCluster, newCluster} {
		if err := status(tc.node(0).RPCAddr(), tok); err != nil {
			t.Fatalf("with both tokens listed, a caller proving %q: %v", tok[:10], err)
		}
	}
	roll(newCluster+","+oldCluster, newClient+","+oldClient)
	roll(newCluster, newClient)

	addr := tc.node(tc.leaderIndex(t)).RPCAddr()
	if err := status(addr, newClient); err != nil {
		t.Fatalf("the new client token after the roll: %v", err)
	}
	for _, tok := range []string{oldClient, oldCluster} {
		if err := status(addr, tok); api.CodeOf(err) != api.CodeUnauthenticated {
			t.Fatalf("a dropped token %q: %v, want UNAUTHENTICATED", tok[:10], err)
		}
	}
	// Raft runs on the new token alone: stop the leader, the other two
	// elect one and commit.
	tc.stop(tc.leaderIndex(t))
	li := tc.leaderIndex(t)
	operator := transport.ClientConfig{Token: newCluster}
	before := registryCap(t, tc.node(li).RPCAddr(), operator)
	set := &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: before + 1}}
	if err := transporttest.CallOnce(t, tc.node(li).RPCAddr(), operator, api.MethodSettingsSet, set, &api.SettingsResponse{}); err != nil {
		t.Fatalf("a commit on two masters with the new token: %v", err)
	}
}
