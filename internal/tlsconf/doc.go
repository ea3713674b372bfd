// Package tlsconf loads the certificate, key and CA of --tls-cert,
// --tls-key and --tls-ca once, hands out *tls.Config values that always use
// the newest ones, and reloads them on request (SIGHUP) without a restart.
//
// Why not tls.Config{Certificates: ..., RootCAs: ...}: those fields are
// read once per config, so a reload would need every listener and dialer
// rebuilt. Here the server side picks certificate and client CA per
// handshake (GetConfigForClient) and the client side presents its
// certificate (GetClientCertificate) and verifies the server against the
// current CA pool (VerifyConnection), so a reload takes effect on the next
// handshake while established connections keep serving.
//
// A reload that fails (a missing file, a key that does not match) keeps
// the previous material and returns the error: an operator's typo never
// takes a running node off the network.
package tlsconf
