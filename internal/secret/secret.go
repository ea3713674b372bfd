// Package secret checks and makes the shared secrets sexton's flags take
// (the cluster token, and any role token that works the same way).
package secret

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// MinTokenLen is the least number of bytes a token has. 32 bytes of a
// random token in hex carry 128 bits, out of reach of guessing; a
// generated one (Generate) is 43 characters.
const MinTokenLen = 32

// MinTokenDistinct is the least number of distinct bytes in a token, so
// that a long run of one character or a short pattern repeated to length
// ("aaaa...", "abcabc...") is refused: hex output has up to 16, base64
// up to 64.
const MinTokenDistinct = 8

// GenerateCommand is what an operator runs for a token that passes.
const GenerateCommand = "sexton operator token generate"

// CheckToken refuses a token too short or too repetitive to be a secret,
// with an error naming flag and saying how to make one. An empty token
// means "no token" and is not checked here.
func CheckToken(flag, token string) error {
	if token == "" {
		return nil
	}
	if len(token) < MinTokenLen {
		return fmt.Errorf("%s is %d bytes, a token needs at least %d; make one with `%s` (or `openssl rand -hex 32`)", flag, len(token), MinTokenLen, GenerateCommand)
	}
	var seen [256]bool
	distinct := 0
	for i := 0; i < len(token); i++ {
		if !seen[token[i]] {
			seen[token[i]] = true
			distinct++
		}
	}
	if distinct < MinTokenDistinct {
		return fmt.Errorf("%s has only %d distinct characters, a token needs at least %d (it looks like a pattern, not a random secret); make one with `%s` (or `openssl rand -hex 32`)", flag, distinct, MinTokenDistinct, GenerateCommand)
	}
	return nil
}

// Generate returns a fresh 256-bit random token, base64url without
// padding (43 characters), which CheckToken accepts.
func Generate() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
