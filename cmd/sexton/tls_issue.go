package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"sexton/internal/cliflag"
	"sexton/internal/secret"
	"sexton/internal/tlsfiles"
	"sexton/jsonout"
)

func setupTLSCA(fs *flag.FlagSet) runFunc {
	dir := fs.String("dir", "", "directory for "+tlsfiles.CACertFile+" and "+tlsfiles.CAKeyFile+" (created if missing; existing files are never overwritten)")
	cn := fs.String("cn", "sexton cluster CA", "the CA's common name")
	return func(_ *env, _ []string) error {
		if *dir == "" {
			return usagef("tls ca: --dir is required")
		}
		ca, err := tlsfiles.WriteCA(*dir, *cn)
		if err != nil {
			return err
		}
		certPath, keyPath := filepath.Join(*dir, tlsfiles.CACertFile), filepath.Join(*dir, tlsfiles.CAKeyFile)
		fmt.Fprintf(os.Stderr, "sexton tls ca: %s and %s (key mode 0600), valid until %s; give %s as --tls-ca to every node and client, keep %s off the nodes\n",
			certPath, keyPath, ca.Cert.NotAfter.UTC().Format(time.DateOnly), certPath, keyPath)
		return nil
	}
}

func setupTLSCert(fs *flag.FlagSet) runFunc {
	dir := fs.String("dir", "", "directory holding "+tlsfiles.CACertFile+" and "+tlsfiles.CAKeyFile+" (sexton tls ca); the certificate and key are written there")
	role := fs.String("role", "", "master, holder, client or operator: the certificate names it as the URI sexton://ROLE/NAME")
	name := fs.String("name", "", "the node's or client's name: a master's --id, a holder's --client-id, a client's or operator's own name")
	dns := fs.String("dns", "", "host names A,B,... others dial this node by (a master's or holder's; at least one of --dns, --ip)")
	ips := fs.String("ip", "", "IP addresses A,B,... others dial this node by")
	days := fs.Int("days", 825, "days the certificate is valid (not beyond the CA)")
	return func(_ *env, _ []string) error {
		if *dir == "" {
			return usagef("tls cert: --dir is required")
		}
		if !tlsfiles.KnownRole(*role) {
			return usagef("tls cert: --role %q: want master, holder, client or operator", *role)
		}
		if !tlsfiles.ValidName(*name) {
			return usagef("tls cert: --name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit, at most 63", *name)
		}
		if *days <= 0 {
			return usagef("tls cert: --days %d: want a positive number", *days)
		}
		c := tlsfiles.Cert{Role: *role, Name: *name, DNS: cliflag.SplitList(*dns), Validity: time.Duration(*days) * 24 * time.Hour}
		for _, s := range cliflag.SplitList(*ips) {
			ip := net.ParseIP(s)
			if ip == nil {
				return usagef("tls cert: --ip %q is not an IP address", s)
			}
			c.IPs = append(c.IPs, ip)
		}
		if tlsfiles.Serves(*role) && len(c.DNS) == 0 && len(c.IPs) == 0 {
			return usagef("tls cert: a %s's certificate must name every host and address it is dialed by: give --dns, --ip or both (a holder's --advertise host; a master's --rpc-addr and --raft-addr hosts)", *role)
		}
		ca, err := tlsfiles.LoadCA(*dir)
		if err != nil {
			return fmt.Errorf("tls cert: the CA in %s (make one with sexton tls ca): %w", *dir, err)
		}
		if err := tlsfiles.WriteCert(ca, *dir, c); err != nil {
			return err
		}
		certPath, keyPath := c.Paths(*dir)
		fmt.Fprintf(os.Stderr, "sexton tls cert: %s and %s (key mode 0600) for %s, valid until %s\n",
			certPath, keyPath, c.URI(), time.Now().Add(c.Validity).UTC().Format(time.DateOnly))
		return nil
	}
}

func runTokenGenerate(e *env, _ []string) error {
	tok, err := secret.Generate()
	if err != nil {
		return err
	}
	return e.output(jsonout.Token{Token: tok}, func() error {
		_, err := fmt.Println(tok)
		return err
	})
}
