package secret

import (
	"strings"
	"testing"
)

// A weak token and TLS that authenticates nobody are refused; TLS without
// client certificates or tokens on purpose, and no security at all, start
// with a warning; a token or required certificates start quietly.
func TestServerSecurity(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 3)
	for _, c := range []struct {
		name                   string
		tls, require, insecure bool
		token                  string
		wantErr, wantWarn      string
	}{
		{name: "weak token", token: "short", wantErr: "--cluster-token"},
		{name: "tls, nobody authenticated", tls: true, wantErr: "authenticates no client"},
		{name: "tls, insecure on purpose", tls: true, insecure: true, wantWarn: "--insecure-tls-no-client-auth"},
		{name: "open", wantWarn: "open to anyone"},
		{name: "token", token: good},
		{name: "tls, certificates required", tls: true, require: true},
	} {
		w, err := ServerSecurity("test port", c.tls, c.require, []FlagToken{{Flag: "--cluster-token", Token: c.token}}, c.insecure)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error naming %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || (c.wantWarn == "") != (w == "") || !strings.Contains(w, c.wantWarn) {
			t.Errorf("%s: warning %q, %v; want %q", c.name, w, err, c.wantWarn)
		}
	}
}
