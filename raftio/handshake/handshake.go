package handshake

import (
	"io"
)

const (
	// Prefix opens every version's magic; a peer that sends it with
	// another version byte speaks another version of the handshake.
	Prefix = "SXRAFT\x00"
	// Version is the handshake version this build speaks.
	Version = 2
	// Magic is the 8-byte hello: Prefix and the version byte.
	Magic = Prefix + string(rune(Version))
	// NonceLen is the length of each side's random nonce.
	NonceLen = 32
	// MACLen is the length of a proof (HMAC-SHA256).
	MACLen = 32
	// MaxIDLen is the longest server id the handshake can name: ids are
	// written as a length byte and the id.
	MaxIDLen = 255
)

// AppendID appends id as a length byte and the id; id is at most
// MaxIDLen bytes (the caller checks).
func AppendID(b []byte, id string) []byte {
	return append(append(b, byte(len(id))), id...)
}

// ReadID reads a length byte and that many bytes of server id.
func ReadID(r io.Reader) (string, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return string(id), nil
}
