package secret

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Short and repetitive tokens are refused with an error naming the flag
// and the command that makes a good one; generated and hex tokens pass.
func TestCheckToken(t *testing.T) {
	for _, tok := range []string{
		"s3cret",
		strings.Repeat("x", 31),
		strings.Repeat("a", 64),
		strings.Repeat("abc", 20),
		strings.Repeat("abcdefg", 5),
	} {
		err := CheckToken("--cluster-token", tok)
		if err == nil || !strings.Contains(err.Error(), "--cluster-token") || !strings.Contains(err.Error(), GenerateCommand) {
			t.Errorf("%q: %v", tok, err)
		}
	}
	for _, tok := range []string{"", "0123456789abcdef0123456789abcdef", strings.Repeat("abcdefgh", 4)} {
		if err := CheckToken("--cluster-token", tok); err != nil {
			t.Errorf("%q refused: %v", tok, err)
		}
	}
	seen := map[string]bool{}
	for range 20 {
		tok, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw) != 32 || len(tok) != 43 {
			t.Fatalf("%q: %d bytes, %v", tok, len(raw), err)
		}
		if err := CheckToken("--cluster-token", tok); err != nil {
			t.Fatalf("a generated token is refused: %v", err)
		}
		if seen[tok] {
			t.Fatalf("%q generated twice", tok)
		}
		seen[tok] = true
	}
}

// A token flag takes a comma-separated list: each entry is checked, the
// first is the one proved, and an empty entry or a repeated token is
// refused naming the flag.
func TestTokenLists(t *testing.T) {
	a, b := "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	got, err := Tokens("--client-token", a+", "+b)
	if err != nil || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Tokens(a, b) = %q, %v", got, err)
	}
	if First(a+","+b) != a || First("") != "" {
		t.Fatalf("First: %q", First(a+","+b))
	}
	for _, bad := range []struct{ value, want string }{
		{a + ",," + b, "empty entry"},
		{a + "," + a, "same token twice"},
		{a + ",short", "token 2 of the list"},
	} {
		if _, err := Tokens("--client-token", bad.value); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "--client-token") {
			t.Errorf("Tokens(%q): %v, want an error with %q", bad.value, err, bad.want)
		}
	}
}
