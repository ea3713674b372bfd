package authz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"sexton/api"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

// Role is what a caller may do.
type Role string

// The caller roles. Operator is the superset role: it may call every
// method a client may, besides its own.
const (
	Client   Role = tlsconf.RoleClient
	Holder   Role = tlsconf.RoleHolder
	Operator Role = tlsconf.RoleOperator
)

// Roles is every role, in the order tables list them.
var Roles = []Role{Client, Holder, Operator}

// Token names a listener gives its role tokens (transport.NamedToken);
// the cluster token (transport.ClusterTokenName) proves Operator and
// Holder.
const (
	ClientToken   = "client"
	HolderToken   = "holder"
	OperatorToken = "operator"
)

// Table maps each method a listener serves to the roles that may call
// it. A method without a row is refused to every caller.
type Table map[string][]Role

// Allows reports whether role may call method: the method's row names it,
// or it is Operator and the row names Client.
func (t Table) Allows(role Role, method string) bool {
	for _, r := range t[method] {
		if r == role || (role == Operator && r == Client) {
			return true
		}
	}
	return false
}

// OperatorOnly reports whether only the operator role may call method.
func (t Table) OperatorOnly(method string) bool {
	return t.Allows(Operator, method) && !t.Allows(Client, method) && !t.Allows(Holder, method)
}

// need names the roles a method's row gives it to, for a refusal (an
// operator may also call what a client may).
func (t Table) need(method string) string {
	var names []string
	for _, r := range t[method] {
		names = append(names, string(r))
	}
	return strings.Join(names, " or ")
}

// Guard is a listener's authorization: its Authorize is the listener's
// transport.ServerConfig.Authorize.
type Guard struct {
	// Table is the listener's role table.
	Table Table
	// TLS and Tokens say how the listener authenticates callers: with
	// neither, nobody proves a role and every caller may call every
	// method (sexton dev, a bare test cluster).
	TLS    bool
	Tokens bool
	// Log gets one line per audited call; nil logs nothing.
	Log hclog.Logger
	// Count, if set, counts each audited call by method, caller role and
	// outcome ("ok" or the error code).
	Count func(method, role, outcome string)
}

// caller is who a connection's client is, as far as roles go.
type caller struct {
	roles    []Role
	label    string // role label of audit lines and metrics
	identity string // certificate subject and role URIs, or the token's name
	refuse   string // why it may call nothing, when it may not
	open     bool   // the listener authenticates nobody
}

// openLabel is the role label of callers of a listener without TLS or
// tokens.
const openLabel = "open"

func (g *Guard) who(c *transport.Caller) caller {
	switch {
	case c.Cert != nil:
		var who caller
		var uris []string
		for _, cr := range tlsconf.CertRoles(c.Cert) {
			r := Role(cr.Role)
			if cr.Role == tlsconf.RoleMaster {
				r = Operator
			}
			if !slices.Contains(who.roles, r) {
				who.roles = append(who.roles, r)
			}
			uris = append(uris, cr.URI)
		}
		who.identity = "CN=" + c.Cert.Subject.CommonName
		if len(uris) > 0 {
			who.identity += " " + strings.Join(uris, ",")
		}
		if len(who.roles) == 0 {
			who.label = "none"
			who.refuse = fmt.Sprintf("the certificate CN=%q names no sexton role: it needs a URI subject alternative name sexton://client/<name>, sexton://holder/<name> or sexton://operator/<name>", c.Cert.Subject.CommonName)
			return who
		}
		labels := make([]string, len(who.roles))
		for i, r := range who.roles {
			labels[i] = string(r)
		}
		who.label = strings.Join(labels, "+")
		return who
	case c.Token != "":
		var r Role
		switch c.Token {
		case transport.ClusterTokenName:
			// The masters' own secret, which also speaks Raft: it proves
			// the operator role, and the holder role so that holders of a
			// cluster without role tokens mount with it.
			return caller{roles: []Role{Operator, Holder}, label: "operator+holder", identity: "cluster token"}
		case OperatorToken:
			r = Operator
		case ClientToken:
			r = Client
		case HolderToken:
			r = Holder
		default:
			return caller{label: "none", identity: c.Token + " token", refuse: fmt.Sprintf("the %s token proves no role", c.Token)}
		}
		return caller{roles: []Role{r}, label: string(r), identity: c.Token + " token"}
	case g.Tokens:
		// The handshake requires a token proof; a connection without one
		// is not served, and if it were, it may call nothing.
		return caller{label: "none", identity: "anonymous", refuse: "the caller proved no token"}
	case g.TLS:
		// TLS with an optional client certificate and no token: a caller
		// without a certificate is a client, as anyone who reaches the
		// port may be.
		return caller{roles: []Role{Client}, label: "anonymous", identity: "anonymous (no certificate)"}
	}
	return caller{label: openLabel, identity: "anonymous", open: true}
}

// memo is who c is, derived once per connection (transport.Caller.Memo).
func (g *Guard) memo(c *transport.Caller) *caller {
	if who, ok := c.Memo.(*caller); ok {
		return who
	}
	who := g.who(c)
	c.Memo = &who
	return &who
}

// Allowed is the decision alone: whether c may call method, and the
// refusal when not.
func (g *Guard) Allowed(c *transport.Caller, method string) (label string, err *api.Error) {
	who := g.memo(c)
	return who.label, g.decide(who, method)
}

func (g *Guard) decide(who *caller, method string) *api.Error {
	if _, ok := g.Table[method]; !ok {
		return api.Errorf(api.CodePermissionDenied, "%s: the method has no row in this server's role table, so no caller may call it (caller role %s)", method, who.label)
	}
	if who.open {
		return nil
	}
	if who.refuse != "" {
		return api.Errorf(api.CodePermissionDenied, "%s: %s; it needs role %s", method, who.refuse, g.Table.need(method))
	}
	for _, r := range who.roles {
		if g.Table.Allows(r, method) {
			return nil
		}
	}
	return api.Errorf(api.CodePermissionDenied, "%s needs role %s; this caller is %s (%s)", method, g.Table.need(method), who.label, who.identity)
}

// Authorize is a transport.Authorizer: it refuses what the caller's role
// may not call and audits every refusal and every call the caller may
// make only as an operator.
func (g *Guard) Authorize(c *transport.Caller, method string) (func(error), error) {
	who := g.memo(c)
	if err := g.decide(who, method); err != nil {
		g.audit(c, who, method, err)
		return nil, err
	}
	if !g.operatorCall(who, method) {
		return nil, nil
	}
	return func(err error) { g.audit(c, who, method, err) }, nil
}

// operatorCall reports whether an allowed call of method is one the
// caller may make only as an operator: those are audited. A client's
// method is not, whoever calls it, nor a holder's method called by a
// caller that also has the holder role (the cluster token's heartbeats).
func (g *Guard) operatorCall(who *caller, method string) bool {
	if who.open {
		return g.Table.OperatorOnly(method)
	}
	if g.Table.Allows(Client, method) {
		return false
	}
	for _, r := range who.roles {
		if r != Operator && g.Table.Allows(r, method) {
			return false
		}
	}
	return true
}

func (g *Guard) audit(c *transport.Caller, who *caller, method string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = string(api.CodeOf(err))
	}
	if g.Count != nil {
		g.Count(method, who.label, outcome)
	}
	if g.Log == nil {
		return
	}
	kv := []any{"method", method, "role", who.label, "identity", who.identity, "peer", c.Peer, "outcome", outcome}
	if api.CodeOf(err) == api.CodePermissionDenied {
		g.Log.Warn("rpc audit: refused", append(kv, "error", err)...)
		return
	}
	g.Log.Info("rpc audit", kv...)
}

// RoleTokens are a listener's role tokens as transport.NamedTokens, the
// flags named for errors. Each flag's value is a comma-separated list
// (secret.Split; secret.Tokens checks it) and every token listed is
// accepted: the cluster token's first is the listener's
// transport.ServerConfig.Token and not in the result, its others are,
// named transport.ClusterTokenName. Two roles with the same token would
// leave the role a proof stands for to the order they are tried in, so
// that is refused, as is a role token equal to a cluster token (which
// proves the operator role) unless it is the operator's.
func RoleTokens(cluster, client, holder, operator string) ([]transport.NamedToken, error) {
	all := []struct{ flag, name, value string }{
		{"--cluster-token", transport.ClusterTokenName, cluster},
		{"--client-token", ClientToken, client},
		{"--holder-token", HolderToken, holder},
		{"--operator-token", OperatorToken, operator},
	}
	type listed struct{ flag, name, token string }
	var seen []listed
	var out []transport.NamedToken
	for _, a := range all {
		for j, t := range secret.Split(a.value) {
			for _, b := range seen {
				if b.token != t || b.flag == a.flag || (b.name == transport.ClusterTokenName && a.name == OperatorToken) {
					continue
				}
				return nil, fmt.Errorf("%s and %s share a token: a caller proving it would have both roles; give each role its own token", b.flag, a.flag)
			}
			seen = append(seen, listed{a.flag, a.name, t})
			if a.name == transport.ClusterTokenName && j == 0 {
				continue
			}
			out = append(out, transport.NamedToken{Name: a.name, Token: t})
		}
	}
	return out, nil
}

// HasRoleTokens reports whether tokens, RoleTokens' result, hold a role
// token (not only further cluster tokens).
func HasRoleTokens(tokens []transport.NamedToken) bool {
	for _, t := range tokens {
		if t.Name != transport.ClusterTokenName {
			return true
		}
	}
	return false
}

// SharedTokenWarning is logged at every start of a master that has the
// cluster token but no role token: every caller holding it is an operator.
const SharedTokenWarning = "every caller that proves the cluster token is an operator (snapshot restore, Raft membership, settings): no role token is set; give clients, holders and operators their own with --client-token, --holder-token and --operator-token"
