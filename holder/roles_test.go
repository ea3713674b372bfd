package holder

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"

	"sexton/api"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
	"sexton/transport/transporttest"
)

// auditCount is sexton_holder_rpc_audit_total{method,role,outcome}.
func auditCount(t *testing.T, svc *Service, method, role, outcome string) float64 {
	t.Helper()
	var m dto.Metric
	if err := svc.metrics.audit.WithLabelValues(method, role, outcome).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// On the data listener the client token reads but cannot list every
// record (an operator's call, refused with PERMISSION_DENIED and
// audited); the operator token can; a holder's certificate cannot read
// or write values.
func TestDataListenerRoles(t *testing.T) {
	m, s := mountedStore(t)
	logs := &syncBuffer{}
	svc := startTestService(t, s, m, func(c *ServiceConfig) {
		c.ClusterToken = "holder secret of at least thirty-two bytes"
		c.ClientToken = "client secret of at least thirty-two bytes"
		c.OperatorToken = "operator secret of at least thirty-two bytes"
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	})
	defer svc.Close()
	addr := svc.Addr()
	client := transport.ClientConfig{Token: "client secret of at least thirty-two bytes"}
	operator := transport.ClientConfig{Token: "operator secret of at least thirty-two bytes"}

	if err := transporttest.CallOnce(t, addr, client, api.MethodHolderStatus, &api.Empty{}, &api.HolderStatusResponse{}); err != nil {
		t.Fatalf("status as a client: %v", err)
	}
	err := transporttest.CallOnce(t, addr, client, api.MethodHolderListRecords, &api.HolderListRecordsRequest{}, &api.HolderListRecordsResponse{})
	if api.CodeOf(err) != api.CodePermissionDenied || !strings.Contains(err.Error(), "HolderListRecords needs role operator; this caller is client") {
		t.Fatalf("list records as a client: %v", err)
	}
	if err := transporttest.CallOnce(t, addr, operator, api.MethodHolderListRecords, &api.HolderListRecordsRequest{}, &api.HolderListRecordsResponse{}); err != nil {
		t.Fatalf("list records as the operator: %v", err)
	}
	for _, w := range []string{
		`rpc audit: refused: method=HolderListRecords role=client identity="client token"`,
		`rpc audit: method=HolderListRecords role=operator identity="operator token"`,
	} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the log lacks %q", w)
		}
	}
	if strings.Contains(logs.String(), "secret") {
		t.Error("a token is in the log")
	}
	if got := auditCount(t, svc, api.MethodHolderListRecords, "client", string(api.CodePermissionDenied)); got != 1 {
		t.Errorf("refusals counted %v, want 1", got)
	}
	if got := auditCount(t, svc, api.MethodHolderListRecords, "operator", "ok"); got != 1 {
		t.Errorf("operator calls counted %v, want 1", got)
	}
}

// A holder's certificate on another holder's data listener cannot read
// or write values: they are a client's calls.
func TestDataListenerRefusesHolderCertificate(t *testing.T) {
	ca, err := testutil.NewCA(t.TempDir(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	m, s := mountedStore(t)
	svc := startTestService(t, s, m, func(c *ServiceConfig) {
		c.TLS = ca.Source(t, tlsconf.RoleHolder, "h1")
	})
	defer svc.Close()
	other := transport.ClientConfig{TLS: ca.Source(t, tlsconf.RoleHolder, "h2").ClientConfig()}
	for _, c := range []struct {
		method    string
		req, resp any
	}{
		{api.MethodHolderRead, &api.HolderReadRequest{Key: "k"}, &api.HolderReadResponse{}},
		{api.MethodHolderWrite, &api.HolderWriteRequest{Key: "k"}, &api.Empty{}},
	} {
		err := transporttest.CallOnce(t, svc.Addr(), other, c.method, c.req, c.resp)
		if api.CodeOf(err) != api.CodePermissionDenied || !strings.Contains(err.Error(), "needs role client; this caller is holder") {
			t.Fatalf("%s with a holder certificate: %v", c.method, err)
		}
		if got := auditCount(t, svc, c.method, "holder", string(api.CodePermissionDenied)); got != 1 {
			t.Errorf("%s refusals counted %v, want 1", c.method, got)
		}
	}
	client := transport.ClientConfig{TLS: ca.Source(t, tlsconf.RoleClient, "app").ClientConfig()}
	if err := transporttest.CallOnce(t, svc.Addr(), client, api.MethodHolderStatus, &api.Empty{}, &api.HolderStatusResponse{}); err != nil {
		t.Fatalf("status with a client certificate: %v", err)
	}
}

// Every method the data listener serves has a row in DataMethodRoles and
// every row is served.
func TestEveryDataMethodHasARole(t *testing.T) {
	m, s := mountedStore(t)
	svc := startTestService(t, s, m)
	defer svc.Close()
	transporttest.WantRoleTable(t, DataMethodRoles, "DataMethodRoles", "holder/dataserver.go", svc.srv.Methods())
}

// A holder with only the cluster token serves every caller that proves
// it as an operator, as before, and says so at start.
func TestDataListenerSharedTokenWarns(t *testing.T) {
	m, s := mountedStore(t)
	logs := &syncBuffer{}
	svc := startTestService(t, s, m, func(c *ServiceConfig) {
		c.ClusterToken = "shared token of at least thirty-two bytes"
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	})
	defer svc.Close()
	if err := transporttest.CallOnce(t, svc.Addr(), transport.ClientConfig{Token: "shared token of at least thirty-two bytes"}, api.MethodHolderListRecords, &api.HolderListRecordsRequest{}, &api.HolderListRecordsResponse{}); err != nil {
		t.Fatalf("list records with the shared token: %v", err)
	}
	if !strings.Contains(logs.String(), "no role token is set; give clients and operators their own with --client-token and --operator-token") {
		t.Fatalf("no shared-token warning:\n%s", logs.String())
	}
}
