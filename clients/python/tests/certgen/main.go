// Command certgen makes throwaway certificates for the Python client's
// TLS tests (clients/python/tests), which cannot make them with Python's
// standard library. Each argument CA/ROLE/NAME asks for a certificate
// named NAME from the CA named CA (created in DIR/CA on first use) for
// ROLE:
//
//	master  server and client usage, URI SAN sexton://master/NAME
//	holder  server and client usage, URI SAN sexton://holder/NAME
//	client  client usage only, URI SAN sexton://client/NAME
//
// every one with 127.0.0.1, ::1 and localhost as names, valid for an hour
// (internal/tlsconf/tlstest). It prints a JSON object from each argument
// to its files: {"cert": ..., "key": ..., "ca": ...}.
//
//	certgen DIR CA/ROLE/NAME...
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sexton/internal/tlsconf"
	"sexton/internal/tlsconf/tlstest"
)

type files struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "certgen:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: certgen DIR CA/ROLE/NAME [CA/ROLE/NAME ...]")
	}
	dir := args[0]
	cas := map[string]*tlstest.CA{}
	out := map[string]files{}
	for _, spec := range args[1:] {
		parts := strings.Split(spec, "/")
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return fmt.Errorf("%q: want CA/ROLE/NAME", spec)
		}
		caName, role, name := parts[0], parts[1], parts[2]
		ca := cas[caName]
		if ca == nil {
			sub := filepath.Join(dir, caName)
			if err := os.MkdirAll(sub, 0o700); err != nil {
				return err
			}
			var err error
			if ca, err = tlstest.NewCA(sub, caName); err != nil {
				return err
			}
			cas[caName] = ca
		}
		var (
			f   tlsconf.Files
			err error
		)
		uri := &url.URL{Scheme: "sexton", Host: role, Path: "/" + name}
		switch role {
		case "master":
			f, err = ca.IssueMaster(name, name)
		case "holder":
			f, err = ca.IssueWithURIs(name, false, uri)
		case "client", "operator":
			f, err = ca.IssueWithURIs(name, true, uri)
		default:
			return fmt.Errorf("%q: role %q: want master, holder, client or operator", spec, role)
		}
		if err != nil {
			return err
		}
		out[spec] = files{Cert: f.Cert, Key: f.Key, CA: f.CA}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
