package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"

	"sexton/api"
)

// protocolVersion is the transport wire version, agreed in the handshake.
// A peer speaking another version is refused with an error naming both.
const protocolVersion = 1

// nonceLen is the size of the server's challenge.
const nonceLen = 32

// authDomain separates the HMAC input from any other use of the token.
const authDomain = "sexton transport auth v1\x00"

// hello is the server's first frame on every connection.
type hello struct {
	V        int    `msgpack:"v"`
	Nonce    []byte `msgpack:"nonce"`
	Auth     bool   `msgpack:"auth"` // the server requires a token proof
	MaxFrame int    `msgpack:"max_frame"`
}

// authAnswer is the client's answer. MAC is empty when the client has no
// token or the server asked for none.
type authAnswer struct {
	V        int    `msgpack:"v"`
	MAC      []byte `msgpack:"mac,omitempty"`
	MaxFrame int    `msgpack:"max_frame"`
}

// welcome accepts the connection; a refusal is a welcome envelope with err.
type welcome struct {
	V int `msgpack:"v"`
}

func newNonce() ([]byte, error) {
	n := make([]byte, nonceLen)
	if _, err := rand.Read(n); err != nil {
		return nil, fmt.Errorf("generating a handshake nonce: %w", err)
	}
	return n, nil
}

// tokenMAC is HMAC-SHA256(token, domain || nonce): proof of the token that
// never reveals it and is useless for any other nonce.
func tokenMAC(token string, nonce []byte) []byte { return TokenMAC(token, authDomain, nonce) }

// TokenMAC is HMAC-SHA256(token, domain || parts...), the proof of the
// cluster token used by this package's handshake and by the master's Raft
// stream: it never reveals the token, and the domain keeps a proof made
// for one protocol (or one role in it) useless in another. Callers pass
// fixed-length parts so the concatenation is unambiguous.
func TokenMAC(token, domain string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(domain))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// verifyAnswer is the server's verdict on a client's answer: the name of
// the token of tokens the answer proves ("" when tokens is empty).
func verifyAnswer(tokens []NamedToken, nonce []byte, a *authAnswer) (string, *api.Error) {
	if a.V != protocolVersion {
		return "", errVersion(a.V)
	}
	if len(tokens) == 0 {
		return "", nil
	}
	if len(a.MAC) == 0 {
		return "", api.Errorf(api.CodeUnauthenticated, "cluster token mismatch: the client presented no cluster token and this server requires one")
	}
	// Every configured token is tried, matched or not, so the time taken
	// does not say which one a near miss was close to.
	name, ok := "", false
	for _, t := range tokens {
		if hmac.Equal(a.MAC, tokenMAC(t.Token, nonce)) && !ok {
			name, ok = t.Name, true
		}
	}
	if !ok {
		return "", api.Errorf(api.CodeUnauthenticated, "cluster token mismatch")
	}
	return name, nil
}

func errVersion(v int) *api.Error {
	return api.Errorf(api.CodeUnavailable, "peer speaks transport protocol version %d, this build speaks %d", v, protocolVersion)
}
