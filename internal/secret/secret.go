// Package secret checks and makes the shared secrets sexton's flags take
// (the cluster token, and any role token that works the same way).
package secret

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"sexton/internal/cliflag"
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

// Tokens splits a token flag's value, a comma-separated list, into its
// tokens: the first is the one this node proves when it dials, and a
// listener accepts every one, so that a token can be rolled without
// downtime (add the new one everywhere, switch the callers, drop the
// old). Each token must pass CheckToken; an empty entry or a token listed
// twice is refused. An empty value is no token.
func Tokens(flag, value string) ([]string, error) {
	if value == "" {
		return nil, nil
	}
	var out []string
	for i, t := range strings.Split(value, ",") {
		t = strings.TrimSpace(t)
		name := flag
		if strings.Contains(value, ",") {
			name = fmt.Sprintf("%s (token %d of the list)", flag, i+1)
		}
		if t == "" {
			return nil, fmt.Errorf("%s has an empty entry: a token list is tokens separated by single commas", name)
		}
		if err := CheckToken(name, t); err != nil {
			return nil, err
		}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("%s lists the same token twice", flag)
		}
		out = append(out, t)
	}
	return out, nil
}

// Split is a token flag's value as its list of tokens, unchecked
// (Tokens checks them): the entries between commas, spaces trimmed,
// empty ones dropped.
func Split(value string) []string { return cliflag.SplitList(value) }

// First is the token a node proves from a token flag's value (Tokens):
// its first entry, or "" for none. It does not check the value.
func First(value string) string {
	first, _, _ := strings.Cut(value, ",")
	return strings.TrimSpace(first)
}
