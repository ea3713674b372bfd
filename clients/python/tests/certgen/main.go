// Command certgen makes throwaway certificates for the Python client's
// TLS tests (clients/python/tests), which cannot make them with Python's
// standard library. Each argument CA/ROLE/NAME asks for a certificate
// named NAME from the CA named CA (created in DIR/CA on first use) for
// ROLE, issued as `sexton tls cert` issues it (internal/tlsfiles):
//
//	master    server and client usage, URI SAN sexton://master/NAME
//	holder    server and client usage, URI SAN sexton://holder/NAME
//	client    client usage only, URI SAN sexton://client/NAME
//	operator  client usage only, URI SAN sexton://operator/NAME
//
// every one with 127.0.0.1, ::1, localhost and NAME as names, valid for an
// hour. It prints a JSON object from each argument to its files:
// {"cert": ..., "key": ..., "ca": ...}.
//
//	certgen DIR CA/ROLE/NAME...
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sexton/internal/tlsconf"
	"sexton/internal/tlsfiles"
)

// validity is how long a certificate is valid.
const validity = time.Hour

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
	cas := map[string]*tlsconf.Authority{}
	out := map[string]files{}
	for _, spec := range args[1:] {
		parts := strings.Split(spec, "/")
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return fmt.Errorf("%q: want CA/ROLE/NAME", spec)
		}
		caName, role, name := parts[0], parts[1], parts[2]
		caDir := filepath.Join(dir, caName)
		ca := cas[caName]
		if ca == nil {
			var err error
			if ca, err = tlsfiles.WriteCA(caDir, caName+" test CA"); err != nil {
				return err
			}
			cas[caName] = ca
		}
		c := tlsfiles.Cert{Role: role, Name: name, DNS: []string{"localhost", name},
			IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, Validity: validity}
		if err := tlsfiles.WriteCert(ca, caDir, c); err != nil {
			return fmt.Errorf("%q: %w", spec, err)
		}
		cert, key := c.Paths(caDir)
		out[spec] = files{Cert: cert, Key: key, CA: filepath.Join(caDir, tlsfiles.CACertFile)}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
