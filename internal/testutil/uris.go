package testutil

import (
	"crypto/x509"
	"net/url"

	"sexton/internal/tlsconf"
)

// IssueWithURIs is Issue with the URI subject alternative names uris
// (a caller's role names, sexton://client/<name> and the like); clientOnly
// gives it client usage only, as IssueClient does.
func (ca *CA) IssueWithURIs(name string, clientOnly bool, uris ...*url.URL) (tlsconf.Files, error) {
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if clientOnly {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	return ca.issue(name, usage, uris)
}
