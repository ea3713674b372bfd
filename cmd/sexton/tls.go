package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sexton/internal/cliflag"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
)

// tlsFlags are --tls-cert, --tls-key and --tls-ca (env SEXTON_TLS_*),
// shared by the servers and every verb that dials a master or a holder.
type tlsFlags struct{ cert, key, ca string }

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", cliflag.EnvString("SEXTON_TLS_CERT", ""), "PEM certificate chain presented on TLS connections; with --tls-key and --tls-ca (env SEXTON_TLS_CERT)")
	fs.StringVar(&f.key, "tls-key", cliflag.EnvString("SEXTON_TLS_KEY", ""), "PEM private key of --tls-cert (env SEXTON_TLS_KEY)")
	fs.StringVar(&f.ca, "tls-ca", cliflag.EnvString("SEXTON_TLS_CA", ""), "PEM CA bundle the other side's certificate must chain to; TLS is on when it is given (env SEXTON_TLS_CA)")
}

func (f *tlsFlags) files() tlsconf.Files { return tlsconf.Files{Cert: f.cert, Key: f.key, CA: f.ca} }

// source loads a server's material: all three flags or none.
func (f *tlsFlags) source() (*tlsconf.Source, error) {
	src, err := tlsconf.Load(f.files())
	if errors.Is(err, tlsconf.ErrIncomplete) {
		return nil, usagef("%v", err)
	}
	return src, err
}

// clientConfig is a dialer's TLS config: nil (plain) with no flags, the
// CA alone for a client without a certificate (a listener with
// --tls-client-auth=optional accepts it), or all three.
func (f *tlsFlags) clientConfig() (*tls.Config, error) {
	if f.cert == "" && f.key == "" && f.ca != "" {
		pool, err := tlsconf.LoadCAPool(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
	}
	src, err := f.source()
	if err != nil || src == nil {
		return nil, err
	}
	return src.ClientConfig(), nil
}

// serveSignals blocks until SIGINT or SIGTERM, calling reload on every
// SIGHUP (a failed reload is logged by reload and keeps the old material).
func serveSignals(reload func() error) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(ch)
	for sig := range ch {
		if sig != syscall.SIGHUP {
			return
		}
		if reload != nil {
			_ = reload()
		}
	}
}

// serverTLS are a server's TLS flags: the material (tlsFlags),
// --tls-client-auth (whether its client-facing listener requires a client
// certificate) and --insecure-tls-no-client-auth (the one way to run with
// TLS whose clients prove nothing: no client certificate required, no
// token).
type serverTLS struct {
	files      tlsFlags
	clientAuth *string
	insecure   *bool
}

func addServerTLS(fs *flag.FlagSet) *serverTLS {
	s := &serverTLS{}
	s.files.register(fs)
	s.clientAuth = fs.String("tls-client-auth", cliflag.EnvString("SEXTON_TLS_CLIENT_AUTH", "optional"), "with TLS: require or optional; require refuses clients without a certificate of --tls-ca, optional accepts them but verifies one that is presented (env SEXTON_TLS_CLIENT_AUTH)")
	s.insecure = fs.Bool("insecure-tls-no-client-auth", cliflag.EnvBool("SEXTON_INSECURE_TLS_NO_CLIENT_AUTH", false), "with TLS, --tls-client-auth optional and no --cluster-token: start anyway, although any client that reaches the port may call every method (logged as a warning at every start; env SEXTON_INSECURE_TLS_NO_CLIENT_AUTH)")
	return s
}

// resolve loads the server's material (nil: plain) and decides whether it
// may start so with tokens (secret.ServerSecurity, a refusal being a
// usage error): whether client certificates are required, and the warning
// to log at every start. port names the listener at stake.
func (s *serverTLS) resolve(port string, tokens ...secret.FlagToken) (src *tlsconf.Source, require bool, warning string, err error) {
	switch *s.clientAuth {
	case "require":
		require = true
	case "optional":
	default:
		return nil, false, "", usagef("--tls-client-auth %q: want require or optional", *s.clientAuth)
	}
	if src, err = s.files.source(); err != nil {
		return nil, false, "", err
	}
	if require && src == nil {
		return nil, false, "", usagef("--tls-client-auth=require needs --tls-cert, --tls-key and --tls-ca")
	}
	if warning, err = secret.ServerSecurity(port, src != nil, require, tokens, *s.insecure); err != nil {
		return nil, false, "", usagef("%v", err)
	}
	return src, require, warning, nil
}
