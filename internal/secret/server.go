package secret

import "fmt"

// ServerSecurity checks a master's or a holder's choice of TLS, client
// certificates and tokens before it starts. A weak token, or TLS that
// authenticates no client (optional client certificates and no token)
// without insecure (--insecure-tls-no-client-auth), is refused with an
// error naming the choices; what is allowed but unauthenticated comes
// back as a warning the server logs at every start. port names the
// listener at stake.
func ServerSecurity(port string, tlsOn, requireCert bool, tokens []FlagToken, insecure bool) (warning string, err error) {
	token := ""
	for _, t := range tokens {
		if _, err := Tokens(t.Flag, t.Token); err != nil {
			return "", err
		}
		if token == "" {
			token = t.Token
		}
	}
	switch {
	case tlsOn && !requireCert && token == "" && !insecure:
		return "", fmt.Errorf("TLS with --tls-client-auth optional and no token authenticates no client: anyone who reaches the %s may call every method a client may. Choose one: --tls-client-auth require (every client presents a certificate of --tls-ca), --cluster-token or the role tokens (make one with `%s`), or --insecure-tls-no-client-auth to run so on purpose", port, GenerateCommand)
	case tlsOn && !requireCert && token == "":
		return fmt.Sprintf("--insecure-tls-no-client-auth: TLS without a required client certificate and no token; anyone who reaches the %s may call every method a client may", port), nil
	case !tlsOn && token == "":
		return fmt.Sprintf("the %s is open to anyone: with neither a token nor TLS, whoever reaches it may call every method (set --cluster-token, or --tls-cert/--tls-key/--tls-ca with --tls-client-auth require)", port), nil
	}
	return "", nil
}

// FlagToken is a token and the flag that gave it, for ServerSecurity.
type FlagToken struct{ Flag, Token string }
