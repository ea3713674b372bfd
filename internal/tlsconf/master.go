package tlsconf

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"
)

// A master's certificate names the Raft server ids it may act as with
// URI subject alternative names sexton://master/<id>. The Raft port
// requires one that fits its Raft configuration, so a client's or a
// holder's certificate of the same CA cannot speak Raft.
const (
	masterURIScheme = "sexton"
	masterURIHost   = RoleMaster
)

// MasterURI is the subject alternative name that names a certificate the
// master with Raft server id id.
func MasterURI(id string) *url.URL { return RoleURI(RoleMaster, id) }

// MasterIDs are the Raft server ids the current certificate of s names
// as a master of.
func (s *Source) MasterIDs() ([]string, error) {
	cert := s.cur.Load().cert
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tlsconf: certificate %s: %w", s.files.Cert, err)
		}
	}
	return MasterIDs(leaf), nil
}

// MasterIDs are the Raft server ids cert names as a master of (none for a
// client's or a holder's certificate).
func MasterIDs(cert *x509.Certificate) []string {
	var ids []string
	for _, u := range cert.URIs {
		if u.Scheme != masterURIScheme || u.Host != masterURIHost || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			continue
		}
		id, ok := strings.CutPrefix(u.Path, "/")
		if !ok || id == "" || strings.Contains(id, "/") {
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// CertRole is one role name a certificate carries.
type CertRole struct {
	Role string // RoleClient, RoleHolder, RoleOperator or RoleMaster
	Name string
	URI  string // as written in the certificate
}

// CertRoles are the sexton role names cert carries, in its order; URIs
// of another form are ignored.
func CertRoles(cert *x509.Certificate) []CertRole {
	var out []CertRole
	for _, u := range cert.URIs {
		if u.Scheme != masterURIScheme || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			continue
		}
		switch u.Host {
		case RoleClient, RoleHolder, RoleOperator, RoleMaster:
		default:
			continue
		}
		name, ok := strings.CutPrefix(u.Path, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			continue
		}
		out = append(out, CertRole{Role: u.Host, Name: name, URI: u.String()})
	}
	return out
}
