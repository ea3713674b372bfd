// Package tlsfiles writes the files `sexton tls ca` and `sexton tls cert`
// make: a cluster CA (ca.crt, ca.key) and, signed by it, a node's or a
// client's certificate and key named ROLE-NAME.crt and ROLE-NAME.key,
// whose URI sexton://ROLE/NAME says who it is (internal/tlsconf makes the
// keys and certificates and reads them back). Keys are written with mode
// 0600, and no file is ever overwritten: issuing never replaces a key or
// certificate in use.
package tlsfiles
